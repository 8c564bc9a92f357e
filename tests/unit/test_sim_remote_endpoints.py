"""Remote endpoints, kube-proxy's kind of endpoint: another node's pod, or a Service VIP on an
Overlay network (EndpointFlags RemoteEndpoint = 1, V1 IsRemoteEndpoint)."""

from __future__ import annotations

import json

import pytest

from libhns import errors
from libhns.sim import Simulator
from test_sim import create, create_ep, endpoint, overlay, v1
from testdata import REALHNS

REMOTE = 1


@pytest.fixture
def sim(tmp_path) -> Simulator:
    return Simulator(tmp_path / "hns")


def _remote(ip: str, **extra) -> dict:
    """What kube-proxy's hns.go createEndpoint sends (hnslib CreateRemoteEndpoint sets the flag)."""
    mac = "02-11-" + "-".join(f"{int(b):02x}" for b in ip.split("."))
    return endpoint("", ip, MacAddress=mac, Flags=REMOTE, **extra)


def test_a_service_vip_outside_the_networks_subnets_is_a_remote_endpoint(sim):
    """kube-proxy on Overlay makes a remote endpoint for each Service VIP (10.96.0.0/12 here, the
    pods' subnet being 10.244.2.0/24); a local endpoint there is still refused."""
    net = create(sim, "Network", overlay())
    ep = create_ep(sim, net["ID"], _remote("10.96.0.10"))
    assert ep["IpConfigurations"] == [{"IpAddress": "10.96.0.10"}] and ep["Flags"] == REMOTE
    assert ep["MacAddress"] == "02-11-0A-60-00-0A"
    view = v1(sim, "GET", f"/endpoints/{ep['ID']}")["Output"]
    assert view["IsRemoteEndpoint"] is True and view["IPAddress"] == "10.96.0.10"
    with pytest.raises(errors.InvalidAddress, match="not in a subnet"):
        create_ep(sim, net["ID"], endpoint("local", "10.96.0.11"))


def test_another_nodes_pod_with_its_provider_address(sim):
    net = create(sim, "Network", overlay())
    pa = {"Type": "ProviderAddress", "Settings": {"ProviderAddress": "192.0.2.7"}}
    ep = create_ep(sim, net["ID"], _remote("10.244.7.5", Policies=[pa]))
    assert ep["Policies"] == [pa]
    assert v1(sim, "GET", f"/endpoints/{ep['ID']}")["Output"]["Policies"] == [{"Type": "PA", "PA": "192.0.2.7"}]


def test_v1_remote_endpoint_outside_the_subnets(sim):
    net = create(sim, "Network", overlay())
    pa = [{"Type": "PA", "PA": "192.0.2.9"}]
    body = {"VirtualNetwork": net["ID"], "IPAddress": "10.244.9.3", "IsRemoteEndpoint": True, "Policies": pa}
    out = v1(sim, "POST", "/endpoints/", body)
    assert out["Success"], out
    assert out["Output"]["IsRemoteEndpoint"] is True


@pytest.mark.parametrize("first_remote", [True, False])
def test_a_local_and_a_remote_endpoint_may_hold_one_address(sim, first_remote):
    """kubernetes#130963: Windows Server 2019/2022 hold both, in either order."""
    net = create(sim, "Network", overlay())
    local, remote = endpoint("pod", "10.244.2.5"), _remote("10.244.2.5")
    for doc in (remote, local) if first_remote else (local, remote):
        create_ep(sim, net["ID"], doc)
    assert len(v1(sim, "GET", "/endpoints/")["Output"]) == 2


def test_two_local_endpoints_of_one_address_are_still_refused(sim):
    net = create(sim, "Network", overlay())
    create_ep(sim, net["ID"], _remote("10.244.2.5"))
    create_ep(sim, net["ID"], endpoint("a", "10.244.2.5"))
    with pytest.raises(errors.InvalidAddress, match="already in use"):
        create_ep(sim, net["ID"], endpoint("b", "10.244.2.5"))


def test_an_address_hns_assigns_is_not_a_remote_endpoints(sim):
    net = create(sim, "Network", overlay())
    create_ep(sim, net["ID"], _remote("10.244.2.2"))
    assert create_ep(sim, net["ID"], endpoint("pod", None))["IpConfigurations"][0]["IpAddress"] == "10.244.2.3"


def test_the_captured_remote_endpoint_is_made_again_through_v1(sim):
    """A real node's remote endpoint (HNS 5.1, flannel's vxlan0): its address lies in the
    cluster's /16 but outside this node's lease; posted back, HNS's answer carries it."""
    captured = json.loads((REALHNS / "07-v1-endpoint-remote-overlay-pa-flannel-fixture.json").read_bytes())
    create(sim, "Network", overlay("vxlan0"))
    keys = ("ID", "IPAddress", "IsRemoteEndpoint", "MacAddress", "Name", "Policies", "PrefixLength")
    request = {**{k: captured[k] for k in keys}, "VirtualNetworkName": "vxlan0"}
    out = v1(sim, "POST", "/endpoints/", request)
    assert out["Success"], out
    made = out["Output"]
    assert made["ID"].lower() == captured["ID"] and made["MacAddress"].upper() == captured["MacAddress"].upper()
    assert {k: made[k] for k in keys if k not in ("ID", "MacAddress")} == {
        k: captured[k] for k in keys if k not in ("ID", "MacAddress")
    }
