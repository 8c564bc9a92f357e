"""libhns.sim.aclwalk: the simulator's ACL walk, rule by rule, its flows, and Simulator.probe."""

from __future__ import annotations

import json

import pytest

from libhns.errors import SimulatorLimit
from libhns.sim import Simulator, aclwalk
from libhns.sim.aclwalk import decide
from test_sim import create, create_ep, endpoint, l2bridge

POD, PEER = ("10.244.1.5", 80), ("10.244.2.7", 49152)
TCP, UDP, ICMP = 6, 17, 1
HOST_ALLOW = {"Action": "Allow", "Direction": "In", "RuleType": "Host", "Priority": 65500}


def acl(action: str = "Allow", direction: str = "In", **settings) -> dict:
    return {"Action": action, "Direction": direction, "RuleType": "Switch", **settings}


def inbound(rules, protocol=TCP, local=POD, remote=PEER):
    return decide(rules, "In", local, remote, protocol)


def test_no_acl_allows_all():
    d = inbound([])
    assert (d.allowed, d.rule) == (True, None)


def test_lower_priority_first_and_the_first_match_ends_the_walk():
    block = acl("Block", Priority=100, RemoteAddresses="10.244.2.0/24")
    allow = acl(Priority=200)
    d = inbound([allow, block, HOST_ALLOW])
    assert (d.allowed, d.rule) == (False, block)
    d = inbound([allow, block, HOST_ALLOW], remote=("10.244.3.1", 1))
    assert (d.allowed, d.rule) == (True, allow)


def test_what_no_rule_allows_is_denied_once_there_is_an_acl():
    d = inbound([acl(Priority=200, LocalPorts="443"), HOST_ALLOW])
    assert (d.allowed, d.rule) == (False, None)
    assert "no Switch rule" in d.why


def test_switch_and_host_groups_both_decide():
    assert not inbound([acl(Priority=200)]).allowed  # no Host rule: the Host group denies
    assert inbound([acl(Priority=200), HOST_ALLOW]).allowed
    host_block = {**HOST_ALLOW, "Action": "Block", "Priority": 100}
    d = inbound([acl(Priority=200), host_block])
    assert (d.allowed, d.rule) == (False, host_block)


def test_absent_rule_type_is_switch_and_absent_priority_is_zero():
    first = {"Action": "Block", "Direction": "In"}
    d = inbound([acl(Priority=100), first, HOST_ALLOW])
    assert (d.allowed, d.rule) == (False, first)


@pytest.mark.parametrize(
    "fields,packet,hit",
    [
        ({"Protocols": "6"}, (TCP, POD, PEER), True),
        ({"Protocols": "6"}, (UDP, POD, PEER), False),
        ({"Protocols": "6,17"}, (UDP, POD, PEER), True),
        ({"Protocols": "256"}, (ICMP, POD, PEER), True),
        ({"Protocols": "6", "LocalPorts": "80"}, (TCP, POD, PEER), True),
        ({"Protocols": "6", "LocalPorts": "81,8000-8080"}, (TCP, ("10.244.1.5", 8001), PEER), True),
        ({"Protocols": "6", "LocalPorts": "81,8000-8080"}, (TCP, POD, PEER), False),
        ({"LocalPorts": "80"}, (ICMP, POD, PEER), False),  # ports match TCP and UDP only
        ({"RemotePorts": "49152"}, (TCP, POD, PEER), True),
        ({"RemoteAddresses": "10.244.2.7"}, (TCP, POD, PEER), True),
        ({"RemoteAddresses": "10.0.0.1,10.244.0.0/16"}, (TCP, POD, PEER), True),
        ({"RemoteAddresses": "10.244.1.5"}, (TCP, POD, PEER), False),  # remote is the peer
        ({"LocalAddresses": "10.244.1.5"}, (TCP, POD, PEER), True),
        ({"RemoteAddresses": "fd00::/8"}, (TCP, POD, PEER), False),
    ],
)
def test_each_field_matches_as_hns_reads_it(fields, packet, hit):
    protocol, local, remote = packet
    assert aclwalk.matches(acl(**fields), local, remote, protocol) is hit


