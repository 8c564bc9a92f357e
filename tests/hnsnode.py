"""The one simulated Windows node of the tests (unit, e2e, and the Wine lane's ``WineNode`` subclass).

``Node`` holds a node's files under ``root`` (flanneld's lease and net-conf.json, kube-proxy's
SourceVip.json, the CNI config and bin dirs, flannel's and host-local's stores) and its simulated
HNS, and plays flanneld and the runtime: ``hnsctl`` (run in-process, it is only the setup tool)
creates the HNS network, ``cbr0_ep``, namespaces and pause containers; the plugins themselves run
as subprocesses exactly as the kubelet runs them (stdin = config, ``CNI_*`` env), with host-local
found on ``CNI_PATH`` through a tiny wrapper that records every IPAM invocation. Every raw HNS call
goes to ``LIBHNS_JOURNAL``, so a test can read the very documents HNS received. flannel, ``wincni
doctor`` and ``wincni install`` also run in-process, for the tests that read their stderr or
inject a fake disk.
"""

from __future__ import annotations

import io
import ipaddress
import json
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from libhns.objects import HostComputeEndpoint
from libhns.sim import Simulator
from plugins.flannel.__main__ import main as flannel_main
from plugins.registry import COMMANDS
from testdata import FIXTURES, GOLDENS, KUBEPROXY, SERVICES
from tools import hnsctl
from tools.wincni.cli.context import Context
from tools.wincni.cli.main import build_parser
from tools.wincni.cli.main import main as wincni_main
from tools.wincni.install.command import run as install_run
from tools.wincni.install.options import InstallOptions
from tools.wincni.node.build import running_build
from tools.wincni.node.disk import Disk
from tools.wincni.node.installed import MANIFEST

VENV_BIN = Path(sys.executable).parent
SUBNET = "10.244.4.0/24"
MGMT_IP = "10.127.130.36"
SOURCE_VIP = "10.244.4.9"
CLUSTER_DNS = "10.96.0.10"
EXCEPTIONS = ["10.244.0.0/16", "10.96.0.0/12", "10.127.130.0/24"]  # cluster, services, node subnet
GUID = re.compile(r"[0-9A-Fa-f]{8}-(?:[0-9A-Fa-f]{4}-){3}[0-9A-Fa-f]{12}")

# The kubelet's config.yaml as kubeadm writes it (abridged): what install reads the cluster DNS from.
KUBELET_CONFIG = """apiVersion: kubelet.config.k8s.io/v1beta1
authentication:
  anonymous:
    enabled: false
cgroupDriver: systemd
clusterDNS:
- 10.96.0.10
clusterDomain: cluster.local
kind: KubeletConfiguration
"""

# host-local behind a recorder: one "<COMMAND> <containerID>" line per IPAM invocation.
_IPAM_WRAPPER = """#!/bin/sh
echo "$CNI_COMMAND $CNI_CONTAINERID" >> "{log}"
exec "{real}"
"""


@dataclass
class Run:
    rc: int
    out: Any
    stderr: str

    @property
    def ok(self) -> bool:
        return self.rc == 0

    def failed(self, code: int, *words: str) -> dict:
        """Assert a CNI error with ``code`` whose msg+details contain every word; return it."""
        assert self.rc == 1, f"expected error {code}, got rc={self.rc} out={self.out} stderr={self.stderr}"
        text = f"{self.out.get('msg', '')} {self.out.get('details', '')}"
        assert self.out["code"] == code, self.out
        for word in words:
            assert word in text, f"{word!r} not in {text!r}"
        return self.out


