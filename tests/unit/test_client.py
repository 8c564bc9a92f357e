"""HcnClient and HnsCallClient against the simulator: results, errors, and the exact raw calls each operation makes."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from libhns import errors
from libhns.client import Features, HcnClient, HnsCallClient, host_compute_query, open_clients
from libhns.objects import HNSEndpoint
from libhns.raw import hcn_function
from libhns.sim import Simulator


class Recorder:
    """A RawHns that forwards to another and records each call as (export, detail)."""

    def __init__(self, inner: Simulator) -> None:
        self.inner = inner
        self.calls: list[tuple[str, Any]] = []

    def take(self) -> list[tuple[str, Any]]:
        calls, self.calls = self.calls, []
        return calls

    def names(self) -> list[str]:
        return [c[0] for c in self.take()]

    def hcn_enumerate(self, kind, query):
        self.calls.append((hcn_function("Enumerate", kind), json.loads(query)))
        return self.inner.hcn_enumerate(kind, query)

    def hcn_create(self, kind, id, settings, network=None):
        self.calls.append((hcn_function("Create", kind), json.loads(settings)))
        return self.inner.hcn_create(kind, id, settings, network)

    def hcn_open(self, kind, id):
        self.calls.append((hcn_function("Open", kind), str(id).upper()))
        return self.inner.hcn_open(kind, id)

    def hcn_modify(self, kind, handle, settings):
        self.calls.append((hcn_function("Modify", kind), json.loads(settings)))
        return self.inner.hcn_modify(kind, handle, settings)

    def hcn_query(self, kind, handle, query):
        self.calls.append((hcn_function("Query", kind), json.loads(query)))
        return self.inner.hcn_query(kind, handle, query)

    def hcn_delete(self, kind, id):
        self.calls.append((hcn_function("Delete", kind), str(id).upper()))
        return self.inner.hcn_delete(kind, id)

    def hcn_close(self, kind, handle):
        self.calls.append((hcn_function("Close", kind), None))
        return self.inner.hcn_close(kind, handle)

    def hns_call(self, method, path, request):
        self.calls.append(("HNSCall", f"{method} {path}"))
        return self.inner.hns_call(method, path, request)

    def hcs_open_compute_system(self, id):
        self.calls.append(("HcsOpenComputeSystem", id))
        return self.inner.hcs_open_compute_system(id)

    def hcs_modify_compute_system(self, handle, configuration):
        self.calls.append(("HcsModifyComputeSystem", json.loads(configuration)))
        return self.inner.hcs_modify_compute_system(handle, configuration)

    def hcs_close_compute_system(self, handle):
        self.calls.append(("HcsCloseComputeSystem", None))
        return self.inner.hcs_close_compute_system(handle)


NET = {
    "Name": "cbr0",
    "Type": "L2Bridge",
    "Ipams": [
        {
            "Type": "Static",
            "Subnets": [
                {
                    "IpAddressPrefix": "10.244.1.0/24",
                    "Routes": [{"NextHop": "10.244.1.1", "DestinationPrefix": "0.0.0.0/0"}],
                }
            ],
        }
    ],
}


@pytest.fixture
def sim(tmp_path: Path) -> Simulator:
    return Simulator(tmp_path)


@pytest.fixture
def rec(sim: Simulator) -> Recorder:
    return Recorder(sim)


@pytest.fixture
def client(rec: Recorder) -> HcnClient:
    return HcnClient(rec)


@pytest.fixture
def hnscall(rec: Recorder) -> HnsCallClient:
    return HnsCallClient(rec)


@pytest.fixture
def net(client: HcnClient, rec: Recorder):
    n = client.create_network(NET)
    rec.take()
    return n


def test_version_cached_and_features(hnscall, rec):
    assert hnscall.version() == (13, 2)
    assert hnscall.version() == (13, 2)
    assert rec.take() == [("HNSCall", "GET /globals/version")]
    f = hnscall.features()
    assert f.v2_api and f.dsr and f.dual_stack and not f.tier_acl
    assert rec.take() == []


@pytest.mark.parametrize(
    "version,expect",
    [
        ((9, 1), {"v2_api": False, "dsr": False}),
        ((9, 3), {"v2_api": True, "dsr": True, "vxlan_port": False}),
        ((10, 1), {"dsr": False, "remote_subnet": True}),
        ((10, 3), {"vxlan_port": True, "dsr": True, "dual_stack": False}),
        ((11, 10), {"dual_stack": True, "l4_proxy": False}),
        ((13, 2), {"l4_wfp_proxy": True, "session_affinity": True, "tier_acl": False}),
        ((15, 4), {"modify_loadbalancer": True, "accelnet": True}),
    ],
)
def test_feature_table(version, expect):
    got = Features.for_version(version).as_dict()
    assert {k: got[k] for k in expect} == expect
    assert got["api_v1"]


def test_host_compute_query_filter_is_a_string():
    q = json.loads(host_compute_query({"Name": "cbr0"}))
    assert q == {"SchemaVersion": {"Major": 2, "Minor": 0}, "Filter": '{"Name":"cbr0"}'}


def test_create_network_calls(client, rec):
    n = client.create_network(NET)
    assert n.name == "cbr0" and n.subnets[0].gateway == "10.244.1.1"
    calls = rec.take()
    assert [c[0] for c in calls] == ["HcnCreateNetwork", "HcnQueryNetworkProperties", "HcnCloseNetwork"]
    assert calls[0][1]["SchemaVersion"] == {"Major": 2, "Minor": 0}


def test_get_network_by_name_uses_a_filter(client, rec, net):
    got = client.get_network_by_name("cbr0")
    assert got is not None and got.id == net.id
    calls = rec.take()
    assert [c[0] for c in calls] == ["HcnEnumerateNetworks", "HcnOpenNetwork", "HcnQueryNetworkProperties"]
    assert json.loads(calls[0][1]["Filter"]) == {"Name": "cbr0"}
    assert client.get_network_by_name("nope") is None
    assert rec.names() == ["HcnEnumerateNetworks"]
    client.close()  # the handle kept for create_endpoint
    assert rec.names() == ["HcnCloseNetwork"]


def test_network_found_by_name_is_opened_once_for_create_endpoint(client, rec, sim, net):
    """A V2 ADD: look the network up, create the endpoint on the same handle, close it once."""
    client.get_network_by_name("cbr0")
    client.create_endpoint(net.id, {"Name": "a"})
    assert rec.names() == [
        "HcnEnumerateNetworks",
        "HcnOpenNetwork",
        "HcnQueryNetworkProperties",
        "HcnCreateEndpoint",
        "HcnQueryEndpointProperties",
        "HcnCloseEndpoint",
        "HcnCloseNetwork",
    ]
    client.close()
    assert rec.names() == [] and sim.open_handles == 0


def test_get_network_by_id(client, rec, net):
    assert client.get_network(net.id.lower()).name == "cbr0"
    assert rec.names() == ["HcnOpenNetwork", "HcnQueryNetworkProperties", "HcnCloseNetwork"]
    assert client.get_network(str(uuid.uuid4())) is None
    assert rec.names() == ["HcnOpenNetwork"]


def test_create_endpoint_calls(client, rec, sim, net):
    ep = client.create_endpoint(net.id, {"Name": "c1_cbr0", "IpConfigurations": [{"IpAddress": "10.244.1.5"}]})
    assert ep.ip_addresses == ["10.244.1.5"] and ep.prefix_length == 24
    assert ep.network_id == net.id and ep.mac.startswith("00-15-5D")
    calls = rec.take()
    assert [c[0] for c in calls] == [
        "HcnOpenNetwork",
        "HcnCreateEndpoint",
        "HcnQueryEndpointProperties",
        "HcnCloseEndpoint",
        "HcnCloseNetwork",
    ]
    assert calls[1][1]["HostComputeNetwork"] == net.id
    assert sim.open_handles == 0


def test_create_endpoint_failure_closes_network(client, rec, sim, net):
    with pytest.raises(errors.InvalidAddress):
        client.create_endpoint(net.id, {"Name": "x", "IpConfigurations": [{"IpAddress": "9.9.9.9"}]})
    assert rec.names() == ["HcnOpenNetwork", "HcnCreateEndpoint", "HcnCloseNetwork"]
    assert sim.open_handles == 0


def test_endpoint_getters_and_delete(client, rec, net):
    ep = client.create_endpoint(net.id, {"Name": "a"})
    rec.take()
    assert client.get_endpoint_by_name("a").id == ep.id
    assert rec.names() == ["HcnEnumerateEndpoints", "HcnOpenEndpoint", "HcnQueryEndpointProperties", "HcnCloseEndpoint"]
    assert client.get_endpoint(ep.id).name == "a"
    rec.take()
    assert [e.id for e in client.list_endpoints(net.id)] == [ep.id]
    calls = rec.take()
    assert json.loads(calls[0][1]["Filter"]) == {"VirtualNetwork": net.id}
    assert client.delete_endpoint(ep.id) is True
    assert rec.names() == ["HcnDeleteEndpoint"]
    with pytest.raises(errors.NotFound):
        client.delete_endpoint(ep.id)
    assert client.delete_endpoint(ep.id, missing_ok=True) is False
    assert client.get_endpoint_by_name("a") is None


def test_namespace_attach_detach_calls(client, rec, net):
    ep = client.create_endpoint(net.id, {"Name": "a"})
    ns = client.create_namespace()
    assert ns.compartment_id == 2 and ns.endpoint_ids == []
    rec.take()
    client.namespace_add_endpoint(ns.id, ep.id.lower())
    calls = rec.take()
    assert [c[0] for c in calls] == ["HcnOpenNamespace", "HcnModifyNamespace", "HcnCloseNamespace"]
    assert calls[1][1] == {"ResourceType": "Endpoint", "RequestType": "Add", "Settings": {"EndpointId": ep.id}}
    assert client.get_endpoint(ep.id).namespace_id == ns.id
    assert client.get_namespace(ns.id).has_endpoint(ep.id)
    with pytest.raises(errors.AlreadyExists):
        client.namespace_add_endpoint(ns.id, ep.id)
    rec.take()
    client.namespace_remove_endpoint(ns.id, ep.id)
    assert rec.names() == ["HcnOpenNamespace", "HcnModifyNamespace", "HcnCloseNamespace"]
    assert client.get_endpoint(ep.id).namespace_id is None
    assert [n.id for n in client.list_namespaces()] == [ns.id]
    assert client.delete_namespace(ns.id) and client.get_namespace(ns.id) is None


def test_delete_network_in_use(client, net):
    """HNS deletes a network's endpoints with it."""
    client.create_endpoint(net.id, {"Name": "a"})
    client.delete_network(net.id)
    assert client.list_networks() == [] and client.list_endpoints() == []


