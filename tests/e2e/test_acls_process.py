"""ACLs at process level on the simulator: ADD sends them, CHECK holds the endpoint to exactly
them, DEL leaves nothing, an HNS too old for a rule is a config error before any IP is taken."""

from __future__ import annotations

import pytest

from hnsnode import creates

ISOLATE = [
    {"action": "allow", "direction": "in", "protocol": "tcp", "localPorts": 8080, "priority": 200},
    {"action": "block", "direction": "in", "priority": 65000},
    {"action": "block", "direction": "out", "priority": 65000},
]

pytestmark = pytest.mark.node("win-bridge", "win-overlay")  # each test on both plugins' flanneld networks


def acl_policies(doc: dict) -> list[dict]:
    return [p for p in doc["Policies"] if p["Type"] == "ACL"]


@pytest.mark.parametrize("api", ["v1", "v2"])
def test_add_check_del_with_acls_and_port_mapping_acls(node, api):
    conf = node.conf(
        acls=ISOLATE,
        allowPortMappingAcls=True,
        capabilities={"portMappings": True},
        runtimeConfig={"portMappings": [{"hostPort": 30080, "containerPort": 80, "protocol": "udp"}]},
    )
    netns = node.sandbox(api, "pod1")
    result = node.add(conf, "pod1", netns)
    [doc] = creates(node.journal())
    sent = acl_policies(doc)
    v2 = api == "v2"
    first = {
        "Protocols": "6",
        "Action": "Allow",
        "Direction": "In",
        "LocalPorts": "8080",
        "RuleType": "Switch",
        "Priority": 200,
    }
    mapped = {
        "Protocols": "17",
        "Action": "Allow",
        "Direction": "In",
        "LocalPorts": "80",
        "RuleType": "Switch",
        "Priority": 1000,
    }
    assert sent[0] == ({"Type": "ACL", "Settings": first} if v2 else {"Type": "ACL", **first})
    assert sent[-1] == ({"Type": "ACL", "Settings": mapped} if v2 else {"Type": "ACL", **mapped})
    assert len(sent) == 4
    assert node.run("CHECK", {**conf, "prevResult": result}, "pod1", netns).ok
    # The config lost a rule: the endpoint still filters with it, and CHECK says so.
    fewer = {**conf, "acls": ISOLATE[:2], "prevResult": result}
    node.run("CHECK", fewer, "pod1", netns).failed(101, "carries ACLs the config does not ask for")
    # The config gained one: the endpoint lacks it.
    more = {
        **conf,
        "acls": ISOLATE + [{"action": "allow", "direction": "out", "protocol": "udp", "remotePorts": 53}],
        "prevResult": result,
    }
    node.run("CHECK", more, "pod1", netns).failed(101, "lacks the policies")
    assert node.run("DEL", conf, "pod1", netns).ok
    node.assert_clean("pod1")


def test_an_hns_without_port_range_acls_is_told_before_an_ip_is_taken(node):
    """HNS 7.1 (Windows 1709, V1 only) lacks ACL port ranges; HNS would answer a bare 0x803B000D."""
    conf = node.conf(
        apiVersion=1, acls=[{"action": "allow", "direction": "in", "protocol": "tcp", "localPorts": "8000-8080"}]
    )
    run = node.run("ADD", conf, "pod1", node.sandbox("v1", "pod1"), LIBHNS_SIM_VERSION="7.1")
    run.failed(7, "port ranges", "7.2")
    assert node.ipam_calls() == [] and not creates(node.journal())


@pytest.mark.parametrize(
    "conf_change,field",
    [
        (
            {"acls": [{"action": "allow", "direction": "in", "protocol": "icmpv4", "localPorts": 80}]},
            "acls[0].localPorts",
        ),
        ({"acls": [{"action": "allow", "direction": "in", "priority": 7}]}, "acls[0].priority"),
        (
            {"acls": [{"action": "allow", "direction": "in", "remoteAddresses": "10.0.0.0/33"}]},
            "acls[0].remoteAddresses",
        ),
        ({"acls": {"action": "allow"}}, "acls"),
        ({"allowPortMappingAcls": "yes"}, "allowPortMappingAcls"),
    ],
)
def test_bad_acl_config_is_code_7_and_nothing_runs(node, conf_change, field):
    node.assert_bad_inputs([(conf_change, field)])


def test_a_raw_acl_policy_in_the_wrong_casing_is_refused_by_hns_as_hns_does(node):
    """Raw policies are sent as written; the simulator refuses what HNS refuses (0x803B000D)."""
    raw = {"name": "EndpointPolicy", "value": {"Type": "ACL", "Settings": {"Action": "allow", "Direction": "In"}}}
    run = node.run("ADD", node.conf(policies=[raw]), "pod1", node.sandbox("v2", "pod1"))
    run.failed(100, "0x803B000D")
    node.assert_clean("pod1")
