"""Policy builders for both schemas, schema detection, and V1 <-> V2 translation."""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from libhns import policies as P


def test_outbound_nat_both_schemas():
    assert P.outbound_nat(["10.244.0.0/16", "10.96.0.0/12"]) == {
        "Type": "OutBoundNAT", "Settings": {"Exceptions": ["10.244.0.0/16", "10.96.0.0/12"]}}
    assert P.outbound_nat(["10.244.0.0/16"], schema="v1") == {
        "Type": "OutBoundNAT", "ExceptionList": ["10.244.0.0/16"]}
    assert P.outbound_nat(destinations=["10.244.1.5"]) == {
        "Type": "OutBoundNAT", "Settings": {"Destinations": ["10.244.1.5"]}}
    assert P.outbound_nat(destinations=["10.244.1.5"], schema="v1") == {
        "Type": "OutBoundNAT", "Destinations": ["10.244.1.5"]}
    assert P.outbound_nat() == {"Type": "OutBoundNAT", "Settings": {}}


def test_route_and_provider_address():
    assert P.route("10.96.0.0/12") == {
        "Type": "SDNRoute", "Settings": {"DestinationPrefix": "10.96.0.0/12", "NeedEncap": True}}
    assert P.route("10.96.0.0/12", schema="v1") == {
        "Type": "ROUTE", "DestinationPrefix": "10.96.0.0/12", "NeedEncap": True}
    assert P.provider_address("192.168.1.10") == {
        "Type": "ProviderAddress", "Settings": {"ProviderAddress": "192.168.1.10"}}
    assert P.provider_address("192.168.1.10", schema="v1") == {"Type": "PA", "PA": "192.168.1.10"}


@pytest.mark.parametrize("proto,number", [("tcp", 6), ("UDP", 17), ("icmpv4", 1), ("icmpv6", 58),
                                          ("igmp", 2), ("17", 17), ("0x11", 17), (6, 6)])
def test_protocol_numbers(proto, number):
    assert P.protocol_number(proto) == number


@pytest.mark.parametrize("bad", ["sctpx", "", "256", "-1", True])
def test_bad_protocols(bad):
    with pytest.raises(ValueError):
        P.protocol_number(bad)


def test_port_mapping():
    assert P.port_mapping(80, 8080, "tcp", vip="192.168.1.10") == {
        "Type": "PortMapping",
        "Settings": {"InternalPort": 80, "ExternalPort": 8080, "Protocol": 6, "VIP": "192.168.1.10"}}
    assert P.port_mapping(53, 5353, "udp", schema="v1") == {
        "Type": "NAT", "Protocol": "udp", "InternalPort": 53, "ExternalPort": 5353}


def test_acl_vsid_passthrough():
    assert P.acl(protocols="tcp", local_ports=80, priority=1000) == {
        "Type": "ACL", "Settings": {"Protocols": "6", "Action": "Allow", "Direction": "In",
                                    "LocalPorts": "80", "Priority": 1000}}
    assert P.acl(action="Block", direction="Out", schema="v1") == {
        "Type": "ACL", "Action": "Block", "Direction": "Out"}
    assert P.vsid(4096) == {"Type": "VSID", "Settings": {"IsolationId": 4096}}
    assert P.vsid(4096, schema="v1") == {"Type": "VSID", "VSID": 4096}
    assert P.policy("HostRoute") == {"Type": "HostRoute", "Settings": {}}
    assert P.policy("QOS", {"MaximumOutgoingBandwidthInBytes": 10}, schema="v1") == {
        "Type": "QOS", "MaximumOutgoingBandwidthInBytes": 10}
    with pytest.raises(ValueError):
        P.policy("X", schema="v3")  # type: ignore[arg-type]


@pytest.mark.parametrize("policy,schema", [
    ({"Type": "OutBoundNAT", "ExceptionList": []}, "v1"),
    ({"Type": "OutBoundNAT", "Settings": {"Exceptions": []}}, "v2"),
    ({"Type": "OutBoundNAT"}, None),
    ({"Type": "ROUTE"}, "v1"),
    ({"type": "pa", "pa": "1.2.3.4"}, "v1"),
    ({"Type": "SDNRoute"}, "v2"),
    ({"Type": "HostRoute"}, None),
    ({"NoType": 1}, None),
])
def test_schema_of(policy, schema):
    assert P.schema_of(policy) == schema


