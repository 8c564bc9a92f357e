"""HNS load balancers as kube-proxy (winkernel, v1.34) makes them: their fields, the backends they
reference, frontends HNS reserves, modify by HNS version, and what endpoint deletion and an HNS
restart leave (each rule's source: libhns/sim/loadbalancer.py)."""

from __future__ import annotations

import json
import shutil
import tempfile

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from libhns import errors
from libhns.client import HcnClient, HnsCallClient, host_compute_query
from libhns.sim import Simulator
from libhns.sim.versions import WS2022
from test_sim import V2_QUERY, create, create_ep, endpoint, l2bridge, overlay, v1
from testdata import REALHNS

DSR, IPV6, LOCAL_ROUTED_VIP = 1, 2, 2


@pytest.fixture
def sim(tmp_path) -> Simulator:
    return Simulator(tmp_path / "hns")


def service(backends: list[str], vip: str | None = "10.96.0.1", port: int = 443, **extra) -> dict:
    """kube-proxy's hns.go getLoadBalancer document for one Service port."""
    mapping = {"Protocol": extra.pop("Protocol", 6), "InternalPort": 6443, "ExternalPort": port}
    mapping.update(extra.pop("Mapping", {}))
    doc = {"SourceVIP": "10.244.2.254", "PortMappings": [mapping], "SchemaVersion": {"Major": 2, "Minor": 0}}
    doc.update({"FrontendVIPs": [vip] if vip else [], "HostComputeEndpoints": backends, **extra})
    return doc


def _pods(sim: Simulator, n: int = 2) -> list[str]:
    net = create(sim, "Network", overlay())
    return [create_ep(sim, net["ID"], endpoint(f"pod{i}", f"10.244.2.{10 + i}"))["ID"] for i in range(n)]


def _hresult(sim: Simulator, doc: dict) -> int:
    with pytest.raises(errors.HnsError) as exc:
        create(sim, "LoadBalancer", doc)
    return exc.value.hresult


def _modify(sim: Simulator, lb_id: str, doc: dict) -> dict:
    h = sim.hcn_open("LoadBalancer", lb_id)
    try:
        sim.hcn_modify("LoadBalancer", h, json.dumps(doc))
        return json.loads(sim.hcn_query("LoadBalancer", h, V2_QUERY))
    finally:
        sim.hcn_close("LoadBalancer", h)


def test_kube_proxys_document_is_stored_as_sent_with_its_id(sim):
    pods = _pods(sim)
    doc = service(pods, Flags=DSR, Mapping={"DistributionType": 2, "Flags": 0})
    lb = create(sim, "LoadBalancer", doc)
    assert lb == {**doc, "ID": lb["ID"]}
    hcn = HcnClient(sim)
    assert [x.id for x in hcn.list_load_balancers()] == [lb["ID"]]
    assert json.loads(sim.hcn_enumerate("LoadBalancer", host_compute_query({"ID": lb["ID"].lower()}))) == [lb["ID"]]
    assert hcn.get_load_balancer(lb["ID"]).port_mappings == doc["PortMappings"]


@pytest.mark.parametrize(
    "change, hresult",
    [
        ({"HostComputeEndpoints": ["0B5E3C0E-0000-4000-8000-000000000001"]}, errors.HCN_E_ENDPOINT_NOT_FOUND),
        ({"HostComputeEndpoints": "pod"}, errors.HCN_E_INVALID_JSON),
        ({"HostComputeEndpoints": [7]}, errors.HCN_E_INVALID_JSON),
        ({"FrontendVIPs": ["10.96.0.300"]}, errors.HCN_E_INVALID_IP),
        ({"SourceVIP": "vip"}, errors.HCN_E_INVALID_IP),
        ({"PortMappings": {"Protocol": 6}}, errors.HCN_E_INVALID_JSON),
        ({"PortMappings": ["tcp/80"]}, errors.HCN_E_INVALID_JSON),
        ({"PortMappings": [{"Protocol": "TCP"}]}, errors.HCN_E_INVALID_JSON),
        ({"PortMappings": [{"ExternalPort": 65536}]}, errors.HCN_E_INVALID_JSON),
        ({"PortMappings": [{"DistributionType": 3}]}, errors.HCN_E_INVALID_JSON),
        ({"Flags": -1}, errors.HCN_E_INVALID_JSON),
    ],
)
def test_refusals(sim, change, hresult):
    assert _hresult(sim, {**service(_pods(sim)), **change}) == hresult
    assert HcnClient(sim).list_load_balancers() == []