class Node:
    """One node's files, HNS state, IPAM store, CNI_PATH and journals, all under ``root``."""

    def __init__(self, root: Path, plugin: str = "win-bridge", version: str | None = None) -> None:
        self.root = root
        self.plugin = plugin
        self.bin = root / "bin"
        self.bin.mkdir(parents=True)
        self.ipam_dir = root / "ipam"
        self.ipam_log = root / "ipam.log"
        self.journal_path = root / "journal.jsonl"
        wrapper = self.bin / "host-local"
        wrapper.write_text(_IPAM_WRAPPER.format(log=self.ipam_log, real=VENV_BIN / "host-local"))
        wrapper.chmod(0o755)
        for delegate in ("win-bridge", "win-overlay", "flannel"):  # what flannel finds on CNI_PATH; doctor's set
            shutil.copy(VENV_BIN / delegate, self.bin / delegate)  # copies: the doctor fails a linked launcher
        self.flannel_dir = root / "flannel"
        self.subnet_env = root / "subnet.env"
        self.net_conf = root / "net-conf.json"
        self.source_vip = root / "SourceVip.json"
        self.conf_dir = root / "etc-cni-net.d"  # the CNI config dir: doctor reads it, install writes it
        self.cni_bin = root / "opt-cni-bin"  # where install puts the plugins (absent until it does)
        self.disk = Disk()  # install's file system (a test may give it Windows' rules)
        self.kubelet_config = root / "kubelet" / "config.yaml"
        self.cni_conf: dict | None = None  # what doctor() writes to conf_dir first, when set
        self.env = {
            "PATH": os.environ.get("PATH", ""),
            "LIBHNS_BACKEND": "sim",
            "LIBHNS_SIM_DIR": str(root / "hns"),
            "CNI_PATH": str(self.bin),
            "CNI_IFNAME": "eth0",
            "LIBHNS_JOURNAL": str(self.journal_path),
            "WINCNI_LOCK_DIR": str(root / "locks"),
        }  # standalone mode's node-wide lock, not /run's
        if version:
            self.env["LIBHNS_SIM_VERSION"] = version
        self.network = ""

    # ------------------------------------------------------------------ flanneld / runtime side
    def hnsctl(self, *args: str) -> Any:
        """hnsctl in-process (it is the setup tool here, not under test); JSON output parsed."""
        out, err = io.StringIO(), io.StringIO()
        env = {k: v for k, v in self.env.items() if k != "LIBHNS_JOURNAL"}
        rc = hnsctl.main(list(args), out, err, env)
        assert rc == 0, f"hnsctl {' '.join(args)}: {err.getvalue()}"
        return json.loads(out.getvalue()) if "json" in args else out.getvalue()

    def bridge(self, name: str = "cbr0", host_endpoint: bool = True, ipv6_subnet: str = "") -> "Node":
        """What flanneld host-gw does: the L2Bridge network and its host endpoint at .2
        (with ``ipv6_subnet``, a dual-stack network as start.ps1 makes one)."""
        self.network = name
        args = ["network", "create", name, "--type", "L2Bridge", *_subnet_args(SUBNET), "--adapter", "Ethernet"]
        if ipv6_subnet:
            args += ["--subnet", ipv6_subnet]
        self.hnsctl(*args)
        if host_endpoint:
            self.hnsctl("endpoint", "create", f"{name}_ep", "--network", name, "--ip", "10.244.4.2", "--host")
        return self

    def overlay(self, name: str = "vxlan0", vsid: int = 4096, *extra: str, subnet: str = SUBNET) -> "Node":
        """What flanneld vxlan does: the Overlay network with the node's management IP."""
        self.network = name
        self.hnsctl(
            "network",
            "create",
            name,
            "--type",
            "Overlay",
            *_subnet_args(subnet),
            "--vsid",
            str(vsid),
            "--management-ip",
            MGMT_IP,
            *extra,
        )
        return self

    def lease(self, subnet: str = "") -> "Node":
        """flanneld's subnet.env: the fixture's lease (10.244.4.1/24), or one for ``subnet``."""
        _write(self.subnet_env, lease_text(subnet).encode() if subnet else (FIXTURES / "subnet.env").read_bytes())
        return self

    def write_net_conf(self, doc: dict) -> "Node":
        _write(self.net_conf, json.dumps(doc).encode())
        return self

    def reserve_source_vip(self, ip: str = SOURCE_VIP, network: str = "") -> "Node":
        """What ``wincni sourcevip`` leaves: kube-proxy's SourceVip.json and host-local's reservation."""
        self.source_vip.write_text(json.dumps({"ip4": {"ip": f"{ip}/24"}}))
        store = self.ipam_dir / (network or self.network)
        store.mkdir(parents=True, exist_ok=True)
        (store / ip).write_bytes(b"_wincni-source-vip\r\nsourcevip")
        return self

    def write_cni_conf(self, doc: dict, name: str = "10-flannel.conf") -> Path:
        """A config in the node's CNI config dir (the one ``doctor`` reads)."""
        return _write(self.conf_dir / name, json.dumps(doc).encode())

    def read_cni_conf(self, name: str = "10-flannel.conflist") -> dict:
        return json.loads((self.conf_dir / name).read_text())

    def flannel_files(self, kind: str, network: str = "", lease: str = "", source_vip: str = SOURCE_VIP) -> dict:
        """Every file flanneld, kube-proxy and ``wincni sourcevip`` leave on a healthy ``kind``
        ('bridge' or 'overlay') node: flanneld's ``network`` (else cbr0 or vxlan0) and ``lease``
        (else the fixture's), the ``source_vip`` reserved unless empty; returns the flannel config,
        whose ``delegate`` the caller may edit."""
        name = network or ("cbr0" if kind == "bridge" else "vxlan0")
        self.lease(lease).write_net_conf(net_conf_doc(kind, name))
        if source_vip:
            self.reserve_source_vip(source_vip, network=name)
        self.write_manifest(running_build() + "-1")  # laid by this checkout's build, as the doctor asks
        delegate = {
            "type": f"win-{kind}",
            "policies": [
                {"Name": "EndpointPolicy", "Value": {"Type": "OutBoundNAT", "ExceptionList": list(EXCEPTIONS)}},
                {
                    "Name": "EndpointPolicy",
                    "Value": {"Type": "ROUTE", "DestinationPrefix": "10.96.0.0/12", "NeedEncap": True},
                },
            ],
        }
        return {
            "cniVersion": "1.0.0",
            "name": name,
            "type": "flannel",
            "delegate": delegate,
            "subnetFile": str(self.subnet_env),
            "netConf": str(self.net_conf),
            "ipam": {"dataDir": str(self.ipam_dir)},
        }

    def write_manifest(self, build: str) -> None:
        """The install manifest in the doctor's bin dir, naming ``build``."""
        _write(self.bin / MANIFEST, json.dumps({"build": build}).encode())

    def doctor(self, *args: str, expect: int | None = None) -> dict[str, dict]:
        """``wincni doctor`` in-process on this node's files (``cni_conf`` written first, so a test
        may edit it before); the checks by id, the exit code checked against them."""
        if self.cni_conf is not None:
            self.write_cni_conf(self.cni_conf)
        out, err = io.StringIO(), io.StringIO()
        rc = wincni_main(
            self.doctor_argv(*args),
            out,
            err,
            self.env,
            platform="linux",
            cwd=str(self.root),
        )
        assert err.getvalue() == ""
        found = {c["id"]: c for c in json.loads(out.getvalue())["checks"]}
        assert rc == (1 if any(c["status"] == "fail" for c in found.values()) else 0)
        if expect is not None:
            assert rc == expect, found
        return found

    def wincni(self, command: str, *args: str, env: dict | None = None) -> tuple[int, str, str]:
        """``wincni <command>`` in-process on this node's files (``node_flags``), in its root:
        (exit status, stdout, stderr)."""
        out, err = io.StringIO(), io.StringIO()
        argv = [command, *self.node_flags(), *args]
        rc = wincni_main(argv, out, err, self.env if env is None else env, platform="linux", cwd=str(self.root))
        return rc, out.getvalue(), err.getvalue()

    def doctor_argv(self, *args: str, output: str = "json") -> list[str]:
        """``wincni doctor``'s arguments (after the program) on this node's CNI config, bin dir,
        SourceVip.json and containerd config.toml (absent until a test writes it)."""
        return ["doctor", *self.node_flags(), "-o", output, *args]

    def node_flags(self) -> list[str]:
        """The flags naming this node's files, which doctor, bundle and metrics take alike."""
        return [
            "--cni-conf",
            str(self.conf_dir),
            "--cni-bin-dir",
            str(self.bin),
            "--source-vip",
            str(self.source_vip),
            "--containerd-config",
            str(self.root / "config.toml"),
        ]

    def sandbox(self, api: str, cid: str) -> str:
        """The runtime's sandbox before ADD: a namespace (containerd, 'v2') or a pause container
        (dockershim, 'v1'); returns the CNI_NETNS to pass."""
        if api == "v2":
            return self.hnsctl("namespace", "create", "-o", "json")["ID"]
        self.hnsctl("container", "create", cid)
        return "none"

    def install_argv(self, *args: str, output: str = "json", dirs: bool = True) -> list[str]:
        """``wincni install`` from this node's net-conf.json and kubelet config (kubeadm's, written
        unless the test wrote its own), into ``cni_bin`` and ``conf_dir`` with ``dirs``."""
        if not self.kubelet_config.exists():
            _write(self.kubelet_config, KUBELET_CONFIG.encode())
        base = [
            "install",
            "--net-conf",
            str(self.net_conf),
            "--node-ip",
            f"{MGMT_IP}/24",
            "--containerd-config",
            str(self.root / "config.toml"),
            "--kubelet-config",
            str(self.kubelet_config),
            "-o",
            output,
        ]
        if dirs:
            base += ["--cni-bin-dir", str(self.cni_bin), "--cni-conf-dir", str(self.conf_dir)]
        return base + list(args)

    def install(self, *args: str, expect: int = 0, output: str = "json", dirs: bool = True) -> Any:
        """``wincni install`` in-process on ``disk`` (``main`` would take the real one); its JSON or table."""
        out = io.StringIO()
        parsed = build_parser("linux").parse_args(self.install_argv(*args, output=output, dirs=dirs))
        rc = install_run(
            InstallOptions.of(parsed), Context(out, io.StringIO(), {}, "linux", str(self.root)), disk=self.disk
        )
        assert rc == expect, out.getvalue()
        return json.loads(out.getvalue()) if output == "json" else out.getvalue()

    # ------------------------------------------------------------------ plugin runs
    def conf(self, cni_version: str = "1.0.0", **extra: Any) -> dict:
        doc = {
            "cniVersion": cni_version,
            "name": self.network,
            "type": self.plugin,
            "ipam": {"type": "host-local", "subnet": SUBNET, "dataDir": str(self.ipam_dir)},
        }
        doc.update(extra)
        return doc

    def fixture(self, name: str) -> dict:
        """A node fixture's delegate, completed the way flannel completes it (name, ipam)."""
        doc = json.loads((FIXTURES / name).read_text())
        delegate = dict(doc["delegate"])
        delegate.update(
            cniVersion=doc["cniVersion"],
            name=doc["name"],
            ipam={"type": "host-local", "subnet": SUBNET, "dataDir": str(self.ipam_dir)},
        )
        if doc.get("capabilities"):
            delegate["capabilities"] = doc["capabilities"]
        return delegate

    def venv_plugins(self) -> "Node":
        """CNI_PATH = this venv's console scripts, so flannel runs its delegate and IPAM
        in-process, and no journal: as a node runs them, when the test needs no recording."""
        self.env["CNI_PATH"] = str(VENV_BIN)
        self.env.pop("LIBHNS_JOURNAL", None)
        return self

    def allocated_to(self, cid: str) -> list[str]:
        """The addresses host-local holds for ``cid``."""
        return [ip for ip, owner in self.ip_files().items() if owner == cid]

    def flannel_conf(self, fixture: str, ipam_store: bool = True, **changes: Any) -> dict:
        """A node fixture as flannel runs it here: flanneld's lease (``lease()`` writes it) and
        flannel's state under ``root``, and host-local's too unless not ``ipam_store``."""
        doc = json.loads((FIXTURES / fixture).read_text())
        doc.update(subnetFile=str(self.subnet_env), dataDir=str(self.flannel_dir), netConf=str(self.net_conf))
        if ipam_store:
            doc["ipam"] = {"dataDir": str(self.ipam_dir)}
        doc.update(changes)
        return doc

    def run(
        self, command: str, conf: Any, cid: str = "", netns: str = "", plugin: str | None = None, **env: str
    ) -> Run:
        full = {**self.env, "CNI_COMMAND": command, "CNI_CONTAINERID": cid, "CNI_NETNS": netns, **env}
        stdin = conf if isinstance(conf, bytes) else json.dumps(conf).encode()
        proc = subprocess.run(
            [str(VENV_BIN / (plugin or self.plugin))], input=stdin, env=full, capture_output=True, timeout=120
        )
        text = proc.stdout.decode()
        return Run(proc.returncode, json.loads(text) if text.strip() else None, proc.stderr.decode())

    def flannel(self, command: str, conf: dict, **env: str) -> tuple[int, dict | None]:
        """flannel in-process through its ``main`` (so a test sees its stderr): (rc, parsed stdout)."""
        out = io.StringIO()
        rc = flannel_main({**self.env, "CNI_COMMAND": command, **env}, io.BytesIO(json.dumps(conf).encode()), out)
        return rc, json.loads(out.getvalue()) if out.getvalue() else None

    def add(self, conf: dict, cid: str, netns: str, **env: str) -> dict:
        run = self.run("ADD", conf, cid, netns, **env)
        assert run.ok, (run.out, run.stderr)
        return run.out

    def add_del_calls(self, conf: dict, cid: str, api: str) -> tuple[list[dict], list[dict]]:
        """The raw HNS calls of one ADD in a fresh ``api`` sandbox and of the DEL after it."""
        netns = self.sandbox(api, cid)
        self.journal()
        self.add(conf, cid, netns)
        add = self.journal()
        assert self.run("DEL", conf, cid, netns).ok
        return add, self.journal()

    def run_many(self, jobs: Iterable[tuple], workers: int = 20) -> list[Run]:
        """(command, conf, cid, netns) tuples, all at once, like a node starting many pods."""
        with ThreadPoolExecutor(workers) as pool:
            return list(pool.map(lambda job: self.run(*job), jobs))

    def fault_run(self, command: str, conf: dict, cid: str, netns: str, faults: str) -> Run:
        Simulator.from_env(self.env).reset_fault_counters()
        return self.run(command, conf, cid, netns, LIBHNS_SIM_FAULTS=faults)

    # ------------------------------------------------------------------ what happened
    def journal(self) -> list[dict]:
        """Raw HNS calls since the last look (the journal is emptied)."""
        return drain_jsonl(self.journal_path)

    def ipam_calls(self) -> list[str]:
        """IPAM invocations since the last look, e.g. ['ADD pod1', 'DEL pod1']."""
        if not self.ipam_log.exists():
            return []
        calls = self.ipam_log.read_text().split("\n")[:-1]
        self.ipam_log.unlink()
        return calls

    def ip_files(self) -> dict[str, str]:
        """host-local's reservations: address -> container ID."""
        store = self.ipam_dir / self.network
        if not store.exists():
            return {}
        return {p.name: p.read_bytes().split(b"\r\n")[0].decode() for p in store.iterdir() if _is_ip(p.name)}

    def sandbox_records(self) -> dict[str, tuple[str, str]]:
        """host-local's sandbox records (``store.SANDBOXES``): address -> (container ID, CNI_NETNS)."""
        from plugins.ipam_host_local.store import SANDBOXES, sandbox_record

        folder = self.ipam_dir / self.network / SANDBOXES
        found = {p.name: sandbox_record(p.read_bytes()) for p in folder.iterdir()} if folder.exists() else {}
        return {ip: (rec[0].container_id, rec[1]) if rec else ("?", "") for ip, rec in found.items()}

    def endpoints(self) -> dict[str, dict]:
        """V1 view of every endpoint by name (SharedContainers, Namespace, Policies, IPAddress …)."""
        return {e["Name"]: e for e in self.hnsctl("endpoint", "list", "--v1", "-o", "json")}

    def endpoints_v2(self) -> dict[str, dict]:
        return {e["Name"]: e for e in self.hnsctl("endpoint", "list", "-o", "json")}

    def attachments(self) -> set[str]:
        """Endpoint IDs attached anywhere: in a namespace or to a running container."""
        dump = self.hnsctl("dump", "-o", "json")
        out = {
            r["Data"]["Id"].upper()
            for ns in dump["namespaces"]
            for r in ns.get("Resources") or ()
            if r.get("Type") == "Endpoint"
        }
        out |= {e.upper() for c in self.hnsctl("container", "list", "-o", "json") for e in c["Endpoints"]}
        return out

    def fixture_lifecycle(self, fixture: str, api: str) -> tuple[dict, dict]:
        """ADD a node fixture's delegate unchanged in an ``api`` sandbox, then DEL it and check
        nothing is left; returns (the endpoint document HNS received, the ADD result)."""
        conf = self.fixture(fixture)
        netns = self.sandbox(api, "fixture")
        result = self.add(conf, "fixture", netns)
        [doc] = creates(self.journal())
        assert self.run("DEL", conf, "fixture", netns).ok
        self.assert_clean("fixture")
        return doc, result

    def assert_bad_inputs(self, rows: list[tuple[dict, str]]) -> None:
        """Each (config change, field) ADD, run in parallel, is code 7 naming the field, and
        neither IPAM nor HNS endpoint creation was asked for anything."""
        netns = self.sandbox("v2", "bad")
        runs = self.run_many(("ADD", self.conf(**change), f"bad{i}", netns) for i, (change, _) in enumerate(rows))
        for (change, field), run in zip(rows, runs):
            assert run.rc == 1 and run.out["code"] == 7 and field in run.out["msg"], (change, run.out)
        assert self.ipam_calls() == []
        assert not creates(self.journal())

    def assert_clean(self, cid: str) -> None:
        """Nothing of ``cid`` is left: no endpoint, no attachment, no address, no sandbox record."""
        name = f"{cid}_{self.network}"
        eps = self.endpoints()
        assert name not in eps, eps[name]
        live = {e["ID"].upper() for e in eps.values()}
        assert not self.attachments() - live, "an attachment points at a deleted endpoint"
        assert cid not in self.ip_files().values(), self.ip_files()
        assert cid not in {c for c, _ in self.sandbox_records().values()}, self.sandbox_records()


