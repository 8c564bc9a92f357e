"""The NetworkPolicy node agent as a Windows node runs it: the frozen ``wincni.exe netpol`` under
Wine, in-cluster (its token and the cluster CA under ``CONTAINER_SANDBOX_MOUNT_POINT``, deploy/'s
netpol RBAC applied), against the lane's real kube-apiserver, on a host-gw node whose network comes
from the real flanneld.exe, pods through libcni (``cnidriver.exe``), the real kube-proxy.exe running.

cyclonus's generated cases (tests/netpol) are written to the API server step by step; every probe
with an end on this node is then walked through the ACLs HNS holds (``tests/netpol/enforced``, as
the simulator's probe walks them) until they all agree with cyclonus's table. cyclonus's node-0
is this node: its pods are made through libcni at their case's addresses moved into this node's
lease (``Relocated``), the other nodes' pods exist only in the API server. The default lane runs
``REPRESENTATIVE``; ``make test-windows-netpol`` (``WINCNI_NETPOL_CASES=all``) runs all 112.

Then what a node lives through: a pod started under a policy is closed from its first probe (ADD
takes the agent's state), Service traffic is judged on the backend's address after kube-proxy's
load balancer, and after an agent restart, the API server away and back, and an HNS restart with
the pods made again, the node holds every rule once.
"""

from __future__ import annotations

import ipaddress
import json
import os
import subprocess
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterator

import pytest

from controlplane import ControlPlane, KubeError, endpoint_slice_doc, service_doc
from flannelnode import (
    CONTAINERD_CONFIG,
    HOSTGW_LEASE,
    NODE_IP,
    NODE_NAME,
    FlannelNode,
    KubeSubnets,
    flannel_node,
)
from gotool import go_tool
from neighbours import Daemon, stop, wait_for
from netpol import enforced
from netpol.oracles import Step, cyclonus_cases, knp_verdicts, steps
from test_windows_kubeproxy import backends, kube_proxy_argv
from tools.wincni.netpol.kubeapi import SA_DIR
from winenode import ROOT, toolchain

#: cyclonus's cases by index, one or more of each kind: target namespace and pod selector, deny
#: and allow all, peers by pod and namespace label, ipBlock with except both ways, numbered and
#: named ports over TCP and UDP, SCTP (refused), a named port not served, several ports, every
#: action (policy created, updated, deleted; namespace and pod created, relabelled, deleted) and
#: the conflicts between allow and deny.
REPRESENTATIVE = (0, 4, 6, 8, 9, 17, 19, 21, 31, 39, 42, 44, 47, 68, 70, 74, 80, 88, 90, 91, 92, 93, 94, 95, 96, 102)
CASES = range(112) if os.environ.get("WINCNI_NETPOL_CASES") == "all" else REPRESENTATIVE
CONVERGE_S = 120.0  # the agent's sync under Wine on a busy 2-core machine, with a relist after an outage
RESYNC_S = 3  # the agent's --resync here: an HNS restart is repaired within it
ORACLE_NET = ipaddress.ip_network("192.168.1.0/24")  # cyclonus's mock cluster hands out 192.168.1.1..
ORACLE_NODE = "node-0"  # cyclonus's node that is this one
OFFSET = 16  # its pods' last octet here: clear of the gateway (.1) and flanneld's host endpoint (.2)
SA_MOUNT = r"C:\hostprocess\netpol"  # CONTAINER_SANDBOX_MOUNT_POINT: the container's volumes are under it
STATE = r"C:\ProgramData\wincni\netpol.json"  # where ADD reads the agent's state by default
NETPOL_RBAC = ROOT / "deploy" / "netpol" / "netpol.yaml"
OTHER_CA = ROOT / "tests" / "data" / "netpol" / "other-ca.crt"
POLICIES = "/apis/networking.k8s.io/v1/namespaces/{ns}/networkpolicies"
PODS = "/api/v1/namespaces/{ns}/pods"


