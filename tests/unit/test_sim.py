"""The HNS simulator against HNS's rules: documents, views, rejections, concurrency, faults."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

from libhns import errors
from libhns.sim import Simulator, default_state_dir
from libhns.sim.faults import parse_faults

GUID_RE = re.compile(r"^[0-9A-F]{8}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{12}$")
MAC_RE = re.compile(r"^00-15-5D(-[0-9A-F]{2}){3}$")
V1_QUERY = json.dumps({"SchemaVersion": {"Major": 1, "Minor": 0}})
V2_QUERY = json.dumps({"SchemaVersion": {"Major": 2, "Minor": 0}})
REPO = Path(__file__).resolve().parents[2]


def l2bridge(name: str = "cbr0", prefix: str = "10.244.1.0/24", gw: str = "10.244.1.1") -> dict:
    return {
        "Name": name,
        "Type": "L2Bridge",
        "Policies": [{"Type": "NetAdapterName", "Settings": {"NetworkAdapterName": "Ethernet"}}],
        "Ipams": [
            {
                "Type": "Static",
                "Subnets": [{"IpAddressPrefix": prefix, "Routes": [{"NextHop": gw, "DestinationPrefix": "0.0.0.0/0"}]}],
            }
        ],
        "SchemaVersion": {"Major": 2, "Minor": 0},
    }


def overlay(name: str = "vxlan0", pa: str | None = None) -> dict:
    doc = l2bridge(name, "10.244.2.0/24", "10.244.2.1")
    doc["Type"] = "Overlay"
    doc["Flags"] = 8
    doc["Ipams"][0]["Subnets"][0]["Policies"] = [{"Type": "VSID", "Settings": {"IsolationId": 4096}}]
    if pa:
        doc["Policies"].append({"Type": "ProviderAddress", "Settings": {"ProviderAddress": pa}})
    return doc


def endpoint(name: str = "ep", ip: str | None = "10.244.1.5", **extra) -> dict:
    doc: dict = {"Name": name, "SchemaVersion": {"Major": 2, "Minor": 0}, **extra}
    if ip:
        doc["IpConfigurations"] = [{"IpAddress": ip}]
    return doc


@pytest.fixture
def sim(tmp_path: Path) -> Simulator:
    return Simulator(tmp_path / "hns")


def create(sim: Simulator, kind: str, doc: dict, network=None) -> dict:
    h = sim.hcn_create(kind, None, json.dumps(doc), network)
    try:
        return json.loads(sim.hcn_query(kind, h, V2_QUERY))
    finally:
        sim.hcn_close(kind, h)


def create_ep(sim: Simulator, net_id: str, doc: dict) -> dict:
    n = sim.hcn_open("Network", net_id)
    try:
        return create(sim, "Endpoint", doc, n)
    finally:
        sim.hcn_close("Network", n)


def v1(sim: Simulator, method: str, path: str, body: dict | str | None = None) -> dict:
    req = body if isinstance(body, str) else ("" if body is None else json.dumps(body))
    return json.loads(sim.hns_call(method, path, req))


def hresult_of(exc: pytest.ExceptionInfo) -> int:
    return exc.value.hresult


# --- answers like HNS ---------------------------------------------------------------------------


def test_version_default_and_from_env(tmp_path):
    assert v1(Simulator(tmp_path), "GET", "/globals/version") == {"Success": True, "Output": {"Major": 13, "Minor": 2}}
    s = Simulator.from_env({"LIBHNS_SIM_DIR": str(tmp_path), "LIBHNS_SIM_VERSION": "9.1"})
    assert v1(s, "GET", "/globals/version")["Output"] == {"Major": 9, "Minor": 1}
    with pytest.raises(errors.HnsError) as exc:
        s.hcn_enumerate("Network", "")
    assert exc.value.hresult == 0x8007007E
    with pytest.raises(ValueError):
        Simulator.from_env({"LIBHNS_SIM_DIR": str(tmp_path), "LIBHNS_SIM_VERSION": "13"})


def test_default_state_dir_is_per_user(tmp_path):
    assert default_state_dir({"XDG_STATE_HOME": str(tmp_path)}) == tmp_path / "wincni" / "hns-sim"
    assert default_state_dir({"HOME": str(tmp_path)}) == tmp_path / ".local/state/wincni/hns-sim"


def test_overlay_network_gets_provider_address_and_dr_mac(sim):
    net = create(sim, "Network", overlay())
    assert GUID_RE.match(net["ID"])
    types = [p["Type"] for p in net["Policies"]]
    assert types == ["NetAdapterName", "ProviderAddress", "DrMacAddress"]
    assert net["Policies"][1]["Settings"] == {"ProviderAddress": "10.127.130.36"}
    assert MAC_RE.match(net["Policies"][2]["Settings"]["Address"])
    assert net["Flags"] == 8


def test_overlay_management_ip_from_request(sim):
    net = create(sim, "Network", overlay(pa="192.168.1.10"))
    pas = [p for p in net["Policies"] if p["Type"] == "ProviderAddress"]
    assert pas == [{"Type": "ProviderAddress", "Settings": {"ProviderAddress": "192.168.1.10"}}]


def test_v1_view_of_a_v2_network(sim):
    net = create(sim, "Network", overlay(pa="192.168.1.10"))
    out = v1(sim, "GET", f"/networks/{net['ID'].lower()}")["Output"]
    assert out["Type"] == "overlay"
    assert out["ManagementIP"] == "192.168.1.10"
    assert out["DrMacAddress"] == net["Policies"][2]["Settings"]["Address"]
    assert out["NetworkAdapterName"] == "Ethernet"
    assert out["Subnets"] == [
        {"AddressPrefix": "10.244.2.0/24", "GatewayAddress": "10.244.2.1", "Policies": [{"Type": "VSID", "VSID": 4096}]}
    ]
    h = sim.hcn_open("Network", net["ID"])
    assert json.loads(sim.hcn_query("Network", h, V1_QUERY)) == out
    sim.hcn_close("Network", h)


def test_v1_network_create_is_seen_by_v2(sim):
    out = v1(
        sim,
        "POST",
        "/networks/",
        {
            "Name": "cbr0",
            "Type": "L2Bridge",
            "DNSServerList": "10.96.0.10,8.8.8.8",
            "Subnets": [{"AddressPrefix": "10.244.1.0/24", "GatewayAddress": "10.244.1.1"}],
        },
    )
    assert out["Success"] and out["Output"]["Type"] == "l2bridge"
    assert out["Output"]["ManagementIP"]  # flanneld polls for it on cbr0
    ids = json.loads(
        sim.hcn_enumerate(
            "Network", json.dumps({"SchemaVersion": {"Major": 2, "Minor": 0}, "Filter": json.dumps({"Name": "cbr0"})})
        )
    )
    assert ids == [out["Output"]["ID"]]
    h = sim.hcn_open("Network", ids[0])
    doc = json.loads(sim.hcn_query("Network", h, V2_QUERY))
    sim.hcn_close("Network", h)
    assert doc["Type"] == "L2Bridge"
    assert doc["Dns"] == {"ServerList": ["10.96.0.10", "8.8.8.8"]}
    assert doc["Ipams"][0]["Subnets"][0]["Routes"] == [{"NextHop": "10.244.1.1", "DestinationPrefix": "0.0.0.0/0"}]


def test_v2_endpoint_fields_and_v1_view(sim):
    net = create(sim, "Network", l2bridge())
    ep = create_ep(
        sim,
        net["ID"],
        endpoint(
            "c1_cbr0",
            "10.244.1.5",
            Routes=[{"NextHop": "10.244.1.2", "DestinationPrefix": "0.0.0.0/0"}],
            Dns={"ServerList": ["10.96.0.10"], "Search": ["svc.cluster.local"]},
            Policies=[{"Type": "OutBoundNAT", "Settings": {"Exceptions": ["10.244.0.0/16"]}}],
        ),
    )
    assert GUID_RE.match(ep["ID"]) and MAC_RE.match(ep["MacAddress"])
    assert ep["IpConfigurations"] == [{"IpAddress": "10.244.1.5", "PrefixLength": 24}]
    assert ep["HostComputeNetwork"] == net["ID"]
    assert "HostComputeNamespace" not in ep
    view = v1(sim, "GET", f"/endpoints/{ep['ID']}")["Output"]
    assert view["IPAddress"] == "10.244.1.5" and view["PrefixLength"] == 24
    assert view["GatewayAddress"] == "10.244.1.2"
    assert view["VirtualNetwork"] == net["ID"] and view["VirtualNetworkName"] == "cbr0"
    assert view["DNSServerList"] == "10.96.0.10" and view["DNSSuffix"] == "svc.cluster.local"
    assert view["Policies"] == [{"Type": "OutBoundNAT", "ExceptionList": ["10.244.0.0/16"]}]
    assert view["MacAddress"] == ep["MacAddress"]
    assert view["SharedContainers"] == [] and view["State"] == 1


def test_v1_endpoint_create_is_seen_by_v2(sim):
    net = create(sim, "Network", l2bridge())
    out = v1(
        sim,
        "POST",
        "/endpoints/",
        {
            "Name": "c1_cbr0",
            "VirtualNetwork": net["ID"],
            "IPAddress": "10.244.1.7",
            "GatewayAddress": "10.244.1.2",
            "DNSServerList": "10.96.0.10,10.96.0.11",
            "Policies": [
                {"Type": "ROUTE", "DestinationPrefix": "10.96.0.0/12", "NeedEncap": True},
                {"Type": "NAT", "Protocol": "tcp", "InternalPort": 80, "ExternalPort": 8080},
            ],
        },
    )
    assert out["Success"], out
    assert out["Output"]["PrefixLength"] == 24
    ids = json.loads(sim.hcn_enumerate("Endpoint", json.dumps({"Filter": json.dumps({"VirtualNetworkName": "cbr0"})})))
    assert ids == [out["Output"]["ID"]]
    h = sim.hcn_open("Endpoint", ids[0])
    doc = json.loads(sim.hcn_query("Endpoint", h, V2_QUERY))
    sim.hcn_close("Endpoint", h)
    assert doc["Policies"] == [
        {"Type": "SDNRoute", "Settings": {"DestinationPrefix": "10.96.0.0/12", "NeedEncap": True}},
        {"Type": "PortMapping", "Settings": {"InternalPort": 80, "ExternalPort": 8080, "Protocol": 6}},
    ]
    assert doc["Routes"] == [{"NextHop": "10.244.1.2", "DestinationPrefix": "0.0.0.0/0"}]
    assert doc["Dns"] == {"ServerList": ["10.96.0.10", "10.96.0.11"]}


def test_enumerate_filters(sim):
    a = create(sim, "Network", l2bridge("a", "10.1.0.0/24", "10.1.0.1"))
    b = create(sim, "Network", l2bridge("b", "10.2.0.0/24", "10.2.0.1"))
    ea = create_ep(sim, a["ID"], endpoint("ea", "10.1.0.5"))
    eb = create_ep(sim, b["ID"], endpoint("eb", "10.2.0.5"))

    def enum(kind, filt):
        q = {"SchemaVersion": {"Major": 2, "Minor": 0}, "Flags": 0, "Filter": json.dumps(filt)}
        return json.loads(sim.hcn_enumerate(kind, json.dumps(q)))

    assert enum("Network", {"Name": "b"}) == [b["ID"]]
    assert enum("Network", {"ID": a["ID"].lower()}) == [a["ID"]]
    assert enum("Network", {"Name": "nope"}) == []
    assert enum("Endpoint", {"VirtualNetwork": b["ID"]}) == [eb["ID"]]
    assert enum("Endpoint", {"VirtualNetworkName": "a"}) == [ea["ID"]]
    assert sorted(json.loads(sim.hcn_enumerate("Endpoint", ""))) == sorted([ea["ID"], eb["ID"]])


def test_hns_assigns_ip_and_mac_when_absent(sim):
    net = create(sim, "Network", l2bridge())
    first = create_ep(sim, net["ID"], endpoint("a", None))
    second = create_ep(sim, net["ID"], endpoint("b", None))
    assert first["IpConfigurations"] == [{"IpAddress": "10.244.1.2", "PrefixLength": 24}]
    assert second["IpConfigurations"][0]["IpAddress"] == "10.244.1.3"
    assert first["MacAddress"] != second["MacAddress"]
    given = create_ep(sim, net["ID"], endpoint("c", "10.244.1.9", MacAddress="0e-2a-0a-f4-01-09"))
    assert given["MacAddress"] == "0E-2A-0A-F4-01-09"


# --- rejections ---------------------------------------------------------------------------------


def _ep_policy(policy: dict) -> dict:
    return endpoint(Policies=[policy])


V2_ENDPOINT_REJECTIONS = [
    ("ip outside subnet", endpoint(ip="10.9.9.9"), 0x803B002F, errors.InvalidAddress),
    ("gateway ip", endpoint(ip="10.244.1.1"), 0x803B002F, errors.InvalidAddress),
    ("network address", endpoint(ip="10.244.1.0"), 0x803B002F, errors.InvalidAddress),
    ("not an ip", endpoint(ip="10.244.1.x"), 0x803B002F, errors.InvalidAddress),
    (
        "v1 OutBoundNAT ExceptionList",
        _ep_policy({"Type": "OutBoundNAT", "ExceptionList": ["10.0.0.0/8"]}),
        0x803B000D,
        errors.InvalidPolicy,
    ),
    (
        "v1 ROUTE",
        _ep_policy({"Type": "ROUTE", "DestinationPrefix": "10.96.0.0/12", "NeedEncap": True}),
        0x803B000D,
        errors.InvalidPolicy,
    ),
    ("v1 PA", _ep_policy({"Type": "PA", "PA": "192.168.1.10"}), 0x803B000D, errors.InvalidPolicy),
    (
        "v1 NAT",
        _ep_policy({"Type": "NAT", "InternalPort": 80, "ExternalPort": 80, "Protocol": "TCP"}),
        0x803B000D,
        errors.InvalidPolicy,
    ),
    ("SDNRoute without Settings", _ep_policy({"Type": "SDNRoute"}), 0x803B000D, errors.InvalidPolicy),
    (
        "ProviderAddress without address",
        _ep_policy({"Type": "ProviderAddress", "Settings": {}}),
        0x803B000D,
        errors.InvalidPolicy,
    ),
    ("policy without Type", _ep_policy({"Settings": {}}), 0x803B000D, errors.InvalidPolicy),
    ("unknown policy type", _ep_policy({"Type": "Bogus", "Settings": {}}), 0x803B000E, errors.InvalidPolicy),
    ("read-only HostComputeNamespace", endpoint(HostComputeNamespace=str(uuid.uuid4())), 0x803B000C, errors.HnsError),
]


@pytest.mark.parametrize(
    "doc,hresult,cls", [c[1:] for c in V2_ENDPOINT_REJECTIONS], ids=[c[0] for c in V2_ENDPOINT_REJECTIONS]
)
def test_v2_endpoint_rejections(sim, doc, hresult, cls):
    net = create(sim, "Network", l2bridge())
    with pytest.raises(cls) as exc:
        create_ep(sim, net["ID"], doc)
    assert exc.value.hresult == hresult
    record = json.loads(exc.value.record)
    assert record["ErrorCode"] == hresult and record["Success"] is False
    assert json.loads(sim.hcn_enumerate("Endpoint", "")) == []  # nothing half-created


def test_ip_already_in_use(sim):
    net = create(sim, "Network", l2bridge())
    create_ep(sim, net["ID"], endpoint("a", "10.244.1.5"))
    with pytest.raises(errors.InvalidAddress) as exc:
        create_ep(sim, net["ID"], endpoint("b", "10.244.1.5"))
    assert exc.value.hresult == 0x803B002F


def test_outbound_nat_without_settings_is_valid_v2(sim):
    net = create(sim, "Network", l2bridge())
    ep = create_ep(sim, net["ID"], _ep_policy({"Type": "OutBoundNAT"}))
    assert ep["Policies"] == [{"Type": "OutBoundNAT"}]


NETWORK_REJECTIONS = [
    ("invalid type", {**l2bridge("x"), "Type": "Bridge"}, 0x803B000B),
    ("no name", {k: v for k, v in l2bridge().items() if k != "Name"}, 0x803B000A),
    ("bad prefix", l2bridge("x", "10.0.0.0/33"), 0x803B0030),
    (
        "v1 VSID subnet policy",
        {
            **l2bridge("x"),
            "Ipams": [
                {
                    "Type": "Static",
                    "Subnets": [{"IpAddressPrefix": "10.3.0.0/24", "Policies": [{"Type": "VSID", "VSID": 4096}]}],
                }
            ],
        },
        0x803B000D,
    ),
    ("unknown network policy", {**l2bridge("x"), "Policies": [{"Type": "Frob", "Settings": {}}]}, 0x803B000E),
]


@pytest.mark.parametrize("doc,hresult", [c[1:] for c in NETWORK_REJECTIONS], ids=[c[0] for c in NETWORK_REJECTIONS])
def test_network_rejections(sim, doc, hresult):
    with pytest.raises(errors.HnsError) as exc:
        create(sim, "Network", doc)
    assert exc.value.hresult == hresult


def test_duplicate_network_name_and_second_nat(sim):
    create(sim, "Network", l2bridge())
    with pytest.raises(errors.AlreadyExists) as exc:
        create(sim, "Network", l2bridge())
    assert exc.value.hresult == 0x803B0010
    create(sim, "Network", {"Name": "nat", "Type": "NAT"})
    with pytest.raises(errors.AlreadyExists) as exc:
        create(sim, "Network", {"Name": "nat2"})  # no Type means NAT
    assert exc.value.hresult == 0x80071392


def test_fixed_guid_twice(sim):
    fixed = str(uuid.uuid4()).upper()
    h = sim.hcn_create("Network", fixed, json.dumps(l2bridge()))
    sim.hcn_close("Network", h)
    with pytest.raises(errors.AlreadyExists) as exc:
        sim.hcn_create("Network", fixed, json.dumps(l2bridge("other", "10.5.0.0/24", "10.5.0.1")))
    assert exc.value.hresult == 0x800700B7


def test_delete_network_with_endpoints(sim):
    """Both APIs delete a network that has endpoints, and its endpoints with it."""
    net = create(sim, "Network", l2bridge())
    create_ep(sim, net["ID"], endpoint())
    sim.hcn_delete("Network", net["ID"])
    assert json.loads(sim.hcn_enumerate("Endpoint", "")) == []
    net = create(sim, "Network", l2bridge())
    create_ep(sim, net["ID"], endpoint())
    assert v1(sim, "DELETE", f"/networks/{net['ID']}")["Success"] is True
    assert json.loads(sim.hcn_enumerate("Endpoint", "")) == []
    assert json.loads(sim.hcn_enumerate("Network", "")) == []


@pytest.mark.parametrize(
    "op,hresult",
    [
        (lambda s, g: s.hcn_open("Network", g), 0x80070490),
        (lambda s, g: s.hcn_open("Endpoint", g), 0x80070490),
        (lambda s, g: s.hcn_open("Namespace", g), 0x80070490),
        (lambda s, g: s.hcn_delete("Network", g), 0x803B0001),
        (lambda s, g: s.hcn_delete("Endpoint", g), 0x803B0002),
        (lambda s, g: s.hcn_delete("Namespace", g), 0x80070490),
        (lambda s, g: s.hcs_open_compute_system(str(g)), 0xC037010E),
    ],
    ids=["open-net", "open-ep", "open-ns", "del-net", "del-ep", "del-ns", "hcs-open"],
)
def test_unknown_ids_are_not_found(sim, op, hresult):
    with pytest.raises(errors.NotFound) as exc:
        op(sim, str(uuid.uuid4()))
    assert exc.value.hresult == hresult


def test_v1_not_found_and_bad_json(sim):
    out = v1(sim, "GET", f"/endpoints/{uuid.uuid4()}")
    assert out == {"Success": False, "Error": "Element not found.", "ErrorCode": 0x80070490}
    assert isinstance(errors.from_v1_error("GET", out["Error"]), errors.NotFound)
    bad = v1(sim, "POST", "/endpoints/", "{not json")
    assert bad["Success"] is False and bad["Error"] == "The parameter is incorrect."
    with pytest.raises(errors.InvalidArgument) as exc:
        sim.hcn_create("Network", None, "{not json")
    assert exc.value.hresult == 0x803B001B


def test_v1_rejects_v2_shaped_policy(sim):
    net = create(sim, "Network", l2bridge())
    for pol, cls in [
        ({"Type": "OutBoundNAT", "Settings": {"Exceptions": []}}, errors.InvalidPolicy),
        ({"Type": "SDNRoute", "DestinationPrefix": "1.0.0.0/8"}, errors.InvalidPolicy),
        ({"Type": "Bogus"}, errors.InvalidPolicy),
    ]:
        out = v1(
            sim,
            "POST",
            "/endpoints/",
            {"Name": "e", "VirtualNetwork": net["ID"], "IPAddress": "10.244.1.9", "Policies": [pol]},
        )
        assert out["Success"] is False
        assert isinstance(errors.from_v1_error("POST", out["Error"]), cls), out
    assert v1(sim, "GET", "/endpoints/")["Output"] == []


# --- attach / detach ----------------------------------------------------------------------------


def _modify_ns(sim, ns_id, action, ep_id):
    h = sim.hcn_open("Namespace", ns_id)
    try:
        sim.hcn_modify(
            "Namespace",
            h,
            json.dumps({"ResourceType": "Endpoint", "RequestType": action, "Settings": {"EndpointId": ep_id}}),
        )
    finally:
        sim.hcn_close("Namespace", h)


def test_namespace_attach_detach(sim):
    net = create(sim, "Network", l2bridge())
    ep = create_ep(sim, net["ID"], endpoint())
    ns = create(sim, "Namespace", {"SchemaVersion": {"Major": 2, "Minor": 0}})
    ns2 = create(sim, "Namespace", {})
    assert ns["Resources"] == [] and ns["NamespaceId"] == 2 and ns2["NamespaceId"] == 3
    _modify_ns(sim, ns["ID"], "Add", ep["ID"].lower())
    h = sim.hcn_open("Namespace", ns["ID"])
    assert json.loads(sim.hcn_query("Namespace", h, ""))["Resources"] == [
        {"Type": "Endpoint", "Data": {"Id": ep["ID"]}}
    ]
    sim.hcn_close("Namespace", h)
    h = sim.hcn_open("Endpoint", ep["ID"])
    assert json.loads(sim.hcn_query("Endpoint", h, ""))["HostComputeNamespace"] == ns["ID"]
    assert json.loads(sim.hcn_query("Endpoint", h, V1_QUERY))["State"] == 2
    sim.hcn_close("Endpoint", h)
    with pytest.raises(errors.AlreadyExists) as exc:
        _modify_ns(sim, ns2["ID"], "Add", ep["ID"])
    assert exc.value.hresult == 0x803B0014
    _modify_ns(sim, ns["ID"], "Remove", ep["ID"])
    with pytest.raises(errors.HnsError) as exc:
        _modify_ns(sim, ns["ID"], "Remove", ep["ID"])
    assert exc.value.hresult == 0x803B0034
    with pytest.raises(errors.NotFound):
        _modify_ns(sim, ns["ID"], "Add", str(uuid.uuid4()))


def test_v1_namespaces_share_the_store(sim):
    net = create(sim, "Network", l2bridge())
    ep = create_ep(sim, net["ID"], endpoint())
    ns = v1(sim, "POST", "/namespaces/", "")["Output"]
    assert ns["IsDefault"] is False and ns["CompartmentId"] == 2
    out = v1(sim, "POST", f"/namespaces/{ns['ID']}/addresource", {"Type": "Endpoint", "Data": {"Id": ep["ID"]}})
    assert out["Output"]["ResourceList"] == [{"Type": "Endpoint", "Data": {"Id": ep["ID"]}}]
    assert v1(sim, "GET", f"/endpoints/{ep['ID']}")["Output"]["Namespace"] == {"ID": ns["ID"]}
    assert v1(sim, "DELETE", f"/namespaces/{ns['ID']}")["Success"]
    assert "Namespace" not in v1(sim, "GET", f"/endpoints/{ep['ID']}")["Output"]


def test_v1_host_attach(sim):
    net = create(sim, "Network", l2bridge())
    ep = v1(sim, "POST", "/endpoints/", {"Name": "cbr0_ep", "VirtualNetwork": net["ID"], "IPAddress": "10.244.1.2"})[
        "Output"
    ]
    body = {"SystemType": "Host", "CompartmentId": 1}
    assert v1(sim, "POST", f"/endpoints/{ep['ID']}/attach", body) == {"Success": True}
    assert v1(sim, "GET", f"/endpoints/{ep['ID']}")["Output"]["State"] == 2
    again = v1(sim, "POST", f"/endpoints/{ep['ID']}/attach", body)
    assert again["Error"] == "This endpoint is already attached to the switch."


def _hcs(sim, container, action, ep_id):
    h = sim.hcs_open_compute_system(container)
    try:
        sim.hcs_modify_compute_system(
            h, json.dumps({"ResourceType": "Network", "RequestType": action, "Settings": ep_id})
        )
    finally:
        sim.hcs_close_compute_system(h)


def test_hcs_hot_attach_shared_endpoint(sim):
    net = create(sim, "Network", l2bridge())
    ep = create_ep(sim, net["ID"], endpoint())
    sim.register_container("pause1")
    sim.register_container("app1")
    _hcs(sim, "pause1", "Add", ep["ID"])
    view = v1(sim, "GET", f"/endpoints/{ep['ID']}")["Output"]
    assert view["SharedContainers"] == ["pause1"] and view["State"] == 2
    with pytest.raises(errors.AlreadyExists) as exc:
        _hcs(sim, "PAUSE1", "Add", ep["ID"])
    assert exc.value.hresult == 0x803B0014
    _hcs(sim, "app1", "Add", ep["ID"])
    assert v1(sim, "GET", f"/endpoints/{ep['ID']}")["Output"]["State"] == 3
    assert v1(sim, "POST", f"/endpoints/{ep['ID']}/detach", {"ContainerId": "app1", "SystemType": "Container"}) == {
        "Success": True
    }
    _hcs(sim, "pause1", "Remove", ep["ID"])
    view = v1(sim, "GET", f"/endpoints/{ep['ID']}")["Output"]
    assert view["SharedContainers"] == [] and view["State"] == 4
    sim.remove_container("app1")
    with pytest.raises(errors.NotFound):
        sim.hcs_open_compute_system("app1")


def test_hcs_properties_of_a_container(sim):
    """What hcsshim reads before a V1 hot-attach (the Go reference plugins under the Wine lane)."""
    sim.register_container("pause1")
    h = sim.hcs_open_compute_system("pause1")
    props = json.loads(sim.hcs_get_compute_system_properties(h, '{"PropertyTypes":null}'))
    assert props == {"Id": "pause1", "SystemType": "Container", "RuntimeOsType": "windows", "State": "Running"}
    sim.hcs_close_compute_system(h)
    with pytest.raises(errors.HnsError) as exc:
        sim.hcs_get_compute_system_properties(h, "")
    assert exc.value.hresult == 0x80070006  # E_HANDLE


def test_closed_handle_is_invalid_and_counted(sim):
    net = create(sim, "Network", l2bridge())
    h = sim.hcn_open("Network", net["ID"])
    assert sim.open_handles == 1
    sim.hcn_close("Network", h)
    sim.hcn_close("Network", h)  # closing twice never raises
    assert sim.open_handles == 0
    with pytest.raises(errors.HnsError) as exc:
        sim.hcn_query("Network", h, "")
    assert exc.value.hresult == 0x80070006


def test_modify_network_policies(sim):
    net = create(sim, "Network", overlay())
    h = sim.hcn_open("Network", net["ID"])
    req = {
        "ResourceType": "Policy",
        "RequestType": "Add",
        "Settings": {
            "Policies": [
                {
                    "Type": "RemoteSubnetRoute",
                    "Settings": {
                        "DestinationPrefix": "10.244.3.0/24",
                        "IsolationId": 4096,
                        "ProviderAddress": "192.168.1.11",
                        "DistributedRouterMacAddress": "0E-2A-0A-F4-03-01",
                    },
                }
            ]
        },
    }
    sim.hcn_modify("Network", h, json.dumps(req))
    with pytest.raises(errors.AlreadyExists):
        sim.hcn_modify("Network", h, json.dumps(req))
    doc = json.loads(sim.hcn_query("Network", h, ""))
    assert doc["Policies"][-1]["Type"] == "RemoteSubnetRoute"
    sim.hcn_modify("Network", h, json.dumps({**req, "RequestType": "Remove"}))
    sim.hcn_close("Network", h)


# --- the kinds, without the simulator ------------------------------------------------------------


def hand_state(data: dict | None = None):
    from libhns.sim.kinds import KINDS
    from libhns.sim.state import HnsState

    return HnsState(data if data is not None else {}, KINDS)


def test_a_kind_runs_on_a_state_built_by_hand():
    """HNS's rules live on the record classes, so a test can drive one without the store."""
    from libhns.sim.endpoint import ATTACHED, CREATED, DETACHED, Endpoint
    from libhns.sim.namespace import Namespace
    from libhns.sim.network import Network

    st = hand_state()
    net = Network.create(st, l2bridge(prefix="10.9.0.0/29", gw="10.9.0.1"))
    assert net.mgmt_ip == "10.127.130.36" and net.v1(st)["CurrentEndpointCount"] == 0
    first = Endpoint.create(st, net.id, {"Name": "a"})
    assert first.ips() == ["10.9.0.2"]  # .0 network, .1 gateway reserved: the first free one
    assert first.state() == CREATED and first.v2(st)["State"] == CREATED
    ns = Namespace.create(st, {})
    ns.add_endpoint(first)
    assert first.state() == ATTACHED and first.v1(st)["Namespace"] == {"ID": ns.id}
    ns.remove_endpoint(first)
    assert first.state() == DETACHED and ns.doc["Resources"] == []
    st.delete("Endpoint", first.id)
    st.delete("Network", net.id)
    assert st.table("Network") == {} and st.table("Endpoint") == {}