def flanneld_node(root: Path, plugin: str = "win-bridge", **kw: Any) -> Node:
    """A node as flanneld leaves it for ``plugin``: host-gw's L2Bridge ``cbr0`` with its host
    endpoint for win-bridge, vxlan's Overlay ``vxlan0`` for win-overlay, the lease for flannel.
    The ``node`` fixture's default build (tests/conftest.py)."""
    node = Node(root, plugin, **kw)
    if plugin == "flannel":
        return node.lease()
    return node.bridge() if plugin == "win-bridge" else node.overlay()


def two_pods_node(root: Path, kind: str) -> Node:
    """A healthy ``kind`` ('bridge' or 'overlay') node with two pods (pod-a 10.244.4.2, pod-b
    10.244.4.3) added through flannel in containerd sandboxes; the config names the cluster DNS."""
    node = Node(root)
    node.cni_conf = node.flannel_files(kind)
    node.bridge(host_endpoint=False) if kind == "bridge" else node.overlay()
    return add_two_pods(node)


def add_two_pods(node: Node) -> Node:
    """pod-a and pod-b added through flannel (in-process) on a node whose network flanneld made;
    flannel's store under the node's root, the cluster DNS in the config."""
    return add_pods(node, {"pod-a": "", "pod-b": ""})


def add_pods(node: Node, pods: dict[str, str]) -> Node:
    """Each pod (container ID -> address, host-local's next free one when empty) added through
    flannel in a containerd sandbox, as ``add_two_pods``; an address is asked for as a runtime
    does, with CNI_ARGS ``IP`` (host-local's static request), so the stores hold it."""
    node.cni_conf = {**node.cni_conf, "dataDir": str(node.flannel_dir)}
    node.cni_conf["delegate"]["dns"] = {"nameservers": [CLUSTER_DNS]}
    node.venv_plugins()
    node.write_cni_conf(node.cni_conf)
    for cid, ip in pods.items():
        env = {"CNI_CONTAINERID": cid, "CNI_NETNS": node.sandbox("v2", cid), "CNI_IFNAME": "eth0"}
        if ip:
            env["CNI_ARGS"] = f"IP={ip}"
        rc, out = node.flannel("ADD", node.cni_conf, **env)
        assert rc == 0, out
    return node


