"""Policy builders for both schemas, schema detection, and V1 <-> V2 translation."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from libhns import policies as P


def test_outbound_nat_both_schemas():
    assert P.OUTBOUND_NAT.v2(["10.244.0.0/16", "10.96.0.0/12"]) == {
        "Type": "OutBoundNAT",
        "Settings": {"Exceptions": ["10.244.0.0/16", "10.96.0.0/12"]},
    }
    assert P.OUTBOUND_NAT.v1(["10.244.0.0/16"]) == {"Type": "OutBoundNAT", "ExceptionList": ["10.244.0.0/16"]}
    assert P.OUTBOUND_NAT.v2(destinations=["10.244.1.5"]) == {
        "Type": "OutBoundNAT",
        "Settings": {"Destinations": ["10.244.1.5"]},
    }
    assert P.OUTBOUND_NAT.v1(destinations=["10.244.1.5"]) == {"Type": "OutBoundNAT", "Destinations": ["10.244.1.5"]}
    assert P.OUTBOUND_NAT.v2() == {"Type": "OutBoundNAT", "Settings": {}}


def test_route_and_provider_address():
    assert P.ROUTE.v2("10.96.0.0/12") == {
        "Type": "SDNRoute",
        "Settings": {"DestinationPrefix": "10.96.0.0/12", "NeedEncap": True},
    }
    assert P.ROUTE.v1("10.96.0.0/12") == {"Type": "ROUTE", "DestinationPrefix": "10.96.0.0/12", "NeedEncap": True}
    assert P.PROVIDER_ADDRESS.v2("192.168.1.10") == {
        "Type": "ProviderAddress",
        "Settings": {"ProviderAddress": "192.168.1.10"},
    }
    assert P.PROVIDER_ADDRESS.v1("192.168.1.10") == {"Type": "PA", "PA": "192.168.1.10"}


@pytest.mark.parametrize(
    "proto,number",
    [("tcp", 6), ("UDP", 17), ("icmpv4", 1), ("icmpv6", 58), ("igmp", 2), ("17", 17), ("0x11", 17), (6, 6)],
)
def test_protocol_numbers(proto, number):
    assert P.protocol_number(proto) == number


@pytest.mark.parametrize("bad", ["sctpx", "", "256", "-1", True])
def test_bad_protocols(bad):
    with pytest.raises(ValueError):
        P.protocol_number(bad)


def test_port_mapping():
    assert P.PORT_MAPPING.v2(80, 8080, "tcp", vip="192.168.1.10") == {
        "Type": "PortMapping",
        "Settings": {"InternalPort": 80, "ExternalPort": 8080, "Protocol": 6, "VIP": "192.168.1.10"},
    }
    assert P.PORT_MAPPING.v1(53, 5353, "udp", vip="192.168.1.10") == {
        "Type": "NAT",
        "Protocol": "udp",
        "InternalPort": 53,
        "ExternalPort": 5353,
    }


def test_acl_vsid():
    assert P.ACL.v2(protocols="tcp", local_ports=80, priority=1000) == {
        "Type": "ACL",
        "Settings": {"Protocols": "6", "Action": "Allow", "Direction": "In", "LocalPorts": "80", "Priority": 1000},
    }
    assert P.ACL.v1(action="Block", direction="Out") == {"Type": "ACL", "Action": "Block", "Direction": "Out"}
    assert P.VSID.v2(4096) == {"Type": "VSID", "Settings": {"IsolationId": 4096}}
    assert P.VSID.v1(4096) == {"Type": "VSID", "VSID": 4096}


def test_host_route_is_a_network_policy_without_settings():
    assert P.HOST_ROUTE.v2() == {"Type": "HostRoute", "Settings": {}}
    assert P.HOST_ROUTE.v1() == {"Type": "HostRoute"}
    assert not P.HOST_ROUTE.endpoint


@pytest.mark.parametrize(
    "kind,args",
    [
        (P.OUTBOUND_NAT, {"exceptions": ["10.244.0.0/16"], "destinations": ["10.244.1.5"], "vip": "10.0.0.1"}),
        (P.ROUTE, {"destination_prefix": "10.96.0.0/12", "next_hop": "10.0.0.1"}),
        (P.PROVIDER_ADDRESS, {"address": "192.168.1.10"}),
        (P.PORT_MAPPING, {"internal_port": 80, "external_port": 8080, "protocol": "udp"}),
        (P.ACL, {"action": "Block", "protocols": 6, "remote_ports": "80,443", "priority": 10}),
        (P.VSID, {"isolation_id": 4096}),
        (P.VLAN, {"isolation_id": 12}),
        (P.HOST_ROUTE, {}),
    ],
)
def test_each_kind_translates_its_own_documents(kind, args):
    """A kind's V1 document translates into its V2 document and back (NAT names the protocol)."""
    v1, v2 = kind.v1(**args), kind.v2(**args)
    assert P.to_v2(v1) == v2
    assert P.to_v1(v2) == (v1 if kind is not P.PORT_MAPPING else {**v1, "Protocol": "UDP"})


