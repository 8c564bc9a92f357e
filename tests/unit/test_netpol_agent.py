"""The NetworkPolicy agent's core on a simulated node, HNS calls counted through the journal:
compare before applying (an unchanged endpoint, an event that changes nothing for this node, an
agent restart on an unchanged node: no call), one call per endpoint whose rules changed, only
our pods' endpoints touched, and convergence after an HNS restart, a pod re-created and drift."""

from __future__ import annotations

import ipaddress
import json

import pytest

from plugins.netpol import model, resources
from plugins.winnet import aclcompare as AC
from plugins.winnet.acls import AclRule
from plugins.winnet.hnsapi import open_api
from plugins.winnet.policies import V1, V2
from tools.wincni.netpol import plan as P
from tools.wincni.netpol import wanted as W
from tools.wincni.netpol.node_endpoints import NodeEndpoints

NETNS = "8C5E9A5B-1E5F-4C3E-9D4C-5F1E2A3B4C5D"
NODE, NODE_IPS = "n1", ["10.127.0.4", "10.244.1.2"]
NAT = {"Type": "OutBoundNAT", "Settings": {"Exceptions": ["10.244.0.0/16"]}}
CONFIG_ACL = AclRule("Block", "Out", remote_addresses="169.254.169.254/32", priority=100, rule_type="Switch")
PORT_ACL = AclRule("Allow", "In", 6, local_ports="8080", priority=1000, rule_type="Switch")
POD_IPS = {"db": "10.244.1.5", "web": "10.244.1.6"}


def _l2bridge() -> dict:
    subnet = {
        "IpAddressPrefix": "10.244.1.0/24",
        "Routes": [{"NextHop": "10.244.1.1", "DestinationPrefix": "0.0.0.0/0"}],
    }
    return {
        "Name": "cbr0",
        "Type": "L2Bridge",
        "Flags": 8,
        "Ipams": [{"Type": "Static", "Subnets": [subnet]}],
    }  # EnableNonPersistent, as flanneld makes it


def _pod(name: str, ip: str, node: str = NODE, ns: str = "app", **labels: str) -> dict:
    return {
        "metadata": {"namespace": ns, "name": name, "labels": labels},
        "spec": {"nodeName": node, "containers": [{"ports": [{"name": "pg", "containerPort": 5432}]}]},
        "status": {"podIP": ip},
    }


def _policy(name: str, ns: str = "app", selector: dict | None = None, peer: dict | None = None) -> dict:
    ingress = [{"from": [{"podSelector": peer}], "ports": [{"protocol": "TCP", "port": 5432}]}] if peer else []
    return {
        "metadata": {"namespace": ns, "name": name},
        "spec": {"podSelector": {"matchLabels": selector or {}}, "policyTypes": ["Ingress"], "ingress": ingress},
    }


PODS = [
    _pod("db", POD_IPS["db"], role="db"),
    _pod("web", POD_IPS["web"], role="web"),
    _pod("far", "10.244.2.9", node="n2", role="web"),
]
DB_ONLY_FROM_WEB = _policy("db", selector={"role": "db"}, peer={"matchLabels": {"role": "web"}})


def accesses(pods=PODS, policies=(DB_ONLY_FROM_WEB,)) -> dict:
    namespaces = [{"metadata": {"name": n, "labels": {}}} for n in ("app", "other")]
    cluster = resources.read(namespaces, list(pods), list(policies))
    return P.by_address(model.node_access(cluster, NODE))


class Node:
    """A simulated node: cbr0 with two pod endpoints (db holds OutBoundNAT, a config ACL and a
    port-mapping ACL), flanneld's host endpoint, kube-proxy's remote endpoint and source VIP."""

    def __init__(self, tmp_path, version: int) -> None:
        self.version = version
        self.journal = tmp_path / "journal"
        self.env = {
            "LIBHNS_BACKEND": "sim",
            "LIBHNS_SIM_DIR": str(tmp_path / "hns"),
            "LIBHNS_JOURNAL": str(self.journal),
        }
        self.hcn = open_api(2, self.env, None, "x", NETNS).hcn
        self.make()

    def make(self) -> None:
        net = self.hcn.create_network(_l2bridge())
        self.net = net.id
        own = [NAT, CONFIG_ACL.render(V2), PORT_ACL.render(V2)]
        self.eps = {
            "db": self.pod_endpoint("c-db", POD_IPS["db"], own),
            "web": self.pod_endpoint("c-web", POD_IPS["web"], [NAT]),
            "flanneld": self.endpoint("cbr0_ep", "10.244.1.2"),
            "remote": self.endpoint(
                "",
                "10.244.2.9",
                Flags=1,
                Policies=[{"Type": "ProviderAddress", "Settings": {"ProviderAddress": "10.127.0.5"}}],
            ),
            "source-vip": self.endpoint("", "10.244.1.3"),
        }
        self.journal.write_text("")

    def endpoint(self, name: str, ip: str, **doc) -> str:
        return self.hcn.create_endpoint(self.net, {"Name": name, "IpConfigurations": [{"IpAddress": ip}], **doc}).id

    def pod_endpoint(self, sandbox: str, ip: str, policies: list) -> str:
        return self.endpoint(f"{sandbox}_cbr0", ip, Policies=policies)

    def agent(self) -> NodeEndpoints:
        api = open_api(self.version, self.env, None, "x", NETNS if self.version == 2 else "none")
        return NodeEndpoints(api, "cbr0", NODE_IPS)

    def calls(self, changes_only: bool = True) -> list[dict]:
        lines = [json.loads(x) for x in self.journal.read_text().splitlines()]
        self.journal.write_text("")
        if not changes_only:
            return lines
        return [c for c in lines if c["op"].startswith("HcnModify") or (c["op"] == "HNSCall" and c["method"] == "POST")]

    def policies(self, which: str) -> list[dict]:
        return self.hcn.get_endpoint(self.eps[which]).policies or []

    def acls(self, which: str) -> list[dict]:
        return [p for p in self.policies(which) if AC.is_acl(p)]