def test_deleting_a_network_deletes_its_endpoints_and_detaches_them():
    from libhns.sim.endpoint import Endpoint
    from libhns.sim.namespace import Namespace
    from libhns.sim.network import Network

    st = hand_state()
    net = Network.create(st, l2bridge(prefix="10.9.0.0/29", gw="10.9.0.1"))
    other = Network.create(st, l2bridge(name="other", prefix="10.9.1.0/29", gw="10.9.1.1"))
    ns = Namespace.create(st, {})
    ns.add_endpoint(Endpoint.create(st, net.id, {"Name": "pod"}))
    kept = Endpoint.create(st, other.id, {"Name": "kept"})
    st.delete("Network", net.id)
    assert list(st.table("Network").values()) == [other] and list(st.table("Endpoint").values()) == [kept]
    assert ns.doc["Resources"] == []


def test_records_dump_to_the_stored_json_and_load_back(sim, tmp_path):
    net = create(sim, "Network", l2bridge())
    ep = create_ep(sim, net["ID"], endpoint())
    ns = create(sim, "Namespace", {"SchemaVersion": {"Major": 2, "Minor": 0}})
    sim.register_container("pause1")
    v1(sim, "POST", f"/endpoints/{ep['ID']}/attach", {"SystemType": "Container", "ContainerId": "pause1"})
    stored = json.loads((tmp_path / "hns" / "state.json").read_text())
    st = hand_state(json.loads(json.dumps(stored)))
    for kind in ("Network", "Endpoint", "Namespace", "ComputeSystem"):
        assert st.table(kind)  # every table loads into records
    assert st.get("Endpoint", ep["ID"].lower()).shared == ["pause1"]
    assert st.get("ComputeSystem", "PAUSE1").endpoints == [ep["ID"]]
    assert st.get("Namespace", ns["ID"]).doc["Type"] == "Host"
    assert st.dump() == stored  # unchanged records write back what was read