def pods_node(root: Path, kind: str) -> Node:
    """A ``kind`` ('bridge' or 'overlay') node as the doctor tests start from, with two pods added
    through flannel in containerd sandboxes, and two things to report: an endpoint named as ours
    that no sandbox holds, and a remote endpoint that no load balancer lists."""
    node = two_pods_node(root, kind)
    net = node.cni_conf["name"]
    node.hnsctl("endpoint", "create", f"gone-pod_{net}", "--network", net, "--ip", "10.244.4.200")
    node.hnsctl("endpoint", "create", "remote_10.244.4.201", "--network", net, "--ip", "10.244.4.201", "--remote")
    return node


def services_node(root: Path, kind: str) -> Node:
    """``two_pods_node`` with Services programmed as kube-proxy leaves them, read from an HNS dump
    (``tests/data/services/<kind>.json``, ``program_services``): load balancers over the pods and
    remote endpoints, the cluster DNS's among them, and on overlay the source VIP's endpoint."""
    return with_services(two_pods_node(root, kind))


def with_services(node: Node) -> Node:
    """The node's Services programmed from ``tests/data/services`` for its kind of network."""
    kind = "overlay" if node.cni_conf["delegate"]["type"] == "win-overlay" else "bridge"
    program_services(node, json.loads((SERVICES / f"{kind}.json").read_text()))
    return node