# ------------------------------------------------------------------ cyclonus's cluster on this node
class Relocated:
    """cyclonus's addresses moved into this node's lease, every ipBlock with them: an address
    keeps its last octet plus ``OFFSET``, so its pods (.1-.11, inside 192.168.1.0/28) land in
    lease.16/28; a block of /28 or longer moves by the same offset, a shorter one of the oracle's
    /24 is the lease's own. Which pods each block holds is unchanged (``_same_members`` checks)."""

    def __init__(self, lease: str) -> None:
        self.lease = ipaddress.ip_network(lease)

    def address(self, ip: str) -> str:
        a = ipaddress.ip_address(ip)
        if a not in ORACLE_NET:
            return ip
        return str(self.lease.network_address + (int(a) - int(ORACLE_NET.network_address)) + OFFSET)

    def block(self, cidr: str) -> str:
        net = ipaddress.ip_network(cidr, strict=False)
        if not net.subnet_of(ORACLE_NET):
            return cidr
        if net.prefixlen >= 28:
            return f"{self.address(str(net.network_address))}/{net.prefixlen}"
        return str(ipaddress.ip_network(f"{self.lease.network_address}/{net.prefixlen}", strict=False))

    def step(self, step: Step) -> Step:
        pods = [
            {
                **p,
                "spec": {
                    **p["spec"],
                    "nodeName": NODE_NAME if p["spec"]["nodeName"] == ORACLE_NODE else p["spec"]["nodeName"],
                },
                "status": {"podIP": self.address(p["status"]["podIP"])},
            }
            for p in step.pods
        ]
        policies = [{**pol, "spec": self._spec(pol["spec"])} for pol in step.policies]
        moved = replace(step, pods=pods, policies=policies)
        _same_members(step, moved)
        return moved

    def _spec(self, spec: dict) -> dict:
        spec = json.loads(json.dumps(spec))
        for rule, peers in [(r, "from") for r in spec.get("ingress", [])] + [(r, "to") for r in spec.get("egress", [])]:
            for peer in rule.get(peers, []):
                block = peer.get("ipBlock")
                if block:
                    block["cidr"] = self.block(block["cidr"])
                    if "except" in block:
                        block["except"] = [self.block(c) for c in block["except"]]
        return spec


def _blocks(step: Step) -> list[str]:
    found = []
    for pol in step.policies:
        for rule, peers in [(r, "from") for r in pol["spec"].get("ingress", [])] + [
            (r, "to") for r in pol["spec"].get("egress", [])
        ]:
            for peer in rule.get(peers, []):
                block = peer.get("ipBlock")
                if block:
                    found += [block["cidr"], *block.get("except", [])]
    return found


def _same_members(before: Step, after: Step) -> None:
    """Every ipBlock holds the same pods after the move as before."""
    old, new = before.addresses, after.addresses
    for was, now in zip(_blocks(before), _blocks(after)):
        for pod in old:
            inside = ipaddress.ip_address(old[pod]) in ipaddress.ip_network(was, strict=False)
            assert inside == (ipaddress.ip_address(new[pod]) in ipaddress.ip_network(now, strict=False)), (
                was,
                now,
                pod,
            )


