"""plugins.netpol.translate: a pod's access as HNS ACL rules in the priority bands (pure)."""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given
from hypothesis import strategies as st

from plugins.cni.errors import CniError
from plugins.netpol import addresses, model, resources, translate
from plugins.winnet import acls
from plugins.winnet.policies import V1, V2

POD = resources.Pod("x", "a", {}, ipaddress.ip_address("10.244.0.10"), "node-0", ())
NODE = ["10.127.130.36", "10.244.0.2"]

NETWORKS = st.builds(
    lambda a, n: ipaddress.ip_network(f"{ipaddress.ip_address(a)}/{n}", strict=False),
    st.integers(0xA000000, 0xAFFFFFF),
    st.integers(16, 32),
)
RANGES = st.lists(
    st.tuples(st.integers(1, 65535), st.integers(0, 20)).map(lambda t: (t[0], min(65535, t[0] + t[1]))),
    min_size=1,
    max_size=3,
)
GRANTS = st.builds(
    model.Grant,
    st.sampled_from([None, "TCP", "UDP"]),
    st.none() | RANGES.map(tuple),
    st.none() | st.lists(NETWORKS, min_size=1, max_size=4).map(tuple),
).map(lambda g: g if g.protocol or g.ports is None else model.Grant("TCP", g.ports, g.peers))
DIRECTIONS = st.one_of(
    st.just(model.OPEN), st.lists(GRANTS, max_size=4).map(lambda gs: model.Direction(True, model.normalise(gs)))
)
ACCESS = st.builds(lambda i, e: model.Access(POD, i, e, ()), DIRECTIONS, DIRECTIONS)


def settings(rules) -> list[dict]:
    return [r.render(V2)["Settings"] for r in rules]


@given(ACCESS)
def test_no_priority_holds_two_actions(access):
    seen: dict = {}
    for s in settings(translate.endpoint_rules(access, NODE)):
        seen.setdefault((s["RuleType"], s["Priority"]), set()).add(s["Action"])
    assert all(len(actions) == 1 for actions in seen.values()), seen
    assert all(100 <= p <= 65500 for _, p in seen)


@given(ACCESS)
def test_an_isolated_direction_ends_in_block_and_an_open_one_in_allow_all(access):
    rules = settings(translate.endpoint_rules(access, NODE))
    for hns, direction in (("In", access.ingress), ("Out", access.egress)):
        switch = [s for s in rules if s["Direction"] == hns and s["RuleType"] == "Switch"]
        last = max(switch, key=lambda s: s["Priority"])
        bare = {"Action": "Block" if direction.isolated else "Allow", "Direction": hns, "RuleType": "Switch"}
        assert last == {**bare, "Priority": acls.ISOLATION_PRIORITY if direction.isolated else acls.DEFAULT_PRIORITY}
        assert sum(1 for s in switch if s["Priority"] == last["Priority"]) == 1
        assert [s for s in rules if s["Direction"] == hns and s["RuleType"] == "Host"] == [
            {"Action": "Allow", "Direction": hns, "RuleType": "Host", "Priority": acls.DEFAULT_PRIORITY}
        ]


@given(ACCESS)
def test_the_node_and_the_pod_itself_come_first(access):
    rules = settings(translate.endpoint_rules(access, NODE))
    first_in = min((s for s in rules if s["Direction"] == "In"), key=lambda s: s["Priority"])
    assert first_in["Action"] == "Allow" and first_in["Priority"] == acls.NODE_PRIORITY
    assert set(first_in["RemoteAddresses"].split(",")) == {*NODE, "10.244.0.10"}
    assert not {"Protocols", "LocalPorts", "RemotePorts"} & set(first_in)


@given(ACCESS, st.randoms())
def test_same_access_same_rules_in_the_same_order(access, rnd):
    shuffled = {}
    for name in ("ingress", "egress"):
        d = getattr(access, name)
        grants = list(d.grants)
        rnd.shuffle(grants)
        shuffled[name] = model.Direction(d.isolated, model.normalise(grants))
    again = model.Access(POD, shuffled["ingress"], shuffled["egress"], ())
    assert settings(translate.endpoint_rules(access, NODE)) == settings(translate.endpoint_rules(again, NODE))