KUBE_PROXY_LANES = ("vxlan", "host-gw", "vxlan-dsr")


def kube_proxy_node(root: Path, lane: str) -> Node:
    """A node as the Windows lane's real kube-proxy left it (``tests/data/kubeproxy/<lane>``):
    flanneld's network as HNS returned it (on host-gw with its ``cbr0_ep``), the lane's pods added
    through flannel at their addresses, then kube-proxy's endpoints and load balancers programmed
    from its documents (``program_services``); on vxlan the source VIP kube-proxy used reserved."""
    state = kube_proxy_state(lane)
    network = state["network"]
    (subnet,) = network["Ipams"][0]["Subnets"]
    gateway = subnet["Routes"][0]["NextHop"]
    lease = f"{gateway}/{subnet['IpAddressPrefix'].split('/')[1]}"
    kind = "overlay" if network["Type"] == "Overlay" else "bridge"
    source_vips = {lb["SourceVIP"] for lb in state["loadbalancers"] if lb.get("SourceVIP")}
    source_vip = source_vips.pop() if kind == "overlay" else ""
    node = Node(root, version="13.3")  # the lane's HNS: Windows Server 2022's
    node.cni_conf = node.flannel_files(kind, network["Name"], lease, source_vip)
    node.network = network["Name"]
    _create_network(node, network)
    for doc in state["endpoints"]:
        if doc["Name"] == f"{network['Name']}_ep":  # flanneld's host endpoint, before any pod
            ip = doc["IpConfigurations"][0]["IpAddress"]
            node.hnsctl("endpoint", "create", doc["Name"], "--network", network["Name"], "--ip", ip, "--host")
    pods = {e["Name"].rsplit("_", 1)[0]: e["IpConfigurations"][0]["IpAddress"] for e in state["pods"]}
    add_pods(node, pods)
    program_services(node, {"endpoints": state["pods"] + state["endpoints"], "loadbalancers": state["loadbalancers"]})
    return node