@dataclass
class Cluster:
    """What the lane wrote to the API server, and the pods of this node made through libcni: each
    step is written as the difference from the one before, as a cluster changes."""

    node: FlannelNode
    plane: ControlPlane
    namespaces: dict[str, dict] = field(default_factory=dict)  # name -> labels
    pods: dict[str, dict] = field(default_factory=dict)  # ns/name -> object written
    policies: dict[str, dict] = field(default_factory=dict)  # ns/name -> spec
    sandboxes: dict[str, str] = field(default_factory=dict)  # ns/name -> address, this node's pods

    @property
    def kube(self) -> Any:
        return self.plane.kube

    def write(self, step: Step) -> None:
        wanted_ns = {n["metadata"]["name"]: n["metadata"].get("labels", {}) for n in step.namespaces}
        for name, labels in wanted_ns.items():
            self.namespace(name, labels)
        wanted_pols = {f"{p['metadata']['namespace']}/{p['metadata']['name']}": p for p in step.policies}
        for key in [k for k in self.policies if k not in wanted_pols]:
            ns, name = key.split("/")
            self.kube.delete(POLICIES.format(ns=ns) + f"/{name}")
            del self.policies[key]
        wanted_pods = {f"{p['metadata']['namespace']}/{p['metadata']['name']}": p for p in step.pods}
        for key in [k for k in self.pods if k not in wanted_pods]:
            self.delete_pod(key)
        for key, pod in wanted_pods.items():
            self.pod(key, pod)
        for key, pol in wanted_pols.items():
            ns, name = key.split("/")
            if self.policies.get(key) == pol["spec"]:
                continue
            doc = {
                "apiVersion": "networking.k8s.io/v1",
                "kind": "NetworkPolicy",
                "metadata": {"namespace": ns, "name": name},
            }
            doc["spec"] = pol["spec"]
            if key in self.policies:
                self.kube.call("PUT", POLICIES.format(ns=ns) + f"/{name}", doc)
            else:
                self.kube.create(POLICIES.format(ns=ns), doc)
            self.policies[key] = pol["spec"]
        for name in [n for n in self.namespaces if n not in wanted_ns]:
            self.delete_namespace(name)

    def namespace(self, name: str, labels: dict) -> None:
        if name not in self.namespaces:
            self.kube.create(
                "/api/v1/namespaces",
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}},
            )
            # the ServiceAccount admission wants the account a pod runs as (no controller makes it
            # here); a namespace made again finds its first one, left behind in etcd
            try:
                self.kube.create(f"/api/v1/namespaces/{name}/serviceaccounts", {"metadata": {"name": "default"}})
            except KubeError as exc:
                if exc.code != 409:
                    raise
        elif self.namespaces[name] != labels:
            gone = {k: None for k in self.namespaces[name] if k not in labels}
            self.kube.patch(f"/api/v1/namespaces/{name}", {"metadata": {"labels": {**gone, **labels}}})
        self.namespaces[name] = labels

    def delete_namespace(self, name: str) -> None:
        """Emptied, deleted and finalized (no namespace controller runs here to do it): a deleted
        namespace goes once its last finalizer does."""
        for key in [k for k in self.pods if k.startswith(f"{name}/")]:
            self.delete_pod(key)
        for key in [k for k in self.policies if k.startswith(f"{name}/")]:
            self.kube.delete(POLICIES.format(ns=name) + f"/{key.split('/')[1]}")
            del self.policies[key]
        self.kube.delete(f"/api/v1/namespaces/{name}")
        doc = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}, "spec": {"finalizers": []}}
        self.kube.call("PUT", f"/api/v1/namespaces/{name}/finalize", doc)
        del self.namespaces[name]

    def pod(self, key: str, pod: dict) -> None:
        ns, name = key.split("/")
        meta = {"namespace": ns, "name": name, "labels": pod["metadata"].get("labels", {})}
        containers = [
            {"name": c["name"], "image": "registry.k8s.io/pause:3.10", "ports": c.get("ports", [])}
            for c in pod["spec"]["containers"]
        ]
        doc = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": meta,
            "spec": {"nodeName": pod["spec"]["nodeName"], "containers": containers},
        }
        ip = pod["status"]["podIP"]
        held = self.pods.get(key)
        if held is not None and (held["spec"] != doc["spec"] or held["ip"] != ip):
            self.delete_pod(key)
            held = None
        if held is None:
            self.kube.create(PODS.format(ns=ns), doc)
            if doc["spec"]["nodeName"] == NODE_NAME:
                self.sandbox(key, ip)
            self.set_ip(key, ip)
        elif held["metadata"]["labels"] != meta["labels"]:
            gone = {k: None for k in held["metadata"]["labels"] if k not in meta["labels"]}
            self.kube.patch(PODS.format(ns=ns) + f"/{name}", {"metadata": {"labels": {**gone, **meta["labels"]}}})
        self.pods[key] = {**doc, "ip": ip}

    def set_ip(self, key: str, ip: str) -> None:
        """The address in the pod's status, as kubelet reports it once the sandbox is up."""
        ns, name = key.split("/")
        status = {"phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}]}
        self.kube.patch(PODS.format(ns=ns) + f"/{name}/status", {"status": status})

    def delete_pod(self, key: str) -> None:
        ns, name = key.split("/")
        self.kube.delete(PODS.format(ns=ns) + f"/{name}?gracePeriodSeconds=0")
        del self.pods[key]
        if key in self.sandboxes:
            self.node.libcni.ok("DEL", cid(key), self.node.node.sandbox("v2", cid(key)))
            del self.sandboxes[key]

    def sandbox(self, key: str, ip: str) -> dict:
        """The pod's sandbox through libcni at ``ip``, named to the plugins as kubelet names it."""
        ns, name = key.split("/")
        args = f"IgnoreUnknown=1;K8S_POD_NAMESPACE={ns};K8S_POD_NAME={name};IP={ip}"
        result = self.node.libcni.ok("ADD", cid(key), self.node.node.sandbox("v2", cid(key)), args=args).out
        self.sandboxes[key] = ip
        return result

    def remake_sandboxes(self) -> None:
        """Every sandbox of this node made again (DEL and ADD), as the runtime does after HNS lost them."""
        for key, ip in list(self.sandboxes.items()):
            self.node.libcni.ok("DEL", cid(key), self.node.node.sandbox("v2", cid(key)))
            self.sandbox(key, ip)


def cid(key: str) -> str:
    return "np-" + key.replace("/", "-")


# ------------------------------------------------------------------ the agent
class Agent:
    """``wincni.exe netpol`` under Wine as the DaemonSet runs it, in-cluster: the API server's
    address in its environment, its ServiceAccount's token and the CA under its mount point.
    Windows CPython needs pipes for its standard handles under Wine: a thread copies its output
    to ``log``."""

    def __init__(self, cluster: FlannelNode, plane: ControlPlane, log: Path) -> None:
        self.cluster, self.log = cluster, log
        node = cluster.node
        self.argv = [str(toolchain.WINE), node.exe("wincni"), "netpol", "--node-name", NODE_NAME]
        self.argv += ["--node-address", NODE_IP, "--containerd-config", CONTAINERD_CONFIG, "--resync", str(RESYNC_S)]
        self.env = {
            **node.win_env,
            "CONTAINER_SANDBOX_MOUNT_POINT": SA_MOUNT,
            "KUBERNETES_SERVICE_HOST": "127.0.0.1",
            "KUBERNETES_SERVICE_PORT": str(plane.port),
        }
        self.proc: subprocess.Popen | None = None
        self.lines: list[str] = []

    def start(self) -> Agent:
        self.lines = []
        self.proc = subprocess.Popen(
            self.argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            cwd=self.cluster.node.drive_c / "k",
            env=self.env,
        )
        threading.Thread(target=self._copy, args=(self.proc,), daemon=True).start()
        return self

    def _copy(self, proc: subprocess.Popen) -> None:
        with self.log.open("ab") as log:
            for line in proc.stdout:
                log.write(line)
                log.flush()
                self.lines.append(line.decode(errors="replace").rstrip())

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> None:
        if self.proc is not None:
            stop(self.proc)

    def wait_watching(self) -> None:
        def watching() -> bool:
            assert self.running(), f"wincni netpol exited ({self.proc.returncode}):\n" + "\n".join(self.lines[-30:])
            return any(line.endswith(": watching") for line in self.lines)

        wait_for("wincni netpol watching", watching, CONVERGE_S, self.log)

    def applies(self) -> int:
        """The endpoints this process has set so far, by its sync lines ("n apply")."""
        return sum(int(line.split("s: ", 1)[1].split(" apply")[0]) for line in self.lines if " sync in " in line)


def service_account(cluster: FlannelNode, plane: ControlPlane, ca: Path) -> None:
    """The token and CA where kubelet mounts them for a HostProcess container."""
    mount_account(cluster.node.path(SA_MOUNT), plane, ca)


def mount_account(mount: Path, plane: ControlPlane, ca: Path) -> None:
    folder = mount.joinpath(*SA_DIR)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "token").write_text(plane.tokens["netpol"])
    (folder / "ca.crt").write_bytes(ca.read_bytes())