# The V1 -> V2 equivalents (policies.to_v2 / to_v1), each checked in both directions.
EQUIVALENTS = [
    ({"Type": "OutBoundNAT", "ExceptionList": ["10.244.0.0/16"]},
     {"Type": "OutBoundNAT", "Settings": {"Exceptions": ["10.244.0.0/16"]}}),
    ({"Type": "OutBoundNAT", "Destinations": ["10.244.1.5"]},
     {"Type": "OutBoundNAT", "Settings": {"Destinations": ["10.244.1.5"]}}),
    ({"Type": "ROUTE", "DestinationPrefix": "10.96.0.0/12", "NeedEncap": True},
     {"Type": "SDNRoute", "Settings": {"DestinationPrefix": "10.96.0.0/12", "NeedEncap": True}}),
    ({"Type": "PA", "PA": "192.168.1.10"},
     {"Type": "ProviderAddress", "Settings": {"ProviderAddress": "192.168.1.10"}}),
    ({"Type": "NAT", "InternalPort": 80, "ExternalPort": 8080, "Protocol": "TCP", "VIP": "1.1.1.1"},
     {"Type": "PortMapping", "Settings": {"InternalPort": 80, "ExternalPort": 8080, "Protocol": 6,
                                          "VIP": "1.1.1.1"}}),
    ({"Type": "VSID", "VSID": 4096}, {"Type": "VSID", "Settings": {"IsolationId": 4096}}),
    ({"Type": "ACL", "Protocols": "6", "Action": "Allow", "Direction": "In", "LocalPorts": "80"},
     {"Type": "ACL", "Settings": {"Protocols": "6", "Action": "Allow", "Direction": "In",
                                  "LocalPorts": "80"}}),
    ({"Type": "DrMacAddress", "Address": "00-15-5D-00-00-01"},
     {"Type": "DrMacAddress", "Settings": {"Address": "00-15-5D-00-00-01"}}),
]


@pytest.mark.parametrize("v1,v2", EQUIVALENTS, ids=[e[0]["Type"] + str(i) for i, e in
                                                    enumerate(EQUIVALENTS)])
def test_translation_both_ways(v1, v2):
    assert P.to_v2(v1) == v2
    assert P.to_v1(v2) == v1
    assert P.to_v2(v2) == v2 and P.to_v1(v1) == v1  # idempotent on the target schema


def test_translation_details():
    assert P.to_v2({"Type": "NAT", "Protocol": "udp", "InternalPort": 53, "ExternalPort": 53,
                    "ExternalPortReserved": True})["Settings"] == {
        "InternalPort": 53, "ExternalPort": 53, "Protocol": 17, "Flags": 4}
    assert P.to_v2({"Type": "ACL", "Protocol": 17, "LocalPort": 53, "RemotePort": 99})["Settings"] \
        == {"Protocols": "17", "LocalPorts": "53", "RemotePorts": "99"}
    assert P.to_v1({"Type": "PortMapping", "Settings": {"Protocol": 132, "InternalPort": 1}}) == {
        "Type": "NAT", "Protocol": "132", "InternalPort": 1}
    with pytest.raises(ValueError):
        P.to_v2({"ExceptionList": []})


_cidr = st.builds(lambda a, b, n: f"10.{a}.{b}.0/{n}", st.integers(0, 255), st.integers(0, 255),
                  st.integers(8, 24))
_ip = st.builds(lambda a, b: f"192.168.{a}.{b}", st.integers(0, 255), st.integers(1, 254))
_port = st.integers(1, 65535)
V1_POLICIES = st.one_of(
    st.builds(lambda ex: {"Type": "OutBoundNAT", "ExceptionList": ex}, st.lists(_cidr, max_size=4)),
    st.builds(lambda d: {"Type": "OutBoundNAT", "Destinations": d}, st.lists(_ip, max_size=2)),
    st.builds(lambda p, e: {"Type": "ROUTE", "DestinationPrefix": p, "NeedEncap": e},
              _cidr, st.booleans()),
    st.builds(lambda ip: {"Type": "PA", "PA": ip}, _ip),
    st.builds(lambda i, e, proto: {"Type": "NAT", "InternalPort": i, "ExternalPort": e,
                                   "Protocol": proto}, _port, _port, st.sampled_from(["TCP", "UDP"])),
    st.builds(lambda n: {"Type": "VSID", "VSID": n}, st.integers(4096, 16777215)),
    st.builds(lambda a, d, p: {"Type": "ACL", "Action": a, "Direction": d, "LocalPorts": str(p)},
              st.sampled_from(["Allow", "Block"]), st.sampled_from(["In", "Out"]), _port),
    st.builds(lambda n: {"Type": "QOS", "MaximumOutgoingBandwidthInBytes": n}, st.integers(0, 2**40)),
)


@given(V1_POLICIES)
def test_v1_v2_v1_round_trip(policy):
    v2 = P.to_v2(policy)
    assert P.schema_of(v2) == "v2" or list(v2) == ["Type", "Settings"]
    assert P.to_v1(v2) == policy


def test_known_types():
    assert {"OutBoundNAT", "SDNRoute", "ProviderAddress", "PortMapping", "ACL"} <= \
        P.KNOWN_V2_ENDPOINT_TYPES
    assert not P.V1_ONLY_TYPES & P.KNOWN_V2_ENDPOINT_TYPES
    assert P.canonical_type("outboundnat", P.KNOWN_V2_ENDPOINT_TYPES) == "OutBoundNAT"
