"""The real kube-proxy.exe (winkernel) programs Services onto our pods' endpoints (Wine, a real API server).

kube-proxy v1.34 (built from k8s.io/kubernetes by winbuild.gobuild) runs under Wine in kernelspace
mode as deploy/start-kube-proxy.ps1 starts it, on a node whose network comes from the real
flanneld.exe in its Kubernetes mode (``flannelnode.KubeSubnets``: etcd and kube-apiserver on the
node's loopback, deploy/rbac.yaml's roles). Pods come from our plugins through libcni
(``cnidriver.exe``); no kubelet and no controllers run, so the lane writes each Service's
EndpointSlice itself, naming the pods' addresses. What is checked is the seam: the load balancers
kube-proxy makes in HNS (the simulator, at a Windows Server 2022 version) hold exactly our pods'
endpoints, a remote endpoint for another node's backend, the source VIP ``wincni sourcevip``
reserved, and they follow the pods and an HNS restart.

With ``KUBEPROXY_FIXTURES=DIR`` set, the load balancers and remote endpoints kube-proxy left (as
HNS returns them: V2 documents, V1 policy lists and endpoints) are written into DIR; that is how
``tests/data/kubeproxy/`` is made (see its README).
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import pytest

from basics import ipaddr
from controlplane import ControlPlane, endpoint_slice_doc, service_doc
from flannelnode import NET_D, NETWORK, NODE_NAME, OPT_BIN, FlannelNode, KubeSubnets, flannel_node, installed_conf
from gotool import go_tool
from hnsnode import first_ip
from libcni import Driver
from neighbours import Daemon, wait_for
from winenode import toolchain

DRIVER, CACHE = r"C:\libcni\cnidriver.exe", r"C:\var\lib\cni"
CLUSTER_DNS = "10.96.0.10"  # write_node_config's kubelet clusterDNS
SYNC_TIMEOUT_S = 120.0  # kube-proxy syncs within a second of a change; Wine and a busy machine are slow
TCP, UDP = 6, 17
PROTOCOLS = {"TCP": TCP, "UDP": UDP}
SERVICES = "/api/v1/namespaces/default/services"
SLICES = "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices"


@dataclass
class ProxyNode:
    """A flanneld node with kube-proxy running and a runtime (libcni) for pods."""

    cluster: FlannelNode
    plane: ControlPlane
    kube_proxy: Daemon
    libcni: Driver
    source_vip: str

    @property
    def network(self) -> str:
        return self.cluster.network_name

    def add_pod(self, cid: str) -> tuple[str, dict]:
        """A pod through libcni: its address and CNI result."""
        result = self.libcni.ok("ADD", cid, self.cluster.node.sandbox("v2", cid)).out
        return first_ip(result)[0], result

    def del_pod(self, cid: str) -> None:
        self.libcni.ok("DEL", cid, self.cluster.node.sandbox("v2", cid))

    def endpoint_id(self, cid: str) -> str:
        return self.cluster.node.endpoints_v2()[f"{cid}_{self.network}"]["ID"]

    def balancers(self) -> list[dict]:
        """Every load balancer, as HNS returns it (V2)."""
        return self.cluster.node.hnsctl("loadbalancer", "list", "-o", "json")

    def serve(self, name: str, ports: list[dict], backends: dict[str, str], **spec: str) -> dict:
        """A Service and its EndpointSlice (``backends``: address → node); the Service as stored."""
        service = self.plane.kube.create(SERVICES, service_doc(name, ports, **spec))
        self.plane.kube.create(SLICES, endpoint_slice_doc(name, service["spec"]["ports"], backends))
        return service

    def reslice(self, name: str, ports: list[dict], backends: dict[str, str]) -> None:
        """The Service's EndpointSlice now names ``backends``."""
        self.plane.kube.delete(f"{SLICES}/{name}-lane")
        self.plane.kube.create(SLICES, endpoint_slice_doc(name, ports, backends))

    def wait_balanced(self, what: str, check: callable) -> list[dict]:
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
    """The endpoint IDs of the one load balancer for ``vip``:``port``; None while there is none."""
    found = frontend(balancers, vip, port, protocol)
    assert len(found) <= 1, f"more than one load balancer for {vip}:{port}: {found}"
    return set(found[0]["HostComputeEndpoints"]) if found else None