@dataclass
class NetpolNode:
    cluster: FlannelNode
    plane: ControlPlane
    agent: Agent
    kube_proxy: Daemon
    pods: Cluster
    relocated: Relocated

    def endpoints(self) -> list[dict]:
        return self.cluster.node.hnsctl("endpoint", "list", "-o", "json")

    def misjudged(self, step: Step) -> list[tuple]:
        return enforced.misjudged_on_node(step, enforced.held(self.endpoints()), NODE_NAME)

    def converge(self, step: Step, what: str) -> int:
        """Until every probe with an end here walks as the step's table says; the probes judged."""
        deadline, wrong = time.monotonic() + CONVERGE_S, []
        while time.monotonic() < deadline:
            assert self.agent.running(), "wincni netpol exited:\n" + "\n".join(self.agent.lines[-30:])
            wrong = self.misjudged(step)
            if not wrong:
                return judged(step, self.endpoints())
            time.sleep(0.5)
        shown = "\n".join(f"{row} -> ours {got}" for _, row, got in wrong[:12])
        raise AssertionError(
            f"{what}: {len(wrong)} probes differ after {CONVERGE_S:g} s\n{shown}\n" + "\n".join(self.agent.lines[-20:])
        )

    def acls(self) -> dict[str, list]:
        """Each of this node's pods' ACL policies, by pod: what must neither double nor go missing."""
        names = {f"{cid(key)}_{self.cluster.network_name}": key for key in self.pods.sandboxes}
        found: dict[str, list] = {}
        for ep in self.endpoints():
            if ep.get("Name") in names:
                assert names[ep["Name"]] not in found, f"two endpoints for {ep['Name']}"
                found[names[ep["Name"]]] = [p for p in ep.get("Policies", []) if p["Type"] == "ACL"]
        assert set(found) == set(self.pods.sandboxes), (set(found), set(self.pods.sandboxes))
        return found


