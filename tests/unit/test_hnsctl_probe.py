"""``hnsctl probe``: a packet through the simulated node's endpoint ACLs, as NetworkPolicy put them."""

from __future__ import annotations

import io
import json

import pytest

from libhns.sim import Simulator
from plugins.netpol import model, resources, translate
from plugins.winnet.acls import POLICY_PRIORITY
from plugins.winnet.policies import V1, V2
from test_netpol_model import IP, NAMESPACES, PODS, policy
from test_sim import create, create_ep, endpoint, l2bridge, v1
from tools.hnsctl import main

ALLOW_B_TO_A = policy(
    "x/p",
    {"matchLabels": {"pod": "a"}},
    ingress=[{"from": [{"podSelector": {"matchLabels": {"pod": "b"}}}], "ports": [{"protocol": "TCP", "port": 80}]}],
)


@pytest.fixture
def node(tmp_path):
    """node-0 of the model tests' cluster, its pod x/a behind ALLOW_B_TO_A; x/b is on node-1."""
    sim = Simulator(tmp_path / "hns")
    net = create(sim, "Network", l2bridge(prefix="10.244.0.0/24", gw="10.244.0.1"))
    c = resources.read(NAMESPACES, PODS, [ALLOW_B_TO_A])
    [access] = model.node_access(c, "node-0")
    acls = translate.endpoint_acls(access, ["10.127.130.36"], V2)
    create_ep(sim, net["ID"], endpoint("x-a", IP["x/a"], Policies=acls))
    return {"LIBHNS_BACKEND": "sim", "LIBHNS_SIM_DIR": str(tmp_path / "hns")}


def hnsctl(env, *argv):
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out, err, env)
    return code, out.getvalue(), err.getvalue()


def test_an_endpoint_made_through_hnscall_with_v1_acls_is_walked_alike(tmp_path):
    sim = Simulator(tmp_path / "hns")
    net = create(sim, "Network", l2bridge(prefix="10.244.0.0/24", gw="10.244.0.1"))
    [access] = model.node_access(resources.read(NAMESPACES, PODS, [ALLOW_B_TO_A]), "node-0")
    policies = translate.endpoint_acls(access, ["10.127.130.36"], V1)
    body = {"Name": "x-a", "VirtualNetwork": net["ID"], "IPAddress": IP["x/a"], "Policies": policies}
    assert v1(sim, "POST", "/endpoints/", body)["Success"]
    env = {"LIBHNS_BACKEND": "sim", "LIBHNS_SIM_DIR": str(tmp_path / "hns")}
    allowed = json.loads(hnsctl(env, "probe", IP["x/b"], f"{IP['x/a']}:80/tcp", "-o", "json")[1])
    denied = json.loads(hnsctl(env, "probe", IP["x/b"], f"{IP['x/a']}:81/tcp", "-o", "json")[1])
    assert allowed["allowed"] and allowed["decided_by"]["LocalPorts"] == "80"
    assert not denied["allowed"] and denied["decided_by"]["Action"] == "Block"


def test_json_gives_the_verdict_and_the_deciding_rule(node):
    code, out, _ = hnsctl(node, "probe", IP["x/b"], f"{IP['x/a']}:80/tcp", "-o", "json")
    verdict = json.loads(out)
    assert code == 0 and verdict["allowed"] is True
    assert (
        verdict["decided_by"]["Priority"] == POLICY_PRIORITY and verdict["decided_by"]["RemoteAddresses"] == IP["x/b"]
    )
    code, out, _ = hnsctl(node, "probe", IP["y/a"], f"{IP['x/a']}:80/tcp", "-o", "json")
    assert json.loads(out) == {
        "allowed": False,
        "decided_by": {"Action": "Block", "Direction": "In", "RuleType": "Switch", "Priority": 4000},
    }
    code, out, _ = hnsctl(node, "probe", IP["y/a"], f"{IP['x/b']}:80/udp", "-o", "json")
    assert json.loads(out) == {"allowed": True, "decided_by": None}  # no endpoint of this node


def test_the_reply_of_an_allowed_flow_passes(node):
    assert json.loads(hnsctl(node, "probe", f"{IP['x/b']}:50000", f"{IP['x/a']}:80/tcp", "-o", "json")[1])["allowed"]
    reply = json.loads(hnsctl(node, "probe", f"{IP['x/a']}:80", f"{IP['x/b']}:50000/tcp", "-o", "json")[1])
    assert reply["allowed"] and reply["decided_by"]["Priority"] == POLICY_PRIORITY
    # x/a's own new flow to x/b passes its open egress, by the endpoint's allow-all
    new = json.loads(hnsctl(node, "probe", f"{IP['x/a']}:80", f"{IP['x/b']}:50001/tcp", "-o", "json")[1])
    assert new["allowed"] and new["decided_by"]["Priority"] == 65500


def test_the_table_names_each_endpoint_and_rule(node):
    code, out, _ = hnsctl(node, "probe", IP["y/a"], f"{IP['x/a']}:80/tcp")
    assert code == 0
    first, step = out.splitlines()
    assert first == f"denied: {IP['y/a']}:49152 -> {IP['x/a']}:80 protocol 6"
    assert " In: denies (Switch rule, priority 4000): " in step and '"Action": "Block"' in step


def test_the_node_reaches_its_pods(node):
    code, out, _ = hnsctl(node, "probe", "10.127.130.36", f"{IP['x/a']}:10250/tcp", "-o", "json")
    assert json.loads(out)["allowed"]


def test_an_ambiguous_rule_set_is_one_line_and_status_1(tmp_path):
    sim = Simulator(tmp_path / "hns")
    net = create(sim, "Network", l2bridge())
    rules = [{"Action": a, "Direction": "In", "Priority": 300} for a in ("Allow", "Block")]
    create_ep(sim, net["ID"], endpoint("a", "10.244.1.5", Policies=[{"Type": "ACL", "Settings": r} for r in rules]))
    env = {"LIBHNS_BACKEND": "sim", "LIBHNS_SIM_DIR": str(tmp_path / "hns")}
    code, out, err = hnsctl(env, "probe", "10.0.0.1", "10.244.1.5:80/tcp")
    assert code == 1 and out == ""
    assert err.count("\n") == 1 and "tie-break is undocumented" in err


def test_on_real_hns_it_says_it_cannot_and_why(node):
    code, out, err = hnsctl({**node, "LIBHNS_BACKEND": "hcn"}, "probe", "10.0.0.1", "10.0.0.2:80/tcp")
    assert code == 2 and out == "" and "only on the simulator" in err and "vfpctrl" in err


@pytest.mark.parametrize(
    "argv,text",
    [
        (["nope", "10.0.0.2:80/tcp"], "not an address"),
        (["10.0.0.1", "10.0.0.2/tcp"], "give the port"),
        (["10.0.0.1", "10.0.0.2:80/sctpx"], "not tcp, udp"),
        (["10.0.0.1:0", "10.0.0.2:80/tcp"], "not a port"),
    ],
)
def test_bad_arguments_are_one_line_and_status_2(node, argv, text):
    code, out, err = hnsctl(node, "probe", *argv)
    assert code == 2 and out == "" and text in err