@pytest.fixture(params=[2, 1], ids=["hcn", "hnscall"])
def node(request, tmp_path) -> Node:
    return Node(tmp_path, request.param)


def test_the_first_sync_sets_the_isolated_pod_only_and_keeps_its_own_policies(node):
    others = {k: node.policies(k) for k in ("web", "flanneld", "remote", "source-vip")}
    steps, failures = node.agent().converge(accesses())
    assert not failures
    assert {s.held.name: s.action for s in steps} == {"c-db_cbr0": P.APPLY, "c-web_cbr0": P.IN_SYNC}
    assert len(node.calls()) == 1
    held = node.policies("db")
    assert held[0] == NAT and AC.same(held[1:3], [CONFIG_ACL.render(V2), PORT_ACL.render(V2)])
    assert any(AC.priority(a) == 4000 for a in node.acls("db"))  # isolated: ends in Block
    assert {k: node.policies(k) for k in others} == others  # web, flanneld's, kube-proxy's: untouched


def test_nothing_changed_means_no_hns_call_at_all(node):
    agent = node.agent()
    agent.converge(accesses())
    node.calls()
    steps, _ = agent.converge(accesses())
    assert {s.action for s in steps} == {P.IN_SYNC}
    assert node.calls(changes_only=False) == []


def test_an_agent_restart_on_an_unchanged_node_sets_nothing(node):
    """Fails when compare-before-apply goes: the new agent would re-send db's rules."""
    node.agent().converge(accesses())
    node.calls()
    steps, _ = node.agent().converge(accesses())
    assert [s.action for s in steps] == [P.IN_SYNC, P.IN_SYNC]
    assert node.calls() == []


@pytest.mark.parametrize(
    "pods, policies",
    [
        (
            PODS[:2] + [_pod("far", "10.244.2.9", node="n2", role="web", tier="x")],
            [DB_ONLY_FROM_WEB],
        ),  # a label no one selects
        (PODS, [DB_ONLY_FROM_WEB, _policy("elsewhere", ns="other")]),  # a policy of an empty namespace
        (PODS + [_pod("new", "10.244.3.7", node="n3", role="x")], [DB_ONLY_FROM_WEB]),  # a pod on another node
    ],
    ids=["far-label", "other-namespace", "far-pod"],
)
def test_an_event_that_changes_nothing_here_makes_no_hns_call(node, pods, policies):
    agent = node.agent()
    agent.converge(accesses())
    node.calls()
    agent.converge(accesses(pods, policies))
    assert node.calls(changes_only=False) == []


def test_a_change_costs_one_call_per_endpoint_whose_rules_changed(node):
    agent = node.agent()
    agent.converge(accesses())
    node.calls()
    wider = _policy("db", selector={"role": "db"}, peer={})
    steps, _ = agent.converge(accesses(policies=[wider]))
    assert [s.action for s in steps] == [P.APPLY, P.IN_SYNC]
    assert len(node.calls(changes_only=False)) == (3 if node.version == 2 else 1)  # open, modify, close
    agent.converge(accesses(policies=[]))  # the policy goes: db keeps only its own ACLs
    assert AC.same(node.acls("db"), [CONFIG_ACL.render(V2), PORT_ACL.render(V2)]) and node.policies("db")[0] == NAT


def test_a_pod_without_own_acls_is_cleared_when_its_last_policy_goes(node):
    agent = node.agent()
    everyone = _policy("all", selector={})
    agent.converge(accesses(policies=[everyone]))
    assert node.acls("web")
    node.calls()
    agent.converge(accesses(policies=[]))
    assert node.acls("web") == [] and node.policies("web") == [NAT]
    assert len(node.calls()) == 2  # db and web
    agent.converge(accesses(policies=[]))
    assert node.calls() == []


def test_after_an_hns_restart_and_the_pods_re_created_every_rule_is_back_once(node, tmp_path):
    from libhns.sim import Simulator

    agent = node.agent()
    agent.converge(accesses())
    want = node.acls("db")
    Simulator(tmp_path / "hns").restart()
    agent.converge(accesses())  # the endpoints are gone: nothing to set, nothing fails
    node.make()  # flanneld makes the network again, the runtime re-creates the pods
    agent.refresh()  # the periodic resync: nothing in the API server changed
    steps, failures = agent.converge(accesses())
    assert not failures and [s.action for s in steps] == [P.APPLY, P.IN_SYNC]
    assert node.acls("db") == want