# --- faults -------------------------------------------------------------------------------------


def test_fault_syntax():
    faults = parse_faults(
        "HcnCreateEndpoint=0x803B000D, HcnModifyNamespace#2=2147943568,HNSCall:POST /endpoints/*/attach#1=0x803B0014"
    )
    assert [(f.target, f.hresult, f.nth) for f in faults] == [
        ("HcnCreateEndpoint", 0x803B000D, None),
        ("HcnModifyNamespace", 0x80070490, 2),
        ("HNSCall:POST /endpoints/*/attach", 0x803B0014, 1),
    ]
    assert faults[2].matches("HNSCall", "POST", "/endpoints/AB/attach")
    assert not faults[2].matches("HNSCall", "POST", "/endpoints/")
    for bad in ("HcnCreateEndpoint", "X=zz", "X#0=1", "=1"):
        with pytest.raises(ValueError):
            parse_faults(bad)


def test_fault_every_call_changes_nothing(tmp_path):
    s = Simulator(tmp_path, faults="HcnCreateEndpoint=0x803B000D")
    net = create(s, "Network", l2bridge())
    for _ in range(2):
        with pytest.raises(errors.InvalidPolicy) as exc:
            create_ep(s, net["ID"], endpoint())
        assert exc.value.hresult == 0x803B000D
    assert json.loads(s.hcn_enumerate("Endpoint", "")) == []