def handshake_errors(plane: ControlPlane) -> float:
    """The TLS handshakes the API server refused so far (its ``apiserver_tls_handshake_errors_total``)."""
    for line in plane.kube.get("/metrics").splitlines():
        if line.startswith("apiserver_tls_handshake_errors_total"):
            return float(line.split()[-1])
    return 0.0


def judged(step: Step, endpoints: list[dict]) -> int:
    """How many of the step's probes have an end on this node (the ones walked)."""
    local = {ip for _, ips, _ in enforced.held(endpoints) for ip in ips}
    ips = step.addresses
    return sum(ips[r["from"]] in local or ips[r["to"]] in local for r in enforced.probed(step))


@pytest.fixture(scope="module")
def netpol(tmp_path_factory: pytest.TempPathFactory, package_zip: Path) -> Iterator[NetpolNode]:
    kube_proxy_exe = go_tool("kube-proxy.exe", "program Services onto our pods")
    root = tmp_path_factory.mktemp("netpol-agent")
    with flannel_node(root, package_zip, "host-gw", KubeSubnets) as cluster:
        plane = cluster.subnets.plane
        plane.apply_rbac(NETPOL_RBAC)
        kubeconfig = plane.kubeconfig("kube-proxy", root / "kube-proxy.kubeconfig")
        kube_proxy = Daemon(
            kube_proxy_exe,
            kube_proxy_argv(cluster, kubeconfig, "", False),
            cluster.node.drive_c / "k",
            cluster.node.win_env,
            root / "kube-proxy.log",
        ).start(toolchain.WINE)
        service_account(cluster, plane, plane.ca)
        agent = Agent(cluster, plane, root / "wincni-netpol.log").start()
        try:
            agent.wait_watching()
            yield NetpolNode(cluster, plane, agent, kube_proxy, Cluster(cluster, plane), Relocated(HOSTGW_LEASE))
        finally:
            agent.stop()
            kube_proxy.stop()


@pytest.fixture(scope="module")
def cases() -> list[dict]:
    return cyclonus_cases()["cases"]


# ------------------------------------------------------------------ TLS in the frozen build
def test_frozen_wincni_exe_lists_through_tls_with_the_cluster_ca_and_refuses_another(
    netpol: NetpolNode, tmp_path: Path
) -> None:
    """The running agent reached the API server with the cluster CA (it synced: the state file is
    there). The same executable given another CA never gets a list: the API server counts the
    handshake it refused (its metric; it logs them only at -v=5), and the agent writes no state."""
    state = netpol.cluster.node.path(STATE)
    wait_for("the agent's state file", state.exists, CONVERGE_S, netpol.agent.log)
    assert json.loads(state.read_text())["node"] == NODE_NAME
    other = Agent(netpol.cluster, netpol.plane, tmp_path / "wrong-ca.log")
    wrong = tmp_path / "mount"
    mount_account(wrong, netpol.plane, OTHER_CA)
    other.env["CONTAINER_SANDBOX_MOUNT_POINT"] = toolchain.winpath(wrong)
    other.env["WINCNI_NETPOL_STATE"] = toolchain.winpath(tmp_path / "state" / "netpol.json")
    before = handshake_errors(netpol.plane)
    other.start()
    try:
        other.wait_watching()
        wait_for(
            "the agent's handshake refused", lambda: handshake_errors(netpol.plane) > before, CONVERGE_S, other.log
        )
        assert other.running() and not (tmp_path / "state" / "netpol.json").exists()
    finally:
        other.stop()