def test_v1_network_lookup_is_one_call(hnscall, rec, net):
    got = hnscall.get_network_by_name("cbr0")
    assert got.id == net.id and got.is_type("L2Bridge") and got.type == "l2bridge"
    assert rec.take() == [("HNSCall", "GET /networks/")]
    assert hnscall.get_network(net.id).name == "cbr0"
    assert rec.take() == [("HNSCall", f"GET /networks/{net.id}")]
    assert hnscall.get_network(str(uuid.uuid4())) is None


def test_v1_endpoint_lifecycle(hnscall, rec, sim, net):
    ep = hnscall.create_endpoint(
        {"Name": "c_cbr0", "VirtualNetwork": net.id, "IPAddress": "10.244.1.3", "GatewayAddress": "10.244.1.2"}
    )
    assert rec.take() == [("HNSCall", "POST /endpoints/")]
    assert ep.prefix_length == 24 and ep.gateway == "10.244.1.2"
    assert hnscall.get_endpoint_by_name("c_cbr0").id == ep.id
    assert rec.take() == [("HNSCall", "GET /endpoints/")]
    assert [e.id for e in hnscall.list_endpoints(net.id.lower())] == [ep.id]
    assert hnscall.list_endpoints(str(uuid.uuid4())) == []
    rec.take()

    sim.register_container("pause")
    assert hnscall.hot_attach("pause", ep.id) is True
    calls = rec.take()
    assert [c[0] for c in calls] == [
        "HNSCall",
        "HcsOpenComputeSystem",
        "HcsModifyComputeSystem",
        "HcsCloseComputeSystem",
    ]
    assert calls[2][1] == {"ResourceType": "Network", "RequestType": "Add", "Settings": ep.id}
    fresh = hnscall.get_endpoint(ep.id)
    rec.take()
    assert hnscall.hot_attach("PAUSE", ep.id, endpoint=fresh) is False  # already attached: no call at all
    assert rec.take() == []

    sim.register_container("app")
    hnscall.hot_attach("app", ep.id, fresh)
    assert [c[0] for c in rec.take()] == ["HcsOpenComputeSystem", "HcsModifyComputeSystem", "HcsCloseComputeSystem"]
    hnscall.container_detach("app", ep.id)
    assert rec.take() == [("HNSCall", f"POST /endpoints/{ep.id}/detach")]
    assert hnscall.hot_detach("app", ep.id, hnscall.get_endpoint(ep.id)) is False
    rec.take()
    assert hnscall.hot_detach("pause", ep.id) is True
    assert [c[0] for c in rec.take()] == ["HcsOpenComputeSystem", "HcsModifyComputeSystem", "HcsCloseComputeSystem"]
    assert hnscall.get_endpoint(ep.id).shared_containers == []
    assert hnscall.delete_endpoint(ep.id) is True
    assert hnscall.delete_endpoint(ep.id, missing_ok=True) is False
    assert hnscall.get_endpoint(ep.id) is None
    assert sim.open_handles == 0