def test_fault_nth_call_counted_across_instances(tmp_path):
    env = {"LIBHNS_SIM_DIR": str(tmp_path), "LIBHNS_SIM_FAULTS": "HcnOpenNamespace#2=0x80070490"}
    first, second = Simulator.from_env(env), Simulator.from_env(env)
    ns = create(first, "Namespace", {})
    first.hcn_close("Namespace", first.hcn_open("Namespace", ns["ID"]))  # call 1
    with pytest.raises(errors.NotFound):
        second.hcn_open("Namespace", ns["ID"])  # call 2
    first.hcn_close("Namespace", first.hcn_open("Namespace", ns["ID"]))  # call 3
    first.reset_fault_counters()
    first.hcn_close("Namespace", first.hcn_open("Namespace", ns["ID"]))  # call 1 again
    with pytest.raises(errors.NotFound):
        first.hcn_open("Namespace", ns["ID"])


def test_fault_on_hnscall_path(tmp_path):
    s = Simulator(tmp_path, faults="HNSCall:POST /endpoints/=0x803B002F")
    net = create(s, "Network", l2bridge())
    out = v1(s, "POST", "/endpoints/", {"Name": "e", "VirtualNetwork": net["ID"]})
    assert out == {"Success": False, "Error": "An address provided is invalid or reserved.", "ErrorCode": 0x803B002F}
    assert v1(s, "GET", "/endpoints/")["Output"] == []