#: Nodes with Services programmed: the hand-made dumps' kinds, then the real lane's.
PROXY_NODES = ("bridge", "overlay", *KUBE_PROXY_LANES)


def proxy_node(root: Path, name: str) -> Node:
    """A node with Services programmed: from a hand-made dump (``services_node``: 'bridge',
    'overlay') or as the real kube-proxy left it (``kube_proxy_node``: ``KUBE_PROXY_LANES``)."""
    return kube_proxy_node(root, name) if name in KUBE_PROXY_LANES else services_node(root, name)


def remote_backend(node: Node) -> str:
    """The lowest address of a remote endpoint (another node's pod) that a load balancer lists."""
    used = {e.upper() for lb in node.hnsctl("loadbalancer", "list", "-o", "json") for e in lb["HostComputeEndpoints"]}
    found = [
        e["IpConfigurations"][0]["IpAddress"]
        for e in node.hnsctl("endpoint", "list", "-o", "json")
        if e.get("Flags", 0) & 1 and e["ID"].upper() in used
    ]
    return min(found, key=ipaddress.ip_address)


def pod_address(node: Node) -> str:
    """The lowest address host-local holds for a pod."""
    return min((ip for ip, owner in node.ip_files().items() if not owner.startswith("_")), key=ipaddress.ip_address)