def test_v1_hot_attach_missing_container(hnscall, sim, net):
    ep = hnscall.create_endpoint({"Name": "e", "VirtualNetwork": net.id})
    with pytest.raises(errors.NotFound) as exc:
        hnscall.hot_attach("gone", ep.id, ep)
    assert exc.value.hresult == 0xC037010E
    with pytest.raises(errors.NotFound):
        hnscall.hot_attach("gone", str(uuid.uuid4()))


def test_v1_host_attach(hnscall, rec, net):
    ep = hnscall.create_endpoint({"Name": "cbr0_ep", "VirtualNetwork": net.id, "IPAddress": "10.244.1.2"})
    rec.take()
    hnscall.host_attach(ep.id)
    assert rec.take() == [("HNSCall", f"POST /endpoints/{ep.id}/attach")]
    assert hnscall.get_endpoint(ep.id).state == 2
    with pytest.raises(errors.AlreadyExists):
        hnscall.host_attach(ep.id)


def test_v1_errors_are_classified(hnscall, net):
    with pytest.raises(errors.InvalidPolicy):
        hnscall.create_endpoint(
            {"Name": "e", "VirtualNetwork": net.id, "Policies": [{"Type": "SDNRoute", "Settings": {}}]}
        )
    with pytest.raises(errors.InvalidAddress):
        hnscall.create_endpoint({"Name": "e", "VirtualNetwork": net.id, "IPAddress": "1.1.1.1"})


def test_bad_guid_is_invalid_argument(client):
    with pytest.raises(errors.InvalidArgument):
        client.get_network("not-a-guid")


def test_open_clients_uses_the_simulator(tmp_path):
    c, v1 = open_clients({"LIBHNS_BACKEND": "sim", "LIBHNS_SIM_DIR": str(tmp_path), "LIBHNS_SIM_VERSION": "10.1"})
    assert c.raw is v1.raw  # one stack: one deadline, one journal
    assert v1.version() == (10, 1) and not v1.features().dsr
    assert c.get_network_by_name("x") is None and v1.get_network_by_name("x") is None


def test_v1_objects_accept_prefetched_endpoint(hnscall, net):
    ep = hnscall.create_endpoint({"Name": "e", "VirtualNetwork": net.id})
    assert isinstance(ep, HNSEndpoint) and ep.ip_address == "10.244.1.2"