def test_fault_on_hcs(tmp_path):
    s = Simulator(tmp_path, faults="HcsModifyComputeSystem=0x80070005")
    s.register_container("c")
    h = s.hcs_open_compute_system("c")
    with pytest.raises(errors.AccessDenied):
        s.hcs_modify_compute_system(h, "{}")
    s.hcs_close_compute_system(h)


# --- concurrency --------------------------------------------------------------------------------

_WORKER = textwrap.dedent("""
    import json, sys, uuid
    from libhns.sim import Simulator
    sim = Simulator(sys.argv[1])
    net = sys.argv[2]
    for i in range(10):
        n = sim.hcn_open("Network", net)
        e = sim.hcn_create("Endpoint", None, json.dumps({"Name": f"{sys.argv[3]}-{i}"}), n)
        sim.hcn_close("Endpoint", e)
        sim.hcn_close("Network", n)
""")


@pytest.mark.slow
def test_concurrent_writers_from_processes(tmp_path):
    sim = Simulator(tmp_path)
    net = create(sim, "Network", l2bridge(prefix="10.8.0.0/16", gw="10.8.0.1"))
    procs = [
        subprocess.Popen([sys.executable, "-c", _WORKER, str(tmp_path), net["ID"], f"w{i}"], cwd=REPO) for i in range(8)
    ]
    assert [p.wait(timeout=60) for p in procs] == [0] * 8
    state = json.loads((tmp_path / "state.json").read_text())  # a valid store
    eps = list(state["endpoints"].values())
    assert len(eps) == 80
    assert len({e["doc"]["Name"] for e in eps}) == 80
    assert len({e["doc"]["IpConfigurations"][0]["IpAddress"] for e in eps}) == 80
    assert len({e["doc"]["MacAddress"] for e in eps}) == 80
    assert len(v1(sim, "GET", "/endpoints/")["Output"]) == 80
    assert not list(tmp_path.glob("*.tmp"))