def source_vip_of(node: Node) -> str:
    """The source VIP the node's SourceVip.json gives kube-proxy."""
    return json.loads(node.source_vip.read_text())["ip4"]["ip"].split("/")[0]


def kube_proxy_state(lane: str) -> dict[str, Any]:
    """One lane's documents: ``network``, ``pods`` (our endpoints), ``endpoints`` (the others),
    ``loadbalancers``."""
    folder = KUBEPROXY / lane
    return {
        key: json.loads((folder / name).read_text())
        for key, name in (
            ("network", "network-v2.json"),
            ("pods", "endpoints-pods-v2.json"),
            ("endpoints", "endpoints-kube-proxy-v2.json"),
            ("loadbalancers", "loadbalancers-v2.json"),
        )
    }


def _create_network(node: Node, doc: dict) -> None:
    """flanneld's network made from the document HNS returned for it (its ID and health are HNS's)."""
    from libhns.client import open_clients

    hcn, _ = open_clients(node.env)
    hcn.create_network({k: v for k, v in doc.items() if k not in ("ID", "Health")})


def endpoint_of(node: Node, ip: str, remote: bool = True) -> str:
    """The ID of the node's one endpoint (remote or local) holding ``ip``."""
    found = [
        e["ID"]
        for e in node.hnsctl("endpoint", "list", "-o", "json")
        if bool(e.get("Flags", 0) & 1) == remote and e["IpConfigurations"][0]["IpAddress"] == ip
    ]
    assert len(found) == 1, found
    return found[0]


def program_services(node: Node, dump: dict) -> dict[str, str]:
    """kube-proxy's part of a node, from an HNS dump shaped as ``hnsctl dump -o json`` prints it:
    each endpoint of the dump is the node's local one with its address (a pod's: our ADD made it),
    else made as kube-proxy makes it (remote ones; on overlay the source VIP's, local and unnamed);
    each load balancer is made over them. The dump's endpoint IDs -> the node's."""
    from libhns.client import open_clients

    hcn, _ = open_clients(node.env)
    net = hcn.get_network_by_name(node.cni_conf["name"])
    local = {ip: e.id for e in hcn.list_endpoints(net.id) if not e.is_remote for ip in e.ip_addresses}
    ids = {}
    for doc in dump["endpoints"]:
        made = HostComputeEndpoint.from_json(doc)
        if not made.is_remote and made.ip_addresses[0] in local:
            ids[made.id] = local[made.ip_addresses[0]]
            continue
        settings = {
            k: v for k, v in doc.items() if k in ("Name", "IpConfigurations", "MacAddress", "Flags", "Policies")
        }
        ids[made.id] = hcn.create_endpoint(net.id, settings).id
    for doc in dump["loadbalancers"]:
        backends = [ids[e] for e in doc["HostComputeEndpoints"]]
        hcn.create_load_balancer({**{k: v for k, v in doc.items() if k != "ID"}, "HostComputeEndpoints": backends})
    return ids


