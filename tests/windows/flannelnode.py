"""A Windows node whose network, lease and routes come from the real flanneld.exe (Wine).

flanneld runs under the node's Wine prefix with the fake HNS DLLs and the powershell.exe
stand-in, inside a network namespace whose interface carries the node's address (``netns.py``);
the simulator reports that adapter's address as the network's management IP
(``LIBHNS_SIM_ADAPTERS``), so flanneld finds its interface and goes on. Where flanneld gets its
network config and leases is a parameter (``SubnetManager``, ``SUBNET_MANAGERS``): etcd
(``EtcdSubnets``, ``--etcd-endpoints``), or the Kubernetes API as clusters and deploy/ run it
(``KubeSubnets``, ``--kube-subnet-mgr``: the lease is the Node's podCIDR, flanneld's own data
its annotations). The lanes that need such a node (flanneld's, kube-proxy's) start it with
``flannel_node``.
"""

from __future__ import annotations

import json
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Protocol

import pytest

from basics import ipaddr
from controlplane import ControlPlane
from gotool import go_tool
from libcni import Driver
from neighbours import PREFIX, Etcd, Flanneld, subnet_key
from netns import NODE_LINK, Netns
from winenode import FAKEDLL, ROOT, WineNode, mingw, toolchain

NODE_IP = "198.51.100.10"  # the node's address, on the namespace's NODE_LINK
NETWORK = "10.244.0.0/16"
BACKENDS = {  # net-conf.json's Backend, as the kube-flannel ConfigMap holds it
    "vxlan": {"Type": "vxlan", "VNI": 4096, "Port": 4789},
    "host-gw": {"Type": "host-gw"},
}
#: host-gw's lease, given before flanneld starts: it looks for an interface holding its host
#: endpoint's address (lease + 2) as soon as it has made it, which HNS gives the host vNIC on a
#: real node; here the namespace must carry it before, so the lease must be known before.
HOSTGW_LEASE = "10.244.7.0/24"
NODE_NAME = "win-node"  # the Node this node's kubelet registers (KubeSubnets)
FLANNELD_TIMEOUT_S = 180.0  # vxlan alone polls its interface in 5 s steps
OPT_BIN, NET_D, NET_CONF = r"C:\opt\cni\bin", r"C:\etc\cni\net.d", r"C:\etc\kube-flannel\net-conf.json"
CONTAINERD_CONFIG = r"C:\etc\containerd\config.toml"
SUBNET_ENV = r"C:\run\flannel\subnet.env"  # where our flannel reads it by default
POWERSHELL = r"C:\windows\system32\WindowsPowerShell\v1.0\powershell.exe"  # where Windows has it


class SubnetManager(Protocol):
    """Where flanneld reads its network config and the cluster's leases, and writes its own.
    Made with the node's root, inside the node's namespace (it listens on the node's loopback)."""

    #: the Go programs (``winbuild.gobuild`` names) it runs: built before the namespace is
    #: entered, where the Go module proxy cannot be reached
    PROGRAMS: tuple[str, ...]

    def __init__(self, root: Path) -> None: ...

    def flanneld_args(self) -> list[str]:
        """flanneld's flags that name this subnet manager."""

    def flanneld_env(self) -> dict[str, str]:
        """What flanneld needs in its environment besides the node's (e.g. ``NODE_NAME``)."""

    def configure(self, network: dict) -> None:
        """The network config (net-conf.json's document) where flanneld reads it."""

    def assign(self, subnet: str, lease: dict, ttl: int) -> None:
        """A lease (``PublicIP``, ``BackendType``, ``BackendData``) as its node's flanneld would
        hold it: this node's before flanneld starts, or another node's joining."""

    def release(self, subnet: str) -> None:
        """A lease gone (its node left, or this node's taken away)."""

    def leases(self) -> dict[str, dict]:
        """Every lease held: subnet (CIDR) → lease."""

    def stop(self) -> None: ...