# --- what the Go reference plugins sent is accepted ---------------------------------------------

from testdata import GOLDENS


def test_golden_requests_are_accepted(tmp_path):
    replayed = 0
    for path in sorted(GOLDENS.glob("*.json")):
        case = json.loads(path.read_text())
        steps = [s for s in case.get("steps", []) if s.get("hns_state_before")]
        if not steps:
            continue
        sim = Simulator(tmp_path / path.stem)
        for net in steps[0]["hns_state_before"]["networks"]:
            v2 = dict(net["v2"])
            if v2["Name"] == "vxlan0":  # HNS would add these itself
                v2["Policies"] = [p for p in v2["Policies"] if p["Type"] == "NetAdapterName"] + [
                    {"Type": "ProviderAddress", "Settings": {"ProviderAddress": "192.168.1.10"}}
                ]
            sim.hcn_close("Network", sim.hcn_create("Network", net["ID"], json.dumps(v2)))
        for step in steps:
            for call in step["calls"]:
                if call["fn"] == "HcnCreateEndpoint":
                    settings = json.loads(call["args"]["settings"])
                    created = create_ep(sim, settings["HostComputeNetwork"], settings)
                    sim.hcn_delete("Endpoint", created["ID"])
                    replayed += 1
                elif (
                    call["fn"] == "HNSCall"
                    and call["args"]["method"] == "POST"
                    and call["args"]["path"] == "/endpoints/"
                ):
                    out = v1(sim, "POST", "/endpoints/", call["args"]["request"])
                    assert out["Success"], (path.name, out)
                    v1(sim, "DELETE", f"/endpoints/{out['Output']['ID']}")
                    replayed += 1
    assert replayed >= 5