def test_a_re_created_pod_is_found_and_set_without_a_resync(node):
    agent = node.agent()
    agent.converge(accesses())
    want = node.acls("db")
    node.hcn.delete_endpoint(node.eps["db"])
    node.eps["db"] = node.pod_endpoint("c-db2", "10.244.1.7", [NAT, CONFIG_ACL.render(V2), PORT_ACL.render(V2)])
    node.calls()
    moved = [_pod("db", "10.244.1.7", role="db"), *PODS[1:]]
    steps, failures = agent.converge(accesses(pods=moved))
    assert not failures and [(s.held.name, s.action) for s in steps] == [
        ("c-db2_cbr0", P.APPLY),
        ("c-web_cbr0", P.IN_SYNC),
    ]
    assert len(node.calls()) == 1 and len(node.acls("db")) == len(want)


def test_drift_is_repaired_at_the_next_read_without_a_duplicate(node):
    agent = node.agent()
    agent.converge(accesses())
    want = node.acls("db")
    node.hcn.modify_endpoint(node.eps["db"], _update(want + want[-1:]))  # someone added a duplicate
    node.calls()
    agent.converge(accesses())
    assert node.calls() == []  # the agent trusts what it set until it reads again
    agent.refresh()
    agent.converge(accesses())
    assert node.acls("db") == want and len(node.calls()) == 1


def test_a_pod_the_api_server_has_not_shown_yet_is_left_as_its_add_made_it(node):
    steps, _ = node.agent().converge(accesses(pods=PODS[1:]))
    assert {s.held.name: s.action for s in steps}["c-db_cbr0"] == P.NO_POD


def test_an_endpoint_gone_between_read_and_apply_is_a_failure_read_again(node):
    agent = node.agent()
    agent.converge(accesses())
    node.hcn.delete_endpoint(node.eps["db"])
    wider = [_policy("db", selector={"role": "db"}, peer={})]
    steps, failures = agent.converge(accesses(policies=wider))
    assert [f.endpoint for f in failures] == [node.eps["db"]] and not agent.read
    steps, failures = agent.converge(accesses(policies=wider))
    assert not failures and [s.held.name for s in steps] == ["c-web_cbr0"]


def _update(acls: list[dict]) -> dict:
    from libhns.client import policy_request

    return policy_request("Update", acls)


# ---------------------------------------------------------------- pure


def test_the_same_rules_in_another_spelling_are_the_same():
    rule = AclRule("Allow", "In", 6, local_ports="80,443", remote_addresses="10.0.0.0/8,10.1.0.0/16", priority=3000)
    v2 = rule.render(V2)
    respelt = {"type": "ACL", "settings": {k.lower(): v for k, v in v2["Settings"].items()}}
    respelt["settings"]["localports"] = "443, 80"
    respelt["settings"]["protocols"] = 6
    assert AC.same([v2], [respelt]) and AC.same([v2], [rule.render(V1)])
    assert not AC.same([v2], [v2, v2])


def test_a_pod_no_policy_isolates_wants_only_its_own_acls():
    pod = resources.Pod("app", "p", {}, ipaddress.ip_address("10.244.1.5"), NODE, ())
    open_access = model.Access(pod, model.OPEN, model.OPEN, ())
    held = [NAT, PORT_ACL.render(V2), AclRule("Allow", "In", priority=65500).render(V2)]
    assert W.wanted(held, open_access, NODE_IPS, V2) == [PORT_ACL.render(V2)]


def test_a_read_of_the_node_costs_as_many_calls_whatever_its_pods(node):
    """One listing of the endpoints (HNSCall's, under either API), never an open, a query and a
    close per endpoint: the resync's read at 2 pods and at 12 makes the same calls."""
    agent = node.agent()
    agent.refresh()  # HCN keeps the network's handle open to the next read, which closes it
    node.calls()
    agent.refresh()
    few = [c["op"] for c in node.calls(changes_only=False)]
    for i in range(10):
        node.pod_endpoint(f"c-more{i}", f"10.244.1.{50 + i}", [NAT])
    node.calls()
    agent.refresh()
    assert [c["op"] for c in node.calls(changes_only=False)] == few
    assert len(agent.held) == 12


def test_an_endpoint_the_survey_showed_in_v1_is_read_again_and_keeps_its_other_policies(node):
    """Under HCN the survey is HNSCall's view: the endpoint to change is read through HCN first,
    so the update carries its own policies as HCN holds them."""
    agent = node.agent()
    before = [p for p in node.policies("db") if not W.is_acl(p)]
    node.calls()
    agent.converge(accesses())
    calls = node.calls(changes_only=False)
    reads = [c["op"] for c in calls if c["op"].startswith("HcnQueryEndpoint")]
    assert reads == (["HcnQueryEndpointProperties"] if node.version == 2 else [])
    assert [p for p in node.policies("db") if not W.is_acl(p)] == before
