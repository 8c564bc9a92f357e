"""Typed HNS objects: case-insensitive keys, unknown keys kept, convenience properties."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from libhns import guid
from libhns.objects import (
    HNSEndpoint,
    HNSNetwork,
    HostComputeEndpoint,
    HostComputeLoadBalancer,
    HostComputeNamespace,
    HostComputeNetwork,
    same_id,
)
from testdata import GOLDENS

OVERLAY_V2 = {
    "ID": "9B4F1E27-6C83-4A5D-B0E9-2D7C3F8A1E62",
    "Name": "vxlan0",
    "Type": "Overlay",
    "Policies": [
        {"Type": "NetAdapterName", "Settings": {"NetworkAdapterName": "Ethernet"}},
        {"Type": "ProviderAddress", "Settings": {"ProviderAddress": "192.168.1.10"}},
        {"Type": "DrMacAddress", "Settings": {"Address": "0E-2A-0A-F4-02-01"}},
        {"Type": "VxlanPort", "Settings": {"Port": 4789}},
    ],
    "MacPool": {"Ranges": []},
    "Dns": {},
    "Ipams": [
        {
            "Type": "Static",
            "Subnets": [
                {
                    "IpAddressPrefix": "10.244.2.0/24",
                    "Policies": [{"Type": "VSID", "Settings": {"IsolationId": 4096}}],
                    "Routes": [{"NextHop": "10.244.2.1", "DestinationPrefix": "0.0.0.0/0"}],
                }
            ],
        }
    ],
    "Flags": 8,
    "SchemaVersion": {"Major": 2, "Minor": 0},
    "Health": {"Extra": {}},
    "ServerSideField": {"x": 1},
}


def test_same_id():
    assert same_id("9b4f1e27-6c83-4a5d-b0e9-2d7c3f8a1e62", "{9B4F1E27-6C83-4A5D-B0E9-2D7C3F8A1E62}")
    assert not same_id("9b4f1e27-6c83-4a5d-b0e9-2d7c3f8a1e62", "9b4f1e27-6c83-4a5d-b0e9-2d7c3f8a1e63")
    assert not same_id(None, None) and not same_id("", "")


def test_network_round_trip_and_properties():
    net = HostComputeNetwork.from_json(json.dumps(OVERLAY_V2))
    assert net.to_json() == OVERLAY_V2
    assert net.extra == {"ServerSideField": {"x": 1}}
    assert net.management_ip == "192.168.1.10"
    assert net.dr_mac_address == "0E-2A-0A-F4-02-01"
    assert net.adapter_name == "Ethernet"
    assert net.vsid == 4096 and net.vxlan_port == 4789
    [subnet] = net.subnets
    assert (subnet.prefix, subnet.gateway, str(subnet.network)) == ("10.244.2.0/24", "10.244.2.1", "10.244.2.0/24")
    assert net.is_type("overlay") and net.network_type == "Overlay"


def test_keys_read_case_insensitively():
    ep = HostComputeEndpoint.from_json(
        {
            "Id": "516b501f-19c1-527e-acae-ee052ca54ee7",
            "name": "e",
            "IPConfigurations": [
                {"IPAddress": "10.0.0.5", "prefixLength": 24},
                {"IpAddress": "fd00::5", "PrefixLength": 64},
            ],
            "routes": [
                {"nexthop": "fd00::1", "destinationprefix": "::/0"},
                {"NextHop": "10.0.0.1", "DestinationPrefix": "0.0.0.0/0"},
            ],
            "hostComputeNamespace": "2F1178E7-5178-5B05-B18C-4F6337BCE49F",
            "MacAddress": "00-15-5D-52-C0-01",
        }
    )
    assert ep.id == "516b501f-19c1-527e-acae-ee052ca54ee7"
    assert ep.ip_addresses == ["10.0.0.5", "fd00::5"]
    assert ep.prefix_length == 24
    assert ep.gateway == "10.0.0.1"
    assert ep.namespace_id == "2F1178E7-5178-5B05-B18C-4F6337BCE49F"
    assert ep.mac == "00-15-5D-52-C0-01"
    assert ep.extra == {}
    assert ep.to_json()["IpConfigurations"][0] == {"IPAddress": "10.0.0.5", "prefixLength": 24}
    assert "ID" in ep.to_json() and "Id" not in ep.to_json()


def test_missing_type_is_nat():
    net = HostComputeNetwork.from_json({"Name": "nat"})
    assert net.network_type == "NAT" and net.is_type("nat")
    assert net.subnets == [] and net.management_ip is None and net.vsid is None


def test_namespace():
    ns = HostComputeNamespace.from_json(
        {
            "ID": "2F1178E7-5178-5B05-B18C-4F6337BCE49F",
            "NamespaceId": 10,
            "Type": "Host",
            "Resources": [
                {"Type": "Endpoint", "Data": {"ID": "516B501F-19C1-527E-ACAE-EE052CA54EE7"}},
                {"Type": "Container", "Data": {"Id": "abc"}},
            ],
        }
    )
    assert ns.compartment_id == 10
    assert ns.endpoint_ids == ["516B501F-19C1-527E-ACAE-EE052CA54EE7"]
    assert ns.has_endpoint("516b501f-19c1-527e-acae-ee052ca54ee7")


def test_v1_network_and_endpoint():
    net = HNSNetwork.from_json(
        {
            "ID": "X",
            "Name": "vxlan0",
            "Type": "overlay",
            "ManagementIP": "192.168.1.10",
            "DrMacAddress": "00-15-5D-BB-6E-B1",
            "NetworkAdapterName": "Ethernet",
            "Subnets": [
                {
                    "AddressPrefix": "10.244.2.0/24",
                    "GatewayAddress": "10.244.2.1",
                    "Policies": [{"Type": "VSID", "VSID": 9999}],
                }
            ],
            "CurrentEndpointCount": 0,
        }
    )
    assert net.is_type("Overlay") and net.management_ip == "192.168.1.10"
    assert net.dr_mac_address == "00-15-5D-BB-6E-B1" and net.vsid == 9999
    assert net.subnets[0].gateway == "10.244.2.1" and net.adapter_name == "Ethernet"
    assert net.extra == {"CurrentEndpointCount": 0}
    ep = HNSEndpoint.from_json(
        {
            "ID": "E",
            "Name": "c_cbr0",
            "VirtualNetwork": "N",
            "IPAddress": "10.244.1.2",
            "GatewayAddress": "10.244.1.1",
            "MacAddress": "00-15-5D-52-C0-01",
            "PrefixLength": 24,
            "SharedContainers": ["ABC"],
            "Namespace": {"ID": "NS"},
            "State": 2,
        }
    )
    assert ep.ip_addresses == ["10.244.1.2"] and ep.gateway == "10.244.1.1"
    assert ep.has_container("abc") and not ep.has_container("abd")
    assert ep.namespace_id == "NS" and ep.network_id == "N" and ep.mac == "00-15-5D-52-C0-01"


def test_load_balancer_round_trip():
    doc = {
        "ID": "L",
        "HostComputeEndpoints": ["E"],
        "SourceVIP": "10.0.0.2",
        "FrontendVIPs": ["10.96.0.1"],
        "PortMappings": [{"Protocol": 6, "InternalPort": 80}],
        "Flags": 1,
        "SchemaVersion": {"Major": 2, "Minor": 0},
    }
    assert HostComputeLoadBalancer.from_json(doc).to_json() == doc


def test_from_json_rejects_non_objects():
    with pytest.raises(ValueError):
        HostComputeNetwork.from_json("[]")


def test_golden_documents_round_trip():
    seen = 0
    for path in GOLDENS.glob("*.json"):
        case = json.loads(path.read_text())
        for step in case.get("steps", []):
            for net in step.get("hns_state_before", {}).get("networks", []):
                assert HostComputeNetwork.from_json(net["v2"]).to_json() == net["v2"]
                assert HNSNetwork.from_json(net["v1"]).to_json() == net["v1"]
                seen += 1
    assert seen > 0


@pytest.mark.parametrize(
    "text, parsed",
    [
        ("9b4f1e27-6c83-4a5d-b0e9-2d7c3f8a1e62", "9B4F1E27-6C83-4A5D-B0E9-2D7C3F8A1E62"),
        ("{9B4F1E27-6C83-4A5D-B0E9-2D7C3F8A1E62}", "9B4F1E27-6C83-4A5D-B0E9-2D7C3F8A1E62"),
        (" 9B4F1E27-6C83-4A5D-B0E9-2D7C3F8A1E62\n", "9B4F1E27-6C83-4A5D-B0E9-2D7C3F8A1E62"),
        ("9B4F1E276C834A5DB0E92D7C3F8A1E62", None),
        ("9B4F1E27-6C83-4A5D-B0E9-2D7C3F8A1E6G", None),
        ("{9B4F1E27-6C83-4A5D-B0E9-2D7C3F8A1E62", None),
        ("none", None),
        ("container:abc", None),
        ("", None),
        (None, None),
    ],
)
def test_one_guid_parser(text, parsed):
    assert guid.parse(text) == parsed


@given(st.uuids())
def test_every_uuid_parses_to_its_upper_form_with_or_without_braces(u):
    assert guid.parse(str(u)) == guid.parse("{" + str(u) + "}") == str(u).upper()
    assert guid.search(f"/endpoints/{u}/attach?x=1") == str(u).upper()


@given(st.uuids().map(str) | st.text(alphabet="{} \n-0123456789abcdefABCDEFG", max_size=40), st.booleans())
def test_normalize_is_the_parsed_guid_else_the_trimmed_text(text, braces):
    text = "{" + text + "}" if braces else text
    assert guid.normalize(text) == (guid.parse(text) or text.strip().strip("{}").upper())