def test_fault_range_fails_the_first_calls_then_answers(tmp_path):
    s = Simulator(tmp_path, faults="HcnEnumerateEndpoints#1-2=0x800706BA")
    for _ in range(2):
        with pytest.raises(errors.HnsError) as exc:
            s.hcn_enumerate("Endpoint", "")
        assert exc.value.hresult == 0x800706BA and exc.value.name == "RPC_S_SERVER_UNAVAILABLE"
    assert json.loads(s.hcn_enumerate("Endpoint", "")) == []


def test_fault_hang_blocks_then_answers(tmp_path):
    import time

    s = Simulator(tmp_path, faults="HcnEnumerateNetworks=hang:0.3")
    start = time.monotonic()
    assert json.loads(s.hcn_enumerate("Network", "")) == []
    assert time.monotonic() - start >= 0.3


@pytest.mark.parametrize("what, live", [("stale-ip", False), ("live-ip", True)])
def test_fault_plants_a_previous_sandboxs_endpoint_on_the_requested_address(tmp_path, what, live):
    s = Simulator(tmp_path, faults=f"HcnCreateEndpoint#1={what},HNSCall:POST /endpoints/#1={what}")
    net = create(s, "Network", l2bridge())
    with pytest.raises(errors.InvalidAddress):
        create_ep(s, net["ID"], endpoint("pod_cbr0", "10.244.1.5"))
    [planted] = [e for e in json.loads(s.hns_call("GET", "/endpoints/", ""))["Output"]]
    assert planted["Name"].startswith("previous-") and planted["Name"].endswith("_cbr0")
    assert planted["IPAddress"] == "10.244.1.5" and bool(planted.get("Namespace")) == live
    out = v1(s, "POST", "/endpoints/", {"Name": "v1pod_cbr0", "VirtualNetwork": net["ID"], "IPAddress": "10.244.1.6"})
    assert out["Success"] is False and len(v1(s, "GET", "/endpoints/")["Output"]) == 2