def test_one_frontend_per_load_balancer(sim):
    pods = _pods(sim)
    first = create(sim, "LoadBalancer", service(pods[:1]))
    assert _hresult(sim, service(pods)) == errors.HCN_E_PORT_ALREADY_EXISTS
    assert _hresult(sim, service(pods[:1])) == errors.ERROR_ALREADY_EXISTS
    assert _hresult(sim, service(pods[:1], vip="10.96.0.9", FrontendVIPs=["10.96.0.9", "10.96.0.1"])) == (
        errors.HCN_E_PORT_ALREADY_EXISTS
    )
    # the DNS Service: one VIP, port 53 over UDP and TCP
    create(sim, "LoadBalancer", service(pods, vip="10.96.0.10", port=53, Protocol=17))
    create(sim, "LoadBalancer", service(pods, vip="10.96.0.10", port=53, Protocol=6))
    # a NodePort Service: no VIP, LocalRoutedVIP, once per address family
    node_port = {"Mapping": {"Flags": LOCAL_ROUTED_VIP}}
    create(sim, "LoadBalancer", service(pods, vip=None, port=30443, **node_port))
    create(sim, "LoadBalancer", service(pods, vip=None, port=30443, Flags=IPV6, **node_port))
    assert _hresult(sim, service(pods[:1], vip=None, port=30443, **node_port)) == errors.HCN_E_PORT_ALREADY_EXISTS
    sim.hcn_delete("LoadBalancer", first["ID"])
    create(sim, "LoadBalancer", service(pods))


def test_deleting_a_backend_leaves_its_load_balancers(sim):
    pods = _pods(sim)
    lb = create(sim, "LoadBalancer", service(pods))
    sim.hcn_delete("Endpoint", pods[0])
    (kept,) = HcnClient(sim).list_load_balancers()
    assert kept.id == lb["ID"] and kept.host_compute_endpoints == pods
    assert _hresult(sim, service(pods, port=80)) == errors.HCN_E_ENDPOINT_NOT_FOUND


def test_an_hns_restart_keeps_load_balancers_and_drops_the_non_persistent_networks_endpoints(sim):
    pods = _pods(sim)  # flanneld's vxlan network: Flags 8, non-persistent
    bridge = create(sim, "Network", l2bridge("cbr0", "10.244.9.0/24", "10.244.9.1"))
    remote = create_ep(sim, bridge["ID"], endpoint("", "10.244.7.5", Flags=1))
    lbs = [create(sim, "LoadBalancer", service([*pods, remote["ID"]], port=p)) for p in (80, 443)]
    assert sim.restart() == ["vxlan0"]
    assert [lb.id for lb in HcnClient(sim).list_load_balancers()] == [lb["ID"] for lb in lbs]
    assert [e["ID"] for e in v1(sim, "GET", "/endpoints/")["Output"]] == [remote["ID"]]
    assert _hresult(sim, service([*pods, remote["ID"]], port=80)) == errors.HCN_E_ENDPOINT_NOT_FOUND


def test_windows_server_2022_gives_kube_proxy_what_it_gets_there(tmp_path):
    """LIBHNS_SIM_VERSION=13.3: the features kube-proxy reads (hnslib GetSupportedFeatures) are
    those of a Windows Server 2022 node, and the load balancers they allow are taken."""
    sim = Simulator.from_env({"LIBHNS_SIM_DIR": str(tmp_path / "hns"), "LIBHNS_SIM_VERSION": "13.3"})
    hnscall = HnsCallClient(sim)
    assert hnscall.version() == WS2022
    wanted = {"v2_api", "remote_subnet", "dsr", "dual_stack", "session_affinity", "modify_loadbalancer"}
    features = {k: v for k, v in hnscall.features().as_dict().items() if k in wanted}
    assert features == {**dict.fromkeys(wanted, True), "modify_loadbalancer": False}
    pods = _pods(sim)
    create(sim, "LoadBalancer", service(pods, Flags=DSR, Mapping={"DistributionType": 2}))
    create(sim, "LoadBalancer", service(pods, vip="fd00::a", Flags=IPV6))


@pytest.mark.parametrize("version", [(9, 2), WS2022, (15, 3)])
def test_modify_is_not_implemented_before_hns_15_4(tmp_path, version):
    sim = Simulator(tmp_path / "hns", version=version)
    pods = _pods(sim)
    lb = create(sim, "LoadBalancer", service(pods[:1]))
    with pytest.raises(errors.Unsupported) as exc:
        _modify(sim, lb["ID"], service(pods))
    assert exc.value.hresult == errors.E_NOTIMPL
    assert HcnClient(sim).get_load_balancer(lb["ID"]).host_compute_endpoints == pods[:1]


def test_modify_at_15_4_keeps_the_backends(tmp_path):
    """kubernetes#131466: accepted, but HNS 15.4 still balances over the old backends."""
    sim = Simulator(tmp_path / "hns", version=(15, 4))
    pods = _pods(sim)
    lb = create(sim, "LoadBalancer", service(pods[:1]))
    assert _modify(sim, lb["ID"], service(pods, Flags=DSR)) == {**service(pods[:1], Flags=DSR), "ID": lb["ID"]}