# ------------------------------------------------------------------ cyclonus's cases
@pytest.mark.parametrize("index", CASES)
def test_cyclonus_case_holds_on_the_node(netpol: NetpolNode, cases: list[dict], index: int, timings: dict) -> None:
    case = cases[index]
    start = time.monotonic()
    probes = 0
    for step in steps({"cases": [case]}):
        moved = netpol.relocated.step(step)
        netpol.pods.write(moved)
        probes += netpol.converge(moved, f"case {index} {case['name']!r} step {step.index}")
    assert probes > 0
    timings.setdefault("netpol_cases", []).append((index, probes, time.monotonic() - start))


# ------------------------------------------------------------------ from the first packet
def test_a_pod_started_under_a_policy_is_closed_from_its_first_probe(
    netpol: NetpolNode, cases: list[dict], timings: dict
) -> None:
    """A deny-all-ingress policy exists before the pod's ADD: while libcni's ADD runs, every
    probe that finds the endpoint is blocked; after the agent's apply it still is, and the pod
    reaches itself."""
    base = netpol.relocated.step(next(steps({"cases": [cases[3]]})))  # every pod of x: in from b, c of x, y
    netpol.pods.write(base)
    netpol.converge(base, "every pod of x isolated")
    key, ip = "x/fresh", netpol.relocated.address("192.168.1.12")
    meta = {"namespace": "x", "name": "fresh", "labels": {"pod": "fresh"}}
    spec = {"nodeName": NODE_NAME, "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}
    doc = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}
    netpol.plane.kube.create(PODS.format(ns="x"), doc)
    netpol.pods.pods[key] = {**doc, "ip": ip}
    state = netpol.cluster.node.path(STATE)
    wait_for(
        "the agent knowing the pod", lambda: key in json.loads(state.read_text())["pods"], CONVERGE_S, netpol.agent.log
    )
    client = base.addresses["y/a"]  # this node's pod in y: nothing limits its egress
    seen: list[bool] = []
    adding = threading.Thread(target=netpol.pods.sandbox, args=(key, ip))
    adding.start()
    while True:
        alive = adding.is_alive()
        eps = enforced.held(netpol.endpoints())
        if any(ip in ips for _, ips, _ in eps):
            seen.append(enforced.walked(eps, client, ip, 80, "TCP"))
        if not alive:
            break
    adding.join()
    assert key in netpol.pods.sandboxes, "the ADD failed"
    netpol.pods.set_ip(key, ip)
    wait_for(
        "the agent's apply (its allow to the pod's own address)",
        lambda: enforced.walked(enforced.held(netpol.endpoints()), ip, ip, 80, "TCP"),
        CONVERGE_S,
        netpol.agent.log,
    )
    assert seen and not any(seen), seen
    timings["netpol_first_packet"] = len(seen)
    assert not enforced.walked(enforced.held(netpol.endpoints()), client, ip, 80, "TCP")
    netpol.pods.delete_pod(key)


# ------------------------------------------------------------------ Service traffic
def test_service_traffic_is_judged_on_the_backends_address(netpol: NetpolNode, cases: list[dict]) -> None:
    """kube-proxy balances a Service over x/a; a client's packet to the cluster IP goes to the
    backend kube-proxy's load balancer names (DNAT before ACL: assumed, docs/DEVELOPING.md), and
    the ACLs the agent set there decide, as kube-network-policies decides for the backend's
    address. x/a admits only pods labelled pod=c of x (the case "pods by label + nil ns")."""
    step = netpol.relocated.step(next(steps({"cases": [cases[13]]})))
    netpol.pods.write(step)
    netpol.converge(step, "pods by label + nil ns")
    backend = step.addresses["x/a"]
    ports = [{"name": "http", "port": 80, "protocol": "TCP", "targetPort": 80}]
    service = netpol.plane.kube.create(
        "/api/v1/namespaces/x/services", {**service_doc("web", ports), "metadata": {"name": "web", "namespace": "x"}}
    )
    vip = service["spec"]["clusterIP"]
    netpol.plane.kube.create(
        "/apis/discovery.k8s.io/v1/namespaces/x/endpointslices", endpoint_slice_doc("web", ports, {backend: NODE_NAME})
    )
    ours = {ep["ID"] for ep in netpol.endpoints() if ep.get("Name") == f"{cid('x/a')}_{netpol.cluster.network_name}"}

    def balanced() -> list[dict] | None:
        lbs = netpol.cluster.node.hnsctl("loadbalancer", "list", "-o", "json")
        return lbs if backends(lbs, vip, 80) == ours else None

    [lb] = [
        lb
        for lb in wait_for("the Service's load balancer", balanced, CONVERGE_S, netpol.kube_proxy.log)
        if vip in lb.get("FrontendVIPs", [])
    ]
    [target] = [ep for ep in netpol.endpoints() if ep["ID"] in lb["HostComputeEndpoints"]]
    [internal] = [pm["InternalPort"] for pm in lb["PortMappings"] if pm["ExternalPort"] == 80]
    address = target["IpConfigurations"][0]["IpAddress"]
    assert address == backend
    clients = [k for k in step.addresses if k != "x/a"]
    packets = [{"srcIP": step.addresses[k], "dstIP": address, "dstPort": internal, "protocol": "TCP"} for k in clients]
    verdicts = knp_verdicts(step.cluster, packets)
    eps = enforced.held(netpol.endpoints())
    walked = {k: enforced.walked(eps, step.addresses[k], address, internal, "TCP") for k in clients}
    expected = {k: v["ingress"] for k, v in zip(clients, verdicts)}  # the clients' egress is open in this case
    assert walked == expected and any(expected.values()) and not all(expected.values()), (walked, expected)