@pytest.mark.parametrize(
    "type_,yes",
    [
        ("OutBoundNAT", True),
        ("route", True),
        ("SDNRoute", True),
        ("PA", True),
        ("portmapping", True),
        ("ACL", True),
        ("VSID", False),
        ("HostRoute", False),
        ("QOS", False),
    ],
)
def test_translatable_endpoint_types(type_, yes):
    assert P.translatable(type_) is yes


def test_setting_reads_either_schema():
    policies = [
        {"Type": "OutBoundNAT"},
        {"Type": "VxlanPort", "Settings": {"Port": 4789}},
        {"type": "pa", "PA": "10.0.0.1"},
    ]
    assert P.setting(policies, "vxlanport", "port") == 4789
    assert P.setting(policies, "PA", "pa") == "10.0.0.1"
    assert P.setting(policies, "DrMacAddress", "Address") is None


@pytest.mark.parametrize(
    "policy,schema",
    [
        ({"Type": "OutBoundNAT", "ExceptionList": []}, "v1"),
        ({"Type": "OutBoundNAT", "Settings": {"Exceptions": []}}, "v2"),
        ({"Type": "OutBoundNAT"}, None),
        ({"Type": "ROUTE"}, "v1"),
        ({"type": "pa", "pa": "1.2.3.4"}, "v1"),
        ({"Type": "SDNRoute"}, "v2"),
        ({"Type": "HostRoute"}, None),
        ({"NoType": 1}, None),
    ],
)
def test_schema_of(policy, schema):
    assert P.schema_of(policy) == schema


# The V1 -> V2 equivalents (policies.to_v2 / to_v1), each checked in both directions.
EQUIVALENTS = [
    (
        {"Type": "OutBoundNAT", "ExceptionList": ["10.244.0.0/16"]},
        {"Type": "OutBoundNAT", "Settings": {"Exceptions": ["10.244.0.0/16"]}},
    ),
    (
        {"Type": "OutBoundNAT", "Destinations": ["10.244.1.5"]},
        {"Type": "OutBoundNAT", "Settings": {"Destinations": ["10.244.1.5"]}},
    ),
    (
        {"Type": "ROUTE", "DestinationPrefix": "10.96.0.0/12", "NeedEncap": True},
        {"Type": "SDNRoute", "Settings": {"DestinationPrefix": "10.96.0.0/12", "NeedEncap": True}},
    ),
    (
        {"Type": "PA", "PA": "192.168.1.10"},
        {"Type": "ProviderAddress", "Settings": {"ProviderAddress": "192.168.1.10"}},
    ),
    (
        {"Type": "NAT", "InternalPort": 80, "ExternalPort": 8080, "Protocol": "TCP", "VIP": "1.1.1.1"},
        {
            "Type": "PortMapping",
            "Settings": {"InternalPort": 80, "ExternalPort": 8080, "Protocol": 6, "VIP": "1.1.1.1"},
        },
    ),
    ({"Type": "VSID", "VSID": 4096}, {"Type": "VSID", "Settings": {"IsolationId": 4096}}),
    (
        {"Type": "ACL", "Protocols": "6", "Action": "Allow", "Direction": "In", "LocalPorts": "80"},
        {"Type": "ACL", "Settings": {"Protocols": "6", "Action": "Allow", "Direction": "In", "LocalPorts": "80"}},
    ),
    (
        {"Type": "DrMacAddress", "Address": "00-15-5D-00-00-01"},
        {"Type": "DrMacAddress", "Settings": {"Address": "00-15-5D-00-00-01"}},
    ),
]