def test_policy_allows_in_both_forms():
    grant = model.Grant(
        "TCP", ((80, 80), (8000, 8080)), (ipaddress.ip_network("10.244.1.0/24"), ipaddress.ip_network("10.244.2.10/32"))
    )
    access = model.Access(POD, model.Direction(True, (grant,)), model.OPEN, ())
    expected = {
        "Protocols": "6",
        "Action": "Allow",
        "Direction": "In",
        "RemoteAddresses": "10.244.1.0/24,10.244.2.10",
        "LocalPorts": "80,8000-8080",
        "RuleType": "Switch",
        "Priority": acls.POLICY_PRIORITY,
    }
    assert {"Type": "ACL", "Settings": expected} in translate.endpoint_acls(access, NODE, V2)
    assert {"Type": "ACL", **expected} in translate.endpoint_acls(access, NODE, V1)


def test_egress_ports_are_the_peers_and_families_split():
    peers = (ipaddress.ip_network("10.0.0.0/8"), ipaddress.ip_network("fd00::/64"))
    access = model.Access(POD, model.OPEN, model.Direction(True, (model.Grant("UDP", ((53, 53),), peers),)), ())
    policy = [s for s in settings(translate.endpoint_rules(access, NODE)) if s["Priority"] == acls.POLICY_PRIORITY]
    assert [(s["Direction"], s["RemotePorts"], s["RemoteAddresses"]) for s in policy] == [
        ("Out", "53", "10.0.0.0/8"),
        ("Out", "53", "fd00::/64"),
    ]


def test_long_lists_are_chunked(monkeypatch):
    monkeypatch.setattr(translate, "MAX_LIST", 2)
    peers = tuple(ipaddress.ip_network(f"10.0.{i}.1/32") for i in range(0, 10, 2))
    access = model.Access(
        POD, model.Direction(True, (model.Grant("TCP", ((80, 80), (90, 90), (99, 99)), peers),)), model.OPEN, ()
    )
    policy = [s for s in settings(translate.endpoint_rules(access, NODE)) if s["Priority"] == acls.POLICY_PRIORITY]
    assert len(policy) == 3 * 2
    assert {s["RemoteAddresses"] for s in policy} == {"10.0.0.1,10.0.2.1", "10.0.4.1,10.0.6.1", "10.0.8.1"}
    assert all(len(s["LocalPorts"].split(",")) <= 2 for s in policy)


# ---------------------------------------------------------------- CIDRs and chunks


@given(NETWORKS, st.lists(NETWORKS, max_size=4), st.integers(0xA000000, 0xAFFFFFF))
def test_subtraction_keeps_exactly_what_the_holes_leave(cidr, holes, probe):
    ip = ipaddress.ip_address(probe)
    left = addresses.networks(addresses.cut(addresses.spans([cidr]), addresses.spans(holes)))
    assert addresses.contains(left, ip) == (ip in cidr and not any(ip in h for h in holes))
    assert addresses.collapse(left) == left
    for net in left:  # and nothing but the block
        assert net.subnet_of(cidr)


@given(st.lists(st.integers(), max_size=50), st.integers(1, 10))
def test_chunks_keep_order_and_bound(items, size):
    parts = addresses.chunks(items, size)
    assert [x for p in parts for x in p] == items
    assert all(0 < len(p) <= size for p in parts) or parts == [()]


# ---------------------------------------------------------------- the config's bands


@pytest.mark.parametrize(
    "priority", [acls.NODE_PRIORITY, acls.POLICY_PRIORITY, acls.ISOLATION_PRIORITY, acls.DEFAULT_PRIORITY]
)
def test_a_config_rule_in_the_policy_bands_is_refused(priority):
    with pytest.raises(CniError) as err:
        acls.parse([{"action": "block", "direction": "in", "priority": priority}])
    assert err.value.code == 7 and err.value.msg.startswith("acls[0].priority")


@pytest.mark.parametrize("priority", [100, acls.PORT_MAPPING_PRIORITY, 1999, 4001, 65000, 65499])
def test_a_config_rule_outside_the_bands_is_taken(priority):
    [rule] = acls.parse([{"action": "block", "direction": "in", "priority": priority}])
    assert rule.priority == priority
