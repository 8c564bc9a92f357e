"""The simulated node's host adapters: a network bound to one reports that adapter's address."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from libhns import errors
from libhns.sim import Simulator
from libhns.sim.adapters import DEFAULT_MANAGEMENT_IP, parse_adapters

V1_QUERY = json.dumps({"SchemaVersion": {"Major": 1, "Minor": 0}})
NAMES = st.text(st.characters(blacklist_characters=",=", blacklist_categories=("Cs", "Cc", "Zs")), min_size=1).filter(
    lambda n: n == n.strip()
)
ADDRESSES = st.ip_addresses(v=4).map(str)


@given(st.lists(st.tuples(NAMES, ADDRESSES), max_size=4))
def test_adapters_parse_back_from_their_text(pairs):
    assert parse_adapters(",".join(f"{n}={a}" for n, a in pairs)) == tuple(pairs)


@pytest.mark.parametrize("text", ["Ethernet", "=192.0.2.2", "Ethernet=", "Ethernet=fe80::1", "Ethernet=192.0.2.300"])
def test_a_bad_adapter_entry_is_an_env_error_naming_the_variable(text):
    with pytest.raises(errors.EnvError, match="LIBHNS_SIM_ADAPTERS"):
        parse_adapters(text)


def sim(tmp_path, adapters: str = "") -> Simulator:
    return Simulator.from_env({"LIBHNS_SIM_DIR": str(tmp_path / "hns"), "LIBHNS_SIM_ADAPTERS": adapters})


def v2_network(sim: Simulator, doc: dict) -> dict:
    h = sim.hcn_create("Network", None, json.dumps({"SchemaVersion": {"Major": 2, "Minor": 0}, **doc}), None)
    try:
        return json.loads(sim.hcn_query("Network", h, "{}"))
    finally:
        sim.hcn_close("Network", h)


def overlay(adapter: str | None) -> dict:
    """flanneld's vxlan network, NetAdapterName naming its --iface's interface."""
    doc = {
        "Name": "flannel.4096",
        "Type": "Overlay",
        "Flags": 8,
        "Ipams": [{"Type": "Static", "Subnets": [{"IpAddressPrefix": "10.244.93.0/24"}]}],
    }
    if adapter:
        doc["Policies"] = [{"Type": "NetAdapterName", "Settings": {"NetworkAdapterName": adapter}}]
    return doc


def provider_address(net: dict) -> str:
    return next(p["Settings"]["ProviderAddress"] for p in net["Policies"] if p["Type"] == "ProviderAddress")


def test_an_overlay_on_a_named_adapter_has_that_adapters_address(tmp_path):
    node = sim(tmp_path, "lo=127.0.0.1,v0=192.0.2.2")
    assert provider_address(v2_network(node, overlay("V0"))) == "192.0.2.2"


def test_a_network_naming_no_adapter_is_on_the_first_one(tmp_path):
    """flanneld's host-gw cbr0 is a V1 L2Bridge without NetworkAdapterName: HNS binds the default."""
    node = sim(tmp_path, "v0=192.0.2.2,v1=198.51.100.1")
    out = node.hns_call("POST", "/networks/", json.dumps({"Name": "cbr0", "Type": "L2Bridge"}))
    assert json.loads(out)["Output"]["ManagementIP"] == "192.0.2.2"
    assert provider_address(v2_network(node, overlay(None))) == "192.0.2.2"


def test_an_adapter_the_node_lacks_is_refused_as_hns_refuses_it(tmp_path):
    node = sim(tmp_path, "v0=192.0.2.2")
    with pytest.raises(errors.HnsError) as caught:
        v2_network(node, overlay("Ethernet"))
    assert caught.value.hresult == errors.HCN_E_ADAPTER_NOT_FOUND
    out = json.loads(
        node.hns_call(
            "POST", "/networks/", json.dumps({"Name": "b", "Type": "L2Bridge", "NetworkAdapterName": "Ethernet"})
        )
    )
    assert out["Success"] is False and json.loads(node.hcn_enumerate("Network", "{}")) == []


def test_without_adapters_every_name_is_the_default_address(tmp_path):
    node = sim(tmp_path)
    assert provider_address(v2_network(node, overlay("Ethernet"))) == DEFAULT_MANAGEMENT_IP


def test_a_requested_management_address_still_wins(tmp_path):
    node = sim(tmp_path, "v0=192.0.2.2")
    doc = overlay("v0")
    doc["Policies"].append({"Type": "ProviderAddress", "Settings": {"ProviderAddress": "203.0.113.9"}})
    assert provider_address(v2_network(node, doc)) == "203.0.113.9"