def kube_proxy_argv(cluster: FlannelNode, kubeconfig: Path, source_vip: str) -> list[str]:
    """deploy/start-kube-proxy.ps1's flags on an overlay node."""
    return [
        f"--hostname-override={NODE_NAME}",
        f"--kubeconfig={toolchain.winpath(kubeconfig)}",
        "--proxy-mode=kernelspace",
        f"--network-name={cluster.network_name}",
        f"--cluster-cidr={NETWORK}",
        "--enable-dsr=false",
        "--v=2",
        f"--source-vip={source_vip}",
        "--feature-gates=WinOverlay=true",
    ]


@pytest.fixture(scope="module")
def proxied(tmp_path_factory: pytest.TempPathFactory, package_zip: Path) -> Iterator[ProxyNode]:
    kube_proxy_exe = go_tool("kube-proxy.exe", "program Services onto our pods")
    driver_exe = go_tool("cnidriver.exe", "run pods through libcni under Wine")
    root = tmp_path_factory.mktemp("kubeproxy-vxlan")
    with flannel_node(root, package_zip, "vxlan", KubeSubnets) as cluster:
        node = cluster.node
        installed_conf(cluster)
        rc, vip = cluster.wincni("sourcevip")
        assert rc == 0, vip
        node.path(DRIVER).parent.mkdir(parents=True)
        shutil.copy(driver_exe, node.path(DRIVER))
        plane = cluster.subnets.plane
        kubeconfig = plane.kubeconfig("kube-proxy", root / "kube-proxy.kubeconfig")
        kube_proxy = Daemon(
            kube_proxy_exe,
            kube_proxy_argv(cluster, kubeconfig, vip["sourceVip"]),
            node.drive_c / "k",
            node.win_env,
            root / "kube-proxy.log",
        ).start(toolchain.WINE)
        try:
            libcni = Driver(lambda argv, env: node.wine(DRIVER, *argv, **env), NET_D, OPT_BIN, CACHE)
            yield ProxyNode(cluster, plane, kube_proxy, libcni, vip["sourceVip"])
        finally:
            kube_proxy.stop()


WEB = [{"name": "http", "port": 80, "protocol": "TCP", "targetPort": 8080}]
NODEPORT = [{"name": "http", "port": 81, "protocol": "TCP", "targetPort": 8080, "nodePort": 30081}]
DNS = [
    {"name": "dns", "port": 53, "protocol": "UDP", "targetPort": 53},
    {"name": "dns-tcp", "port": 53, "protocol": "TCP", "targetPort": 53},
]


def test_services_are_balanced_over_exactly_our_pods_endpoints(proxied: ProxyNode) -> None:
    pods = {cid: proxied.add_pod(cid)[0] for cid in ("kp-web1", "kp-web2")}
    ours = {proxied.endpoint_id(cid) for cid in pods}
    on_node = {ip: NODE_NAME for ip in pods.values()}
    web = proxied.serve("web", WEB, on_node)
    vip = web["spec"]["clusterIP"]
    found = proxied.wait_balanced("web's load balancer", lambda lbs: backends(lbs, vip, 80) == ours)
    [lb] = frontend(found, vip, 80)
    assert lb["SourceVIP"] == proxied.source_vip, lb
    [mapping] = lb["PortMappings"]
    assert (mapping["InternalPort"], mapping["Protocol"]) == (8080, TCP), lb

    proxied.serve("web-nodeport", NODEPORT, on_node, kind="NodePort")
    found = proxied.wait_balanced("the NodePort's load balancer", lambda lbs: backends(lbs, "", 30081) == ours)
    assert all(set(lb["HostComputeEndpoints"]) <= ours for lb in found if lb["HostComputeEndpoints"]), found