@pytest.mark.parametrize("v1,v2", EQUIVALENTS, ids=[e[0]["Type"] + str(i) for i, e in enumerate(EQUIVALENTS)])
def test_translation_both_ways(v1, v2):
    assert P.to_v2(v1) == v2
    assert P.to_v1(v2) == v1
    assert P.to_v2(v2) == v2 and P.to_v1(v1) == v1  # idempotent on the target schema


def test_translation_details():
    assert P.to_v2(
        {"Type": "NAT", "Protocol": "udp", "InternalPort": 53, "ExternalPort": 53, "ExternalPortReserved": True}
    )["Settings"] == {"InternalPort": 53, "ExternalPort": 53, "Protocol": 17, "Flags": 4}
    assert P.to_v2({"Type": "ACL", "Protocol": 17, "LocalPort": 53, "RemotePort": 99})["Settings"] == {
        "Protocols": "17",
        "LocalPorts": "53",
        "RemotePorts": "99",
    }
    assert P.to_v1({"Type": "PortMapping", "Settings": {"Protocol": 132, "InternalPort": 1}}) == {
        "Type": "NAT",
        "Protocol": "132",
        "InternalPort": 1,
    }
    with pytest.raises(ValueError):
        P.to_v2({"ExceptionList": []})


_cidr = st.builds(lambda a, b, n: f"10.{a}.{b}.0/{n}", st.integers(0, 255), st.integers(0, 255), st.integers(8, 24))
_ip = st.builds(lambda a, b: f"192.168.{a}.{b}", st.integers(0, 255), st.integers(1, 254))
_port = st.integers(1, 65535)
V1_POLICIES = st.one_of(
    st.builds(lambda ex: {"Type": "OutBoundNAT", "ExceptionList": ex}, st.lists(_cidr, max_size=4)),
    st.builds(lambda d: {"Type": "OutBoundNAT", "Destinations": d}, st.lists(_ip, max_size=2)),
    st.builds(lambda p, e: {"Type": "ROUTE", "DestinationPrefix": p, "NeedEncap": e}, _cidr, st.booleans()),
    st.builds(lambda ip: {"Type": "PA", "PA": ip}, _ip),
    st.builds(
        lambda i, e, proto: {"Type": "NAT", "InternalPort": i, "ExternalPort": e, "Protocol": proto},
        _port,
        _port,
        st.sampled_from(["TCP", "UDP"]),
    ),
    st.builds(lambda n: {"Type": "VSID", "VSID": n}, st.integers(4096, 16777215)),
    st.builds(
        lambda a, d, p: {"Type": "ACL", "Action": a, "Direction": d, "LocalPorts": str(p)},
        st.sampled_from(["Allow", "Block"]),
        st.sampled_from(["In", "Out"]),
        _port,
    ),
    st.builds(lambda n: {"Type": "QOS", "MaximumOutgoingBandwidthInBytes": n}, st.integers(0, 2**40)),
)


@given(V1_POLICIES)
def test_v1_v2_v1_round_trip(policy):
    v2 = P.to_v2(policy)
    assert P.schema_of(v2) == "v2" or list(v2) == ["Type", "Settings"]
    assert P.to_v1(v2) == policy


def test_known_types():
    assert {"OutBoundNAT", "SDNRoute", "ProviderAddress", "PortMapping", "ACL"} <= P.KNOWN_V2_ENDPOINT_TYPES
    assert not P.V1_ONLY_TYPES & P.KNOWN_V2_ENDPOINT_TYPES
    assert P.canonical_type("outboundnat", P.KNOWN_V2_ENDPOINT_TYPES) == "OutBoundNAT"