# ------------------------------------------------------------------ what a node lives through
def _baseline(netpol: NetpolNode, cases: list[dict]) -> Step:
    step = netpol.relocated.step(next(steps({"cases": [cases[19]]})))  # pods by label + ns by label
    netpol.pods.write(step)
    netpol.converge(step, "pods by label + ns by label")
    return step


def test_an_agent_restart_changes_nothing_and_then_follows_a_change(netpol: NetpolNode, cases: list[dict]) -> None:
    """Restarted on an unchanged node, the agent sets no endpoint (compare before apply): a later
    policy change costs it exactly the endpoints whose rules changed."""
    step = _baseline(netpol, cases)
    before = netpol.acls()
    netpol.agent.stop()
    netpol.agent.start().wait_watching()
    time.sleep(2 * RESYNC_S)  # its first sync and a resync
    assert netpol.agent.applies() == 0, netpol.agent.lines
    assert netpol.acls() == before
    changed = netpol.relocated.step(next(steps({"cases": [cases[8]]})))  # ingress: deny all in x
    netpol.pods.write(changed)
    netpol.converge(changed, "deny all in x after the restart")
    after = netpol.acls()
    moved = {k for k in after if after[k] != before.get(k)}
    assert netpol.agent.applies() == len(moved) and moved, (moved, netpol.agent.lines)
    netpol.pods.write(step)
    netpol.converge(step, "back to the baseline")


def test_while_the_api_server_is_away_the_rules_stay_and_after_it_the_node_converges(
    netpol: NetpolNode, cases: list[dict]
) -> None:
    step = _baseline(netpol, cases)
    before = netpol.acls()
    netpol.plane.stop_apiserver()
    try:
        time.sleep(3 * RESYNC_S)
        assert netpol.agent.running() and netpol.acls() == before
        assert not netpol.misjudged(step)
    finally:
        netpol.plane.start_apiserver()
    changed = netpol.relocated.step(next(steps({"cases": [cases[6]]})))  # egress: deny all in x
    netpol.pods.write(changed)
    netpol.converge(changed, "egress deny all once the API server is back")
    netpol.pods.write(step)
    netpol.converge(step, "back to the baseline")
    assert netpol.acls() == before


def test_after_an_hns_restart_and_the_pods_made_again_every_rule_is_there_once(
    netpol: NetpolNode, cases: list[dict]
) -> None:
    """HNS restarts (flanneld's host-gw network is persistent: it stays, with its endpoints) and
    flanneld with it; the runtime makes every sandbox again: new endpoints, their first rules from
    ADD (the agent's state, less each pod's allow to itself), no event the agent could tell from
    the old pods'. Its resync finds them and sets the rest: no rule lost or doubled."""
    step = _baseline(netpol, cases)
    before = netpol.acls()
    ours = {ep["ID"] for ep in netpol.endpoints() if ep.get("Name", "").startswith("np-")}
    netpol.cluster.node.hnsctl("restart")
    netpol.cluster.restart_flanneld()
    netpol.pods.remake_sandboxes()
    made = {ep["ID"] for ep in netpol.endpoints() if ep.get("Name", "").startswith("np-")}
    assert len(made) == len(ours) and not made & ours, (ours, made)
    netpol.converge(step, "after the HNS restart")
    wait_for("every pod's rules as before", lambda: netpol.acls() == before, CONVERGE_S, netpol.agent.log)
    assert netpol.agent.running()