def test_v1_documents_and_their_older_spellings():
    doc = {
        "Policies": [
            {"Type": "ACL", "Action": "Allow", "Direction": "Out", "Protocol": 17, "RemotePort": 53, "Priority": 300}
        ]
    }
    [rule] = aclwalk.acl_rules(doc)
    assert aclwalk.matches(rule, POD, ("10.96.0.10", 53), UDP)
    assert not aclwalk.matches(rule, POD, ("10.96.0.10", 53), TCP)
    assert not aclwalk.matches(rule, POD, ("10.96.0.10", 54), UDP)


def test_acl_rules_skip_other_policies():
    doc = {"Policies": [{"Type": "OutBoundNAT", "Settings": {}}, {"Type": "ACL", "Settings": acl(Priority=1)}]}
    assert aclwalk.acl_rules(doc) == [acl(Priority=1)]


def test_equal_priority_different_actions_overlapping_is_refused_naming_both():
    allow, block = acl(Priority=300, Protocols="6"), acl("Block", Priority=300)
    with pytest.raises(SimulatorLimit) as err:
        inbound([allow, block, HOST_ALLOW])
    assert str(allow) in str(err.value) and str(block) in str(err.value)
    # not overlapping for this packet: no question
    assert not inbound([allow, block, HOST_ALLOW], protocol=UDP).allowed
    # equal priority, same action: no question either
    assert inbound([allow, acl(Priority=300), HOST_ALLOW]).allowed


def test_a_reply_of_an_allowed_flow_passes_until_it_idles_out():
    doc = {
        "Policies": [
            {"Type": "ACL", "Settings": s}
            for s in (acl(Priority=200, Protocols="6", LocalPorts="80"), HOST_ALLOW, {**HOST_ALLOW, "Direction": "Out"})
        ]
    }
    node = [("EP", ["10.244.1.5"], doc)]
    steps, flows = aclwalk.walk(node, [], PEER, POD, TCP, now=1000)
    assert aclwalk.verdict(steps)[0]
    # the reply leaves through Out, where no Switch rule allows anything
    steps, flows = aclwalk.walk(node, flows, POD, PEER, TCP, now=1000 + aclwalk.FLOW_TTL - 1)
    assert aclwalk.verdict(steps) == (True, doc["Policies"][0]["Settings"])
    assert "stateful" in steps[0].decision.why
    steps, _ = aclwalk.walk(node, flows, POD, PEER, TCP, now=1000 + 2 * aclwalk.FLOW_TTL)
    assert aclwalk.verdict(steps) == (False, None)
    # a new flow the other way is not a reply
    steps, _ = aclwalk.walk(node, [], POD, PEER, TCP, now=1000)
    assert not aclwalk.verdict(steps)[0]


def test_probe_walks_source_out_then_destination_in(tmp_path):
    sim = Simulator(tmp_path / "hns")
    net = create(sim, "Network", l2bridge())
    rules = [acl("Block", "Out", Priority=4000), {**HOST_ALLOW, "Direction": "Out"}, acl(Priority=65500), HOST_ALLOW]
    a = create_ep(sim, net["ID"], endpoint("a", "10.244.1.5", Policies=[{"Type": "ACL", "Settings": r} for r in rules]))
    create_ep(sim, net["ID"], endpoint("b", "10.244.1.6"))
    steps, allowed, rule = sim.probe(("10.244.1.5", 50000), ("10.244.1.6", 80), TCP, now=1)
    assert (allowed, rule) == (False, rules[0])
    assert [(s.endpoint, s.direction) for s in steps] == [(a["ID"], "Out")]
    steps, allowed, rule = sim.probe(("10.244.1.6", 50000), ("10.244.1.5", 80), TCP, now=1)
    assert (allowed, rule) == (True, rules[2])
    steps, allowed, rule = sim.probe(("10.244.1.6", 1), ("10.9.9.9", 80), TCP, now=1)
    assert (allowed, rule) == (True, None)
    # the allowed flow's reply passes a's Out, where everything is blocked
    assert sim.probe(("10.244.1.5", 80), ("10.244.1.6", 50000), TCP, now=2)[1]
    assert json.loads((sim.directory / "state.json").read_text())["flows"]