class EtcdSubnets:
    """flanneld's etcd subnet manager: one etcd member on loopback, keys under ``PREFIX``."""

    PROGRAMS = ("etcd",)

    def __init__(self, root: Path) -> None:
        self.etcd = Etcd(go_tool("etcd", "hold flanneld's network config and leases"), root / "etcd")

    def flanneld_args(self) -> list[str]:
        return [f"--etcd-endpoints={self.etcd.endpoint}"]

    def flanneld_env(self) -> dict[str, str]:
        return {}

    def configure(self, network: dict) -> None:
        self.etcd.put(f"{PREFIX}/config", network)

    def assign(self, subnet: str, lease: dict, ttl: int) -> None:
        self.etcd.put(subnet_key(subnet), lease, ttl=ttl)

    def release(self, subnet: str) -> None:
        self.etcd.delete(subnet_key(subnet))

    def leases(self) -> dict[str, dict]:
        stored = self.etcd.get_prefix(f"{PREFIX}/subnets/")
        return {key.rsplit("/", 1)[1].replace("-", "/"): lease for key, lease in stored.items()}

    def stop(self) -> None:
        self.etcd.stop()


#: flanneld's annotations on a Node (its --kube-annotation-prefix default), by lease field.
ANNOTATIONS = {
    "PublicIP": "flannel.alpha.coreos.com/public-ip",
    "BackendType": "flannel.alpha.coreos.com/backend-type",
    "BackendData": "flannel.alpha.coreos.com/backend-data",
}
MANAGED = "flannel.alpha.coreos.com/kube-subnet-manager"


class KubeSubnets:
    """flanneld's Kubernetes subnet manager: a control plane on loopback (``controlplane.py``),
    deploy/rbac.yaml's roles applied, flanneld running as its ServiceAccount. This node's Node is
    registered with the podCIDR ``HOSTGW_LEASE`` as the node IPAM controller would give it before
    flanneld starts (released, it is deleted; assigned another lease, registered again with that
    podCIDR, which a Node cannot change); another node's lease is a Node with that podCIDR and the
    annotations its flanneld writes. The network config is net-conf.json (``write_node_config``),
    as deploy/ runs it."""

    PROGRAMS = ("etcd", "kube-apiserver")

    def __init__(self, root: Path) -> None:
        etcd = go_tool("etcd", "store the API server's objects")
        apiserver = go_tool("kube-apiserver", "serve flanneld's and kube-proxy's Nodes and Services")
        self.plane = ControlPlane(etcd, apiserver, root / "control-plane")
        try:
            self.plane.apply_rbac(ROOT / "deploy" / "rbac.yaml")
            self.kubeconfig = self.plane.kubeconfig("flanneld", root / "flanneld.kubeconfig")
        except BaseException:
            self.plane.stop()
            raise

    def flanneld_args(self) -> list[str]:
        return [
            "--kube-subnet-mgr",
            f"--kubeconfig-file={toolchain.winpath(self.kubeconfig)}",
            f"--net-config-path={NET_CONF}",
        ]

    def flanneld_env(self) -> dict[str, str]:
        # deploy/wincni-flannel.yaml's downward API; flanneld takes NODE_NAME first
        return {"NODE_NAME": NODE_NAME, "POD_NAME": "wincni-flannel-lane", "POD_NAMESPACE": "default"}

    def configure(self, network: dict) -> None:
        assert ipaddr.ip_network(HOSTGW_LEASE).subnet_of(ipaddr.ip_network(network["Network"])), network
        self.plane.register_node(NODE_NAME, HOSTGW_LEASE, NODE_IP)

    def assign(self, subnet: str, lease: dict, ttl: int) -> None:
        if lease["PublicIP"] == NODE_IP:  # this node's
            held = {n["metadata"]["name"]: n["spec"].get("podCIDR") for n in self._nodes()}.get(NODE_NAME)
            if held is None:
                self.plane.register_node(NODE_NAME, subnet, NODE_IP)
            assert held in (None, subnet), f"{NODE_NAME}'s podCIDR is {held}: release it first"
            return
        notes = {ANNOTATIONS[k]: v if isinstance(v, str) else json.dumps(v) for k, v in lease.items()}
        self.plane.register_node(f"node-{lease['PublicIP']}", subnet, lease["PublicIP"], {**notes, MANAGED: "true"})

    def release(self, subnet: str) -> None:
        for node in self._nodes():
            if node["spec"].get("podCIDR") == subnet:
                self.plane.kube.delete(f"/api/v1/nodes/{node['metadata']['name']}")

    def leases(self) -> dict[str, dict]:
        held = {}
        for node in self._nodes():
            notes = node["metadata"].get("annotations", {})
            if notes.get(MANAGED) == "true" and node["spec"].get("podCIDR"):
                lease = {k: notes[a] for k, a in ANNOTATIONS.items() if a in notes}
                if "BackendData" in lease:
                    lease["BackendData"] = json.loads(lease["BackendData"])
                held[node["spec"]["podCIDR"]] = lease
        return held

    def _nodes(self) -> list[dict]:
        return self.plane.kube.get("/api/v1/nodes")["items"]

    def stop(self) -> None:
        self.plane.stop()