def _write(path: Path, data: bytes) -> Path:
    """A node file, its folder made first (a Windows default path may not exist yet)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def drain_jsonl(path: Path) -> list[dict]:
    """The records a journal-like file got since the last look; the file is removed."""
    if not path.exists():
        return []
    records = [json.loads(line) for line in path.read_text().splitlines()]
    path.unlink()
    return records


def lease_text(subnet: str, network: str = "10.244.0.0/16") -> str:
    """subnet.env as flanneld writes it on Windows (CRLF) for the node's ``subnet`` (e.g. 10.244.4.1/24)."""
    return f"FLANNEL_NETWORK={network}\r\nFLANNEL_SUBNET={subnet}\r\nFLANNEL_MTU=1450\r\nFLANNEL_IPMASQ=true\r\n"


def net_conf_doc(kind: str, network: str = "") -> dict:
    """flannel's net-conf.json for a host-gw ('bridge', cbr0) or vxlan ('overlay', vxlan0) node,
    or for flanneld's ``network`` of that kind."""
    backend = (
        {"name": network or "cbr0", "type": "host-gw"}
        if kind == "bridge"
        else {"name": network or "vxlan0", "type": "vxlan", "VNI": 4096, "Port": 4789}
    )
    return {"Network": "10.244.0.0/16", "Backend": backend}


def _subnet_args(subnet: str) -> list[str]:
    """hnsctl's --subnet/--gateway, the gateway at .1 as flanneld sets it."""
    return ["--subnet", subnet, "--gateway", str(next(ipaddress.ip_network(subnet).hosts()))]


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name.replace("_", ":"))
        return True
    except ValueError:
        return False


def fixture_policies(name: str) -> list[dict]:
    """The endpoint policy values of a fixture's delegate, whatever the key case."""
    delegate = json.loads((FIXTURES / name).read_text())["delegate"]
    entries = delegate.get("policies", delegate.get("Policies"))
    return [e.get("value", e.get("Value")) for e in entries]


def first_ip(result: dict) -> tuple[str, str]:
    """(address without prefix, gateway) of a result in any CNI version."""
    ip = result["ip4"] if "ip4" in result else result["ips"][0]
    return (ip.get("ip") or ip["address"]).split("/")[0], ip["gateway"]


def creates(calls: list[dict]) -> list[dict]:
    """The endpoint documents HNS received (V2 HcnCreateEndpoint settings, V1 POST /endpoints/ bodies)."""
    return [
        c["request"]
        for c in calls
        if c["op"] == "HcnCreateEndpoint"
        or (c["op"] == "HNSCall" and c["method"] == "POST" and c["path"] == "/endpoints/")
    ]


def call_names(calls: list[dict], close: bool = False) -> list[str]:
    """'HcnCreateEndpoint', 'HNSCall POST /endpoints/' …; GUIDs in paths become '*'."""
    out = []
    for c in calls:
        if ("Close" in c["op"]) != close:
            continue
        out.append(f"HNSCall {c['method']} {GUID.sub('*', c['path'])}" if c["op"] == "HNSCall" else c["op"])
    return out


def fault_targets(calls: list[dict]) -> list[str]:
    """One LIBHNS_SIM_FAULTS target per non-Close call, numbered so each fails exactly that call."""
    seen: dict[str, int] = {}
    out = []
    for name in call_names(calls):
        target = "HNSCall:" + name[len("HNSCall ") :] if name.startswith("HNSCall ") else name
        seen[target] = seen.get(target, 0) + 1
        out.append(f"{target}#{seen[target]}")
    return out


def golden_calls(name: str, step: int) -> list[str]:
    """The reference's raw calls for one recorded step (Close calls left out)."""
    doc = json.loads((GOLDENS / name).read_text())
    return [c["fn"] for c in doc["steps"][step]["calls"] if "Close" not in c["fn"]]


def package_folder(root: Path, build: str, mark: str = "") -> Path:
    """A package folder as specs/wincni.spec makes it: launchers beside _wincni-<build>."""
    folder = root / f"package-{build}"
    (folder / f"_wincni-{build}" / "plugins").mkdir(parents=True, exist_ok=True)
    (folder / f"_wincni-{build}" / "python313.dll").write_text(f"python of {build}")
    for c in COMMANDS:  # as PyInstaller's launchers name their contents folder
        (folder / c).write_bytes(f"{c} {build}{mark}\0pyi-contents-directory _wincni-{build}\0".encode())
    return folder
