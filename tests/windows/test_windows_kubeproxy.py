"""The real kube-proxy.exe (winkernel) programs Services onto our pods' endpoints (Wine, a real API server).

kube-proxy v1.34 (built from k8s.io/kubernetes by winbuild.gobuild) runs under Wine in kernelspace
mode as deploy/start-kube-proxy.ps1 starts it, on a node whose network comes from the real
flanneld.exe in its Kubernetes mode (``flannelnode.KubeSubnets``: etcd and kube-apiserver on the
node's loopback, deploy/rbac.yaml's roles); one node per backend, vxlan (Overlay, with the source
VIP ``wincni sourcevip`` reserved) and host-gw (L2Bridge). Pods come from our plugins through
libcni (``cnidriver.exe``); no kubelet and no controllers run, so the lane writes each Service's
EndpointSlice itself, naming the pods' addresses. What is checked is the seam: the load balancers
kube-proxy makes in HNS (the simulator, at Windows Server 2022's version) hold exactly our pods'
endpoints and a remote endpoint for another node's backend, use the source VIP, survive the
node's sweeps, and follow the pods and an HNS restart.

With ``KUBEPROXY_FIXTURES=DIR`` set, the load balancers and remote endpoints kube-proxy left (as
HNS returns them: V2 documents, V1 policy lists and endpoints) are written into DIR; that is how
``tests/data/kubeproxy/`` is made (see its README).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

import pytest

from basics import ipaddr
from controlplane import ControlPlane, endpoint_slice_doc, service_doc
from flannelnode import (
    BACKENDS,
    NET_D,
    NETWORK,
    NODE_NAME,
    OPT_BIN,
    FlannelNode,
    KubeSubnets,
    flannel_node,
)
from gotool import go_tool
from hnsnode import first_ip
from libhns.sim.versions import WS2022 as WS2022_VERSION
from neighbours import Daemon, wait_for
from winenode import toolchain

CLUSTER_DNS = "10.96.0.10"  # write_node_config's kubelet clusterDNS
SYNC_TIMEOUT_S = 120.0  # kube-proxy syncs within a second of a change; Wine and a busy machine are slow
WS2022 = ".".join(map(str, WS2022_VERSION))  # what HNS reports on Windows Server 2022
TCP, UDP = 6, 17
DSR = 1  # HostComputeLoadBalancer Flags: direct server return
SERVICES = "/api/v1/namespaces/default/services"
SLICES = "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices"
START_KUBE_PROXY = Path(__file__).resolve().parents[2] / "deploy" / "start-kube-proxy.ps1"
#: A warning or error kube-proxy logs (klog's W and E lines) about a flag it would have set
#: otherwise: a GA feature gate, an unset --nodeport-addresses, a deprecated flag or setting.
FLAG_WARNINGS = re.compile(r"^[WE]\d{4} .*(feature gate|nodePortAddresses|deprecated|--nodeport-addresses)", re.I)


@dataclass
class ProxyNode:
    """A flanneld node with kube-proxy running and a runtime (libcni) for pods; what the lane
    wrote to the API server is remembered, so pods made again after an HNS restart can be named
    to their Services again."""

    cluster: FlannelNode
    plane: ControlPlane
    kube_proxy: Daemon
    source_vip: str
    dsr: bool  # --enable-dsr (WinDSR): load balancers flagged DSR
    pods: dict[str, str] = field(default_factory=dict)  # container ID -> address, the live pods
    given: set[str] = field(default_factory=set)  # every address a pod was ever given
    slices: dict[str, tuple[list[dict], dict[str, str]]] = field(default_factory=dict)  # Service -> ports, backends

    @property
    def network(self) -> str:
        return self.cluster.network_name

    def add_pod(self, cid: str) -> tuple[str, dict]:
        """A pod through libcni: its address and CNI result."""
        result = self.cluster.libcni.ok("ADD", cid, self.cluster.node.sandbox("v2", cid)).out
        ip = first_ip(result)[0]
        self.pods[cid] = ip
        self.given.add(ip)
        return ip, result

    def del_pod(self, cid: str) -> None:
        self.cluster.libcni.ok("DEL", cid, self.cluster.node.sandbox("v2", cid))
        del self.pods[cid]

    def endpoint_id(self, cid: str) -> str:
        return self.cluster.node.endpoints_v2()[f"{cid}_{self.network}"]["ID"]

    def endpoints(self, *v1: str) -> dict[str, dict]:
        """Every endpoint by ID (kube-proxy's have no name), V2 or with ``"--v1"`` V1."""
        return {e["ID"]: e for e in self.cluster.node.hnsctl("endpoint", "list", *v1, "-o", "json")}

    def balancers(self) -> list[dict]:
        """Every load balancer, as HNS returns it (V2)."""
        return self.cluster.node.hnsctl("loadbalancer", "list", "-o", "json")

    def serve(self, name: str, ports: list[dict], backends: dict[str, str], **spec: str) -> str:
        """A Service and its EndpointSlice (``backends``: address -> node); its cluster IP."""
        service = self.plane.kube.create(SERVICES, service_doc(name, ports, **spec))
        self.plane.kube.create(SLICES, endpoint_slice_doc(name, ports, backends))
        self.slices[name] = (ports, backends)
        return service["spec"]["clusterIP"]

    def reslice(self, name: str, backends: dict[str, str]) -> None:
        """The Service's EndpointSlice now names ``backends`` (updated in place, as the
        EndpointSlice controller does)."""
        ports = self.slices[name][0]
        changed = {"endpoints": endpoint_slice_doc(name, ports, backends)["endpoints"]}
        self.plane.kube.patch(f"{SLICES}/{name}-lane", changed)
        self.slices[name] = (ports, backends)

    def serve_pod(self, name: str, cid: str) -> list[dict]:
        """A pod, a Service over it alone, and the load balancers once kube-proxy has balanced it."""
        ip, _ = self.add_pod(cid)
        vip, ours = self.serve(name, WEB, {ip: NODE_NAME}), {self.endpoint_id(cid)}
        return self.wait_balanced(f"{name}'s load balancer", lambda lbs: backends(lbs, vip, 80) == ours)

    def wait_balanced(self, what: str, check: Callable[[list[dict]], bool]) -> list[dict]:
        """The load balancers once ``check(balancers)`` holds; AssertionError with kube-proxy's log."""

        def ready() -> list[dict] | None:
            assert self.kube_proxy.running(), f"kube-proxy exited:\n{self.kube_proxy.log.read_text()[-6000:]}"
            found = self.balancers()
            return found if check(found) else None

        return wait_for(what, ready, SYNC_TIMEOUT_S, self.kube_proxy.log)


def frontend(balancers: list[dict], vip: str, port: int, protocol: int = TCP) -> list[dict]:
    """The load balancers for ``vip``:``port`` (``vip`` "" is a NodePort's: no frontend VIP)."""
    return [
        lb
        for lb in balancers
        if (vip in lb.get("FrontendVIPs", []) if vip else not lb.get("FrontendVIPs"))
        and any(pm["ExternalPort"] == port and pm["Protocol"] == protocol for pm in lb.get("PortMappings", []))
    ]


def backends(balancers: list[dict], vip: str, port: int, protocol: int = TCP) -> set[str] | None:
    """The endpoint IDs of the one load balancer for ``vip``:``port``; None while there is none,
    or more than one (kube-proxy deletes a replaced one at the end of its sync)."""
    found = frontend(balancers, vip, port, protocol)
    return set(found[0]["HostComputeEndpoints"]) if len(found) == 1 else None


def kube_proxy_argv(cluster: FlannelNode, kubeconfig: Path, source_vip: str, dsr: bool) -> list[str]:
    """deploy/start-kube-proxy.ps1's flags, read from the script with its variables filled in (on
    overlay, with the source VIP); ``dsr``: with ``--enable-dsr=true`` instead, as the issue's WinDSR run."""
    values = {
        "NODE_NAME": NODE_NAME,
        "kubeconfig": toolchain.winpath(kubeconfig),
        "network": cluster.network_name,
        "cluster": NETWORK,
        "vip": source_vip,
    }
    common, _, overlay = START_KUBE_PROXY.read_text().partition("if ($env:SOURCE_VIP_FILE)")

    def flags(text: str) -> list[str]:
        quoted = re.findall(r"""['"](--[^'"]+)['"]""", text)
        return [re.sub(r"\$(?:env:)?(\w+)", lambda m: values[m.group(1)], flag) for flag in quoted]

    argv = flags(common) + (flags(overlay) if source_vip else [])
    return [f"--enable-dsr={str(dsr).lower()}" if a.startswith("--enable-dsr=") else a for a in argv]


def reserve_source_vip(cluster: FlannelNode) -> str:
    """``wincni sourcevip`` before kube-proxy starts, as deploy/ runs it: the address on vxlan;
    on host-gw (L2Bridge) kube-proxy takes none and the command says so (exit status 2)."""
    rc, out = cluster.wincni("sourcevip")
    if cluster.backend == "host-gw":
        assert rc == 2 and "L2Bridge" in out["error"], out
        return ""
    assert rc == 0, out
    return out["sourceVip"]


#: (backend, DSR): deploy/'s two backends as it runs kube-proxy, and vxlan once more with DSR on.
NODES = {backend: (backend, False) for backend in BACKENDS} | {"vxlan-dsr": ("vxlan", True)}


@pytest.fixture(scope="module", params=list(NODES))
def proxied(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, package_zip: Path
) -> Iterator[ProxyNode]:
    backend, dsr = NODES[request.param]
    kube_proxy_exe = go_tool("kube-proxy.exe", "program Services onto our pods")
    root = tmp_path_factory.mktemp(f"kubeproxy-{request.param}")
    with flannel_node(root, package_zip, backend, KubeSubnets, {"LIBHNS_SIM_VERSION": WS2022}) as cluster:
        node = cluster.node
        vip = reserve_source_vip(cluster)
        plane = cluster.subnets.plane
        kubeconfig = plane.kubeconfig("kube-proxy", root / "kube-proxy.kubeconfig")
        kube_proxy = Daemon(
            kube_proxy_exe,
            kube_proxy_argv(cluster, kubeconfig, vip, dsr),
            node.drive_c / "k",
            node.win_env,
            root / "kube-proxy.log",
        ).start(toolchain.WINE)
        try:
            proxied = ProxyNode(cluster, plane, kube_proxy, vip, dsr)
            yield proxied
            if os.environ.get("KUBEPROXY_FIXTURES"):
                save_fixtures(proxied, Path(os.environ["KUBEPROXY_FIXTURES"]) / request.param)
        finally:
            kube_proxy.stop()


def save_fixtures(proxied: ProxyNode, folder: Path) -> None:
    """What kube-proxy left on HNS, as HNS returns it, for tests/data/kubeproxy/ (its README)."""
    node = proxied.cluster.node
    theirs = set(neighbours_endpoints(proxied))
    v1, v2 = proxied.endpoints("--v1"), proxied.endpoints()
    views = {
        "loadbalancers-v2.json": proxied.balancers(),
        "policylists-v1.json": node.hnsctl("policylist", "list", "-o", "json"),
        "endpoints-kube-proxy-v2.json": [e for id_, e in v2.items() if id_ in theirs],
        "endpoints-kube-proxy-v1.json": [e for id_, e in v1.items() if id_ in theirs],
        "endpoints-pods-v2.json": [e for id_, e in v2.items() if id_ not in theirs],
        "network-v2.json": proxied.cluster.network(),
    }
    folder.mkdir(parents=True, exist_ok=True)
    for name, doc in views.items():
        (folder / name).write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")


WEB = [{"name": "http", "port": 80, "protocol": "TCP", "targetPort": 8080}]
NODEPORT = [{"name": "http", "port": 81, "protocol": "TCP", "targetPort": 8080, "nodePort": 30081}]
DNS = [
    {"name": "dns", "port": 53, "protocol": "UDP", "targetPort": 53},
    {"name": "dns-tcp", "port": 53, "protocol": "TCP", "targetPort": 53},
]


def test_deploys_flags_are_the_ones_kube_proxy_takes_without_a_warning(proxied: ProxyNode) -> None:
    """kube-proxy started as deploy/start-kube-proxy.ps1 starts it, once it has synced, has
    logged no warning about its flags (its log is the Daemon's file)."""
    assert "--nodeport-addresses=primary" in proxied.kube_proxy.argv
    assert not any(a.startswith("--feature-gates") for a in proxied.kube_proxy.argv)
    log = proxied.kube_proxy.log
    wait_for(
        "kube-proxy past its start-up checks",
        lambda: "Starting service config controller" in log.read_text(errors="replace"),
        SYNC_TIMEOUT_S,
        log,
    )
    log = log.read_text(errors="replace")
    warned = [line for line in log.splitlines() if FLAG_WARNINGS.search(line)]
    assert not warned, "\n".join(warned)


def test_services_are_balanced_over_exactly_our_pods_endpoints(proxied: ProxyNode) -> None:
    pods = {cid: proxied.add_pod(cid)[0] for cid in ("kp-web1", "kp-web2")}
    ours = {proxied.endpoint_id(cid) for cid in pods}
    on_node = {ip: NODE_NAME for ip in pods.values()}
    vip = proxied.serve("web", WEB, on_node)
    found = proxied.wait_balanced("web's load balancer", lambda lbs: backends(lbs, vip, 80) == ours)
    [lb] = frontend(found, vip, 80)
    assert lb.get("SourceVIP", "") == proxied.source_vip, lb
    assert lb.get("Flags", 0) & DSR == (DSR if proxied.dsr else 0), lb
    [mapping] = lb["PortMappings"]
    assert (mapping["InternalPort"], mapping["Protocol"]) == (8080, TCP), lb

    proxied.serve("web-nodeport", NODEPORT, on_node, kind="NodePort")
    found = proxied.wait_balanced("the NodePort's load balancer", lambda lbs: backends(lbs, "", 30081) == ours)
    assert all(set(lb["HostComputeEndpoints"]) <= ours for lb in found if lb["HostComputeEndpoints"]), found


def test_the_dns_service_is_balanced_and_pods_are_told_of_it(proxied: ProxyNode) -> None:
    ip, result = proxied.add_pod("kp-dns")
    assert result["dns"]["nameservers"] == [CLUSTER_DNS], result
    ours = {proxied.endpoint_id("kp-dns")}
    proxied.serve("kube-dns", DNS, {ip: NODE_NAME}, cluster_ip=CLUSTER_DNS)
    proxied.wait_balanced(
        "the DNS Service's load balancers (UDP and TCP 53)",
        lambda lbs: backends(lbs, CLUSTER_DNS, 53, UDP) == ours and backends(lbs, CLUSTER_DNS, 53, TCP) == ours,
    )


REMOTE_NODE_IP, REMOTE_LEASE, REMOTE_VTEP = "198.51.100.30", "10.244.60.0/24", "0e:2a:0a:f4:3c:00"
REMOTE_POD = "10.244.60.5"
REMOTE_ENDPOINT = 1  # V2 endpoint Flags: RemoteEndpoint


def test_a_backend_on_another_node_is_a_remote_endpoint_with_its_provider_address(proxied: ProxyNode) -> None:
    """On vxlan the remote endpoint carries the other node's provider address (flanneld's
    RemoteSubnetRoute for its lease tells kube-proxy); on host-gw (L2Bridge) it carries none."""
    cluster = proxied.cluster
    lease = {"PublicIP": REMOTE_NODE_IP, "BackendType": cluster.backend}
    if cluster.backend == "vxlan":
        lease["BackendData"] = {"VNI": 4096, "VtepMAC": REMOTE_VTEP}
    cluster.subnets.assign(REMOTE_LEASE, lease, ttl=3600)
    wait_for("flanneld's route to the other node", lambda: cluster.route_to(REMOTE_LEASE), 120, cluster.flanneld.log)
    ip, _ = proxied.add_pod("kp-near")
    near = proxied.endpoint_id("kp-near")
    vip = proxied.serve("spread", WEB, {ip: NODE_NAME, REMOTE_POD: f"node-{REMOTE_NODE_IP}"})
    found = proxied.wait_balanced(
        "spread's load balancer over a local and a remote backend",
        lambda lbs: (backends(lbs, vip, 80) or set()) > {near},
    )
    [far] = backends(found, vip, 80) - {near}
    remote = proxied.endpoints()[far]
    assert remote["Flags"] & REMOTE_ENDPOINT, remote
    assert [c["IpAddress"] for c in remote["IpConfigurations"]] == [REMOTE_POD], remote
    pa = [p["Settings"] for p in remote.get("Policies", []) if p["Type"] == "ProviderAddress"]
    assert pa == ([{"ProviderAddress": REMOTE_NODE_IP}] if cluster.backend == "vxlan" else []), remote
    ours = [e for e in proxied.endpoints().values() if not e.get("Flags", 0) & REMOTE_ENDPOINT]
    assert REMOTE_POD not in {c["IpAddress"] for e in ours for c in e["IpConfigurations"]}


def test_a_deleted_pod_leaves_its_load_balancer(proxied: ProxyNode) -> None:
    pods = {cid: proxied.add_pod(cid)[0] for cid in ("kp-stay", "kp-go")}
    ids = {cid: proxied.endpoint_id(cid) for cid in pods}
    vip = proxied.serve("shrink", WEB, {ip: NODE_NAME for ip in pods.values()})
    proxied.wait_balanced("shrink over two pods", lambda lbs: backends(lbs, vip, 80) == set(ids.values()))

    proxied.del_pod("kp-go")
    proxied.reslice("shrink", {pods["kp-stay"]: NODE_NAME})
    found = proxied.wait_balanced("shrink over the pod left", lambda lbs: backends(lbs, vip, 80) == {ids["kp-stay"]})
    existing = set(proxied.endpoints())
    dangling = {lb["ID"]: set(lb["HostComputeEndpoints"]) - existing for lb in found}
    assert not any(dangling.values()), dangling


def neighbours_endpoints(proxied: ProxyNode) -> dict[str, dict]:
    """The endpoints that are not our pods' (kube-proxy's; on host-gw flanneld's cbr0_ep too)."""
    ours = {f"{cid}_{proxied.network}" for cid in proxied.pods}
    return {id_: e for id_, e in proxied.endpoints().items() if e.get("Name") not in ours}


def test_reclaim_and_gc_keep_kube_proxys_source_vip_and_endpoints(proxied: ProxyNode) -> None:
    """vxlan: every load balancer's source is the address ``wincni sourcevip`` reserved, kube-proxy
    made its endpoint, and no pod ever gets it. Both: the node's sweep (``wincni reclaim``) and
    the runtime's GC free none of kube-proxy's endpoints and none of its load balancers."""
    cluster, vip = proxied.cluster, proxied.source_vip
    node = cluster.node
    node.network = proxied.network
    balancers, theirs = proxied.serve_pod("swept", "kp-swept"), neighbours_endpoints(proxied)
    assert theirs
    if vip:
        assert ipaddr.ip_address(vip) in cluster.lease
        assert {lb["SourceVIP"] for lb in balancers} == {vip}, balancers
        assert any(c["IpAddress"] == vip for e in theirs.values() for c in e["IpConfigurations"]), theirs
    reserved = node.ip_files().get(vip)

    rc, swept = cluster.wincni("reclaim", "--min-age", "0", "--force", "--runtime-endpoint", "none")
    assert rc == 0, swept
    proxied.cluster.libcni.ok("GC", valid=[f"{cid}/eth0" for cid in proxied.pods])
    assert node.ip_files().get(vip) == reserved
    assert neighbours_endpoints(proxied) == theirs
    assert proxied.balancers() == balancers
    proxied.add_pod("kp-late")
    assert vip not in proxied.given
    if vip:  # deploy/modes/vxlan runs it again each time kube-proxy's pod starts
        assert reserve_source_vip(cluster) == vip
        assert node.ip_files().get(vip) == reserved
    rc, report = cluster.wincni("doctor", "--cni-conf", NET_D, "--cni-bin-dir", OPT_BIN)
    failing = {c["id"]: c for c in report["checks"] if c["status"] == "fail"}
    assert rc == 0 and not failing, failing


def test_after_an_hns_restart_kube_proxy_programs_the_same_load_balancers(proxied: ProxyNode) -> None:
    """The network is non-persistent: the restart drops it with every endpoint. flanneld is
    restarted (test_windows_flanneld), the runtime makes every sandbox again (here: DEL and ADD
    through libcni), the Services are sliced to the new addresses, and kube-proxy makes the same
    load balancers over the new endpoints: none lost, none twice."""
    cluster = proxied.cluster
    before = proxied.serve_pod("restarted", "kp-restarted")
    shape = sorted(_frontends(before))
    cluster.node.hnsctl("restart")
    cluster.restart_flanneld()
    moved = {}
    for cid in list(proxied.pods):
        old = proxied.pods[cid]
        proxied.del_pod(cid)
        moved[old] = proxied.add_pod(cid)[0]
    for name, (_, backends_of) in list(proxied.slices.items()):
        proxied.reslice(name, {moved.get(ip, ip): on for ip, on in backends_of.items()})

    def same(lbs: list[dict]) -> bool:
        existing = set(proxied.endpoints())
        return sorted(_frontends(lbs)) == shape and all(set(lb["HostComputeEndpoints"]) <= existing for lb in lbs)

    after = proxied.wait_balanced("the load balancers made again", same)
    assert len(after) == len(before)
    served = {ip for _, backends_of in proxied.slices.values() for ip in backends_of}
    ours = {proxied.endpoint_id(cid) for cid, ip in proxied.pods.items() if ip in served}
    assert ours <= {ep for lb in after for ep in lb["HostComputeEndpoints"]}


def _frontends(balancers: list[dict]) -> list[tuple]:
    """What tells load balancers apart: frontend VIPs, ports and protocols."""
    return [
        (
            tuple(sorted(lb.get("FrontendVIPs", []))),
            tuple(sorted((pm["Protocol"], pm["ExternalPort"]) for pm in lb["PortMappings"])),
        )
        for lb in balancers
    ]