SUBNET_MANAGERS: dict[str, type[SubnetManager]] = {"etcd": EtcdSubnets, "kube": KubeSubnets}


@dataclass
class FlannelNode:
    """A Windows node whose network, lease and routes come from the real flanneld."""

    backend: str
    node: WineNode
    netns: Netns
    subnets: SubnetManager
    flanneld: Flanneld
    fakeps: Path  # the powershell.exe stand-in's folder: commands.log, state
    libcni: Driver  # the runtime: libcni over what ``wincni install`` laid in containerd's folders
    conf: dict = field(
        default_factory=dict
    )  # the flannel plugin's config ``wincni install`` wrote (``installed_conf``)

    @property
    def subnet_env(self) -> dict[str, str]:
        lines = self.node.subnet_env.read_text().splitlines()
        return dict(line.split("=", 1) for line in lines if "=" in line)

    @property
    def lease(self) -> ipaddr.Network:
        return ipaddr.ip_network(self.subnet_env["FLANNEL_SUBNET"], strict=False)

    @property
    def network_name(self) -> str:
        return "flannel.4096" if self.backend == "vxlan" else "cbr0"

    def network(self) -> dict:
        """flanneld's network as HNS holds it (V2 document)."""
        [net] = [n for n in self.node.hnsctl("network", "list", "-o", "json") if n["Name"] == self.network_name]
        return net

    def powershell_runs(self) -> list[str]:
        """The -Command of every powershell.exe run so far."""
        log = self.fakeps / "commands.log"
        runs = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
        return [argv[argv.index("-Command") + 1] for argv in runs]

    def wincni(self, *args: str) -> tuple[int, dict]:
        proc = self.node.wine(self.node.exe("wincni"), *args, "--containerd-config", CONTAINERD_CONFIG, "-o", "json")
        assert b"Traceback" not in proc.stderr, proc.stderr.decode()
        return proc.returncode, json.loads(proc.stdout)

    def route_to(self, subnet: str) -> object:
        """What flanneld made for another node's lease: the RemoteSubnetRoute policy (vxlan) or
        the route its New-NetRoute left in the stand-in's state (host-gw); None while there is none."""
        if self.backend == "vxlan":
            found = [
                p["Settings"]
                for p in self.network()["Policies"]
                if p["Type"] == "RemoteSubnetRoute" and p["Settings"].get("DestinationPrefix") == subnet
            ]
            return found[0] if found else None
        state = self.fakeps / "state"
        lines = state.read_text().splitlines() if state.exists() else []
        found = [r for r in (line.split()[1:] for line in lines if line.startswith("route ")) if r[1] == subnet]
        return found[0] if found else None

    def restart_flanneld(self) -> None:
        """flanneld stopped and started again, up once it has written subnet.env anew."""
        self.flanneld.stop()
        self.node.subnet_env.unlink(missing_ok=True)
        self.flanneld.start(toolchain.WINE)
        self.flanneld.wait_written(self.node.subnet_env, FLANNELD_TIMEOUT_S)


def installed_conf(cluster: FlannelNode) -> dict:
    """``wincni.exe install`` from net-conf.json, as an operator runs it (again: it is idempotent);
    the flannel plugin's config it wrote, as libcni hands it over."""
    rc, installed = cluster.wincni("install", "--net-conf", NET_CONF, "--node-ip", f"{NODE_IP}/24")
    assert rc == 0, installed
    doc = json.loads(cluster.node.path(NET_D + r"\10-flannel.conflist").read_text())
    return {"cniVersion": doc["cniVersion"], "name": doc["name"], **doc["plugins"][0]}