def test_modify_from_15_5_replaces_the_document(tmp_path):
    sim = Simulator(tmp_path / "hns", version=(15, 5))
    pods = _pods(sim, 3)
    lb = create(sim, "LoadBalancer", service(pods[:1]))
    other = create(sim, "LoadBalancer", service(pods[:1], port=80))
    assert _modify(sim, lb["ID"], service(pods)) == {**service(pods), "ID": lb["ID"]}
    with pytest.raises(errors.HnsError) as exc:
        _modify(sim, lb["ID"], service(pods, port=80))
    assert exc.value.hresult == errors.HCN_E_PORT_ALREADY_EXISTS
    with pytest.raises(errors.NotFound):
        _modify(sim, other["ID"], service(["0B5E3C0E-0000-4000-8000-000000000001"], port=80))
    assert HcnClient(sim).get_load_balancer(other["ID"]).host_compute_endpoints == pods[:1]


class LoadBalancersAndEndpoints(RuleBasedStateMachine):
    """Load balancers and their backends across creates, deletes and HNS restarts: a load
    balancer is made only over endpoints that exist, is gone only when deleted, keeps the
    backends it was made with, and no two hold one frontend; V1 and V2 list the same ones."""

    def __init__(self) -> None:
        super().__init__()
        self.dir = tempfile.mkdtemp(prefix="lb-sm-")
        self.sim = Simulator(self.dir)
        self.net = create(self.sim, "Network", overlay())["ID"]
        self.endpoints: set[str] = set()
        self.lbs: dict[str, tuple[int, list[str]]] = {}
        self.serial = 0

    def teardown(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)

    @precondition(lambda self: self.net is not None)
    @rule()
    def add_pod(self) -> None:
        self.serial += 1
        ep = create_ep(self.sim, self.net, endpoint(f"pod{self.serial}", None))
        self.endpoints.add(ep["ID"])

    @rule(data=st.data())
    def delete_pod(self, data) -> None:
        if self.endpoints:
            ep = data.draw(st.sampled_from(sorted(self.endpoints)))
            self.sim.hcn_delete("Endpoint", ep)
            self.endpoints.discard(ep)

    @rule(port=st.integers(1, 4), data=st.data())
    def add_load_balancer(self, port: int, data) -> None:
        known = sorted(self.endpoints | {b for _, bs in self.lbs.values() for b in bs})
        backends = data.draw(st.lists(st.sampled_from(known), unique=True, max_size=3)) if known else []
        try:
            lb = create(self.sim, "LoadBalancer", service(backends, port=port))
        except errors.HnsError as exc:
            gone = not set(backends) <= self.endpoints
            taken = [b for p, b in self.lbs.values() if p == port]
            assert gone or taken, exc
            if not gone:
                same = sorted(backends) == sorted(taken[0])
                assert exc.hresult == (errors.ERROR_ALREADY_EXISTS if same else errors.HCN_E_PORT_ALREADY_EXISTS)
            return
        assert set(backends) <= self.endpoints and all(p != port for p, _ in self.lbs.values())
        self.lbs[lb["ID"]] = (port, backends)

    @rule(data=st.data())
    def delete_load_balancer(self, data) -> None:
        if self.lbs:
            lb = data.draw(st.sampled_from(sorted(self.lbs)))
            self.sim.hcn_delete("LoadBalancer", lb)
            del self.lbs[lb]

    @rule()
    def restart_hns(self) -> None:
        assert self.sim.restart() == (["vxlan0"] if self.net else [])
        self.endpoints.clear()
        self.net = None

    @precondition(lambda self: self.net is None)
    @rule()
    def flanneld_remakes_the_network(self) -> None:
        self.net = create(self.sim, "Network", overlay())["ID"]

    @invariant()
    def hns_holds_what_was_made(self) -> None:
        held = {lb.id: lb for lb in HcnClient(self.sim).list_load_balancers()}
        assert {k: (lb.port_mappings[0]["ExternalPort"], lb.host_compute_endpoints) for k, lb in held.items()} == (
            self.lbs
        )
        assert sorted(p["ID"] for p in v1(self.sim, "GET", "/policylists/")["Output"]) == sorted(self.lbs)
        assert {e["ID"] for e in v1(self.sim, "GET", "/endpoints/")["Output"]} == self.endpoints


TestLoadBalancersAndEndpoints = pytest.mark.slow(LoadBalancersAndEndpoints.TestCase)
TestLoadBalancersAndEndpoints.settings = settings(
    max_examples=25, stateful_step_count=15, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


def test_the_captured_node_port_load_balancer_is_made_again(sim):
    """kube-proxy's NodePort load balancer from a real node (calico#7305, as hcsshim re-marshals
    it): made again over its backend at the same IDs, HNS answers the same document."""
    captured = json.loads((REALHNS / "09-v2-loadbalancer-nodeport-kubeproxy-calico-derived.json").read_bytes())
    net = create(sim, "Network", l2bridge())
    (backend,) = captured["HostComputeEndpoints"]
    create_ep(sim, net["ID"], endpoint("pod", "10.244.1.5", ID=backend))
    h = sim.hcn_create("LoadBalancer", captured["ID"], json.dumps({k: v for k, v in captured.items() if k != "ID"}))
    try:
        made = json.loads(sim.hcn_query("LoadBalancer", h, V2_QUERY))
    finally:
        sim.hcn_close("LoadBalancer", h)
    assert made == {**captured, "ID": captured["ID"].upper()}
