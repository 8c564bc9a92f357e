"""Protected from the first packet, at process level on the simulator: an ADD on a node whose
NetworkPolicy agent left its state creates the endpoint with the pod's rules in the same HNS
calls as without it; CHECK accepts the agent's ACLs; the agent's first sync then adds only what
ADD could not know (the pod's own address)."""

from __future__ import annotations

import pytest

from hnsnode import creates
from plugins.netpol import model, resources
from plugins.winnet import aclcompare as AC
from plugins.winnet import netpolstate
from plugins.winnet.hnsapi import open_api
from tools.wincni.netpol import plan as P
from tools.wincni.netpol import state
from tools.wincni.netpol.node_endpoints import NodeEndpoints

NODE = "n1"
NODE_IPS = ["10.127.0.4"]
POLICY = {
    "metadata": {"namespace": "app", "name": "deny-in"},
    "spec": {"podSelector": {}, "policyTypes": ["Ingress"]},
}

pytestmark = pytest.mark.node("win-bridge")


def _pod_args(name: str) -> dict:
    return {"CNI_ARGS": f"IgnoreUnknown=1;K8S_POD_NAMESPACE=app;K8S_POD_NAME={name}"}


def _ops(calls: list[dict]) -> list[str]:
    return [c["op"] + (" " + c["method"] if c.get("method") else "") for c in calls]


@pytest.mark.parametrize("api", ["v2", "v1"])
def test_an_add_puts_the_rules_on_in_the_same_calls_and_the_agent_completes_them(node, tmp_path, api):
    conf = node.conf()
    path = tmp_path / "netpol" / "state.json"
    cluster = resources.read([{"metadata": {"name": "app", "labels": {}}}], [], [POLICY])
    state.StateFile(str(path)).write(state.document(cluster, NODE, NODE_IPS))

    plain, _ = node.add_del_calls(conf, "plain", api)
    netns = node.sandbox(api, "pod1")
    node.journal()
    result = node.add(conf, "pod1", netns, **_pod_args("pod1"), **{netpolstate.ENV: str(path)})
    calls = node.journal()
    assert _ops(calls) == _ops(plain)  # no HNS call more than an ADD without the agent
    [doc] = creates(calls)
    acls = [p for p in doc["Policies"] if p["Type"] == "ACL"]
    assert acls and {AC.canonical(a)[1:3] for a in acls if AC.priority(a) == 4000} == {("block", "in")}

    ip = result["ips"][0]["address"].split("/")[0]
    pod = {"metadata": {"namespace": "app", "name": "pod1"}, "spec": {"nodeName": NODE}, "status": {"podIP": ip}}
    cluster = resources.read([{"metadata": {"name": "app", "labels": {}}}], [pod], [POLICY])
    version = 2 if api == "v2" else 1
    agent = NodeEndpoints(open_api(version, node.env, None, "x", netns), node.network, NODE_IPS)
    steps, failures = agent.converge(P.by_address(model.node_access(cluster, NODE)))
    assert not failures and [s.action for s in steps] == [P.APPLY]  # the own-address allow only
    assert len(steps[0].acls) == len(acls) + 1 and any(ip in str(a) for a in steps[0].acls)
    assert node.run("CHECK", {**conf, "prevResult": result}, "pod1", netns).ok


def test_a_node_without_the_agents_state_gets_no_acl(node, tmp_path):
    conf = node.conf()
    netns = node.sandbox("v2", "pod1")
    node.journal()
    node.add(conf, "pod1", netns, **_pod_args("pod1"), **{netpolstate.ENV: str(tmp_path / "none.json")})
    [doc] = creates(node.journal())
    assert not [p for p in doc.get("Policies", []) if p["Type"] == "ACL"]