def install_powershell(node: WineNode) -> Path:
    """The stand-in at powershell.exe's Windows path (over Wine's stub); its folder, named to
    flanneld by FAKEPS_DIR in the node's environment."""
    folder = node.root / "fakeps"
    folder.mkdir()
    target = node.path(POWERSHELL)
    target.parent.mkdir(parents=True, exist_ok=True)
    mingw(FAKEDLL / "powershell.c", target)
    node.win_env["FAKEPS_DIR"] = toolchain.winpath(folder)
    return folder


def write_node_config(node: WineNode, backend: str) -> None:
    """What a node has before flanneld and wincni: net-conf.json (the ConfigMap's), containerd's
    config naming the CNI dirs, the kubelet's config."""
    files = {
        NET_CONF: json.dumps({"Network": NETWORK, "Backend": BACKENDS[backend]}),
        # containerd 2.x: install renders cniVersion 1.1.0, which GC needs
        CONTAINERD_CONFIG: f'version = 3\r\n[plugins."io.containerd.cri.v1.runtime".cni]\r\n'
        f'  bin_dirs = ["{OPT_BIN}"]\r\n  conf_dir = "{NET_D}"\r\n'.replace("\\", "\\\\"),
        r"C:\var\lib\kubelet\config.yaml": "kind: KubeletConfiguration\r\nclusterDNS:\r\n- 10.96.0.10\r\n",
    }
    for windows, text in files.items():
        path = node.path(windows)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def host_endpoint_address(netns: Netns, lease: str) -> None:
    """host-gw's host endpoint address (lease + 2) on the node, before flanneld makes the endpoint
    and waits for an interface holding it (HNS gives it to the host vNIC on a real node)."""
    netns.add_address(f"{ipaddr.ip_network(lease).network_address + 2}/32")


@contextmanager
def flannel_node(
    root: Path,
    package_zip: Path,
    backend: str,
    subnet_manager: type[SubnetManager] = EtcdSubnets,
    sim_env: dict[str, str] | None = None,
) -> Iterator[FlannelNode]:
    """A node up: its namespace, HNS and Wine prefix, the subnet manager holding the network
    config (and host-gw's lease), flanneld.exe having written subnet.env, wincni installed from
    net-conf.json into containerd's folders; all stopped after.
    ``subnet_manager(root)`` is made inside the namespace, so it listens on the node's loopback;
    ``sim_env``: more of the simulator's variables (e.g. ``LIBHNS_SIM_VERSION``)."""
    flanneld_exe = go_tool("flanneld.exe", "make the node's network")
    for name in ("cnidriver.exe", *subnet_manager.PROGRAMS):  # the cache, where the proxy is reachable
        go_tool(name, "run the node")
    try:
        toolchain.ensure_system()
    except toolchain.ToolchainError as exc:
        pytest.fail(str(exc))
    with ExitStack() as stack:
        netns = Netns(f"{NODE_IP}/24")
        stack.callback(netns.close)
        node = WineNode(root, package_zip, sim_env={"LIBHNS_SIM_ADAPTERS": f"{NODE_LINK}={NODE_IP}", **(sim_env or {})})
        stack.callback(node.close)
        fakeps = install_powershell(node)
        write_node_config(node, backend)
        subnets = subnet_manager(root)
        stack.callback(subnets.stop)
        subnets.configure({"Network": NETWORK, "Backend": BACKENDS[backend]})
        if backend == "host-gw":
            subnets.assign(HOSTGW_LEASE, {"PublicIP": NODE_IP, "BackendType": "host-gw"}, ttl=86400)
            host_endpoint_address(netns, HOSTGW_LEASE)
        flanneld = Flanneld(
            flanneld_exe,
            # its default, /run/flannel/subnet.env, is on the current drive, which Wine makes Z: (the Linux root)
            [*subnets.flanneld_args(), f"--iface={NODE_IP}", rf"--subnet-file={SUBNET_ENV}"],
            node.drive_c / "k",
            {**node.win_env, **subnets.flanneld_env()},
            root / "flanneld.log",
        ).start(toolchain.WINE)
        stack.callback(flanneld.stop)
        flanneld.wait_written(node.subnet_env, FLANNELD_TIMEOUT_S)
        up = FlannelNode(backend, node, netns, subnets, flanneld, fakeps, node.libcni(NET_D, OPT_BIN))
        up.conf = installed_conf(up)
        yield up
