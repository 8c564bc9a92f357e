"""`make demo`: a Windows node's pod network lifecycle, end to end, on the HNS simulator.

Everything runs as the kubelet would run it — separate processes, config on stdin, CNI_* in the
environment — in a throw-away directory: hnsctl plays flanneld (it creates the HNS network and
the host endpoint), then flannel delegates to win-bridge / win-overlay, which call host-local.
A third node has no flanneld at all: win-overlay creates its network (standalone mode).
Exits non-zero at the first step that does not do what it should. One line a step;
``--verbose`` prints every file, table and CNI result in full, ``--keep`` keeps the state.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

BIN = Path(sys.executable).parent
FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "data" / "fixtures"
DIST = Path(__file__).resolve().parents[1] / "dist" / "wincni"  # `make dist`'s package folder (`make demo` builds it)
POD_SUBNET = "10.244.4.0/24"


class DemoFailed(Exception):
    pass


#: ``--verbose``: every file, table and CNI result in full; else one line each.
VERBOSE = "--verbose" in sys.argv


def say(text: str = "") -> None:
    print(text, flush=True)


def output(text: str) -> None:
    """A wincni command's output: in full with ``--verbose``, else its summary (the last line)."""
    lines = text.rstrip().splitlines()
    if VERBOSE or len(lines) <= 1:
        say(text.rstrip())
        return
    say(f"  ({len(lines) - 1} lines before; --verbose shows them) {lines[-1].strip()}")


def summary(doc: dict) -> str:
    """One line for a CNI result or error."""
    if "code" in doc:
        return f"error {doc['code']}: {doc.get('msg', '')}"
    ips = ", ".join(ip.get("address", "?") for ip in doc.get("ips", []))
    return f"cniVersion {doc.get('cniVersion', '?')}" + (f", ips {ips}" if ips else "")


STARTED = time.monotonic()


def heading(text: str) -> None:
    """A section's title, with when it began since the demo's start."""
    say()
    say("=" * 78)
    say(f"{text}  [{time.monotonic() - STARTED:.0f} s]")
    say("=" * 78)


class Node:
    """One simulated Windows node: its HNS state, flannel files and CNI bin dir."""

    def __init__(self, root: Path, network: str, backend: str) -> None:
        self.root = root / network
        self.root.mkdir()
        self.network = network
        self.backend = backend
        self.env = {
            **os.environ,
            "LIBHNS_BACKEND": "sim",
            "LIBHNS_SIM_DIR": str(self.root / "hns"),
            "CNI_PATH": str(BIN),
            "CNI_IFNAME": "eth0",
            "WINCNI_LOG_FILE": str(self.root / "wincni.log"),
        }
        self.conf = self.root / "cni.conf"
        self.plugin = "flannel"  # what the kubelet runs: the config's "type"
        self.bin = BIN  # where the runtime finds it

    def run(
        self, argv: list[str], stdin: bytes = b"", env: dict | None = None, show: str = ""
    ) -> subprocess.CompletedProcess:
        if show:
            say(f"\n$ {show}")
        return subprocess.run(argv, input=stdin, env=env or self.env, capture_output=True, timeout=120)

    def hnsctl(self, *args: str, quiet: bool = False) -> str:
        proc = self.run([str(BIN / "hnsctl"), *args], show="" if quiet else "hnsctl " + " ".join(args))
        if proc.returncode != 0:
            raise DemoFailed(f"hnsctl {' '.join(args)} failed: {proc.stderr.decode().strip()}")
        out = proc.stdout.decode()
        if quiet:
            return out
        lines = out.rstrip().splitlines()
        if VERBOSE or len(lines) <= 1:
            say(out.rstrip())
        else:
            say(f"  ({len(lines)} lines; --verbose shows them)")
        return out

    def write(self, name: str, content: bytes, show: bool = True) -> Path:
        path = self.root / name
        path.write_bytes(content)
        if show and VERBOSE:
            say(f"\n--- {path.name} ({path}) ---")
            say(content.decode().replace("\r\n", "\n").rstrip())
        elif show:
            say(f"  wrote {path.name} ({len(content.splitlines())} lines; --verbose shows it)")
        return path

    def setup(self, subnet_env: bytes, net_conf: dict, cni_conf: dict) -> None:
        self.write("subnet.env", subnet_env)
        self.write("net-conf.json", json.dumps(net_conf, indent=2).encode())
        cni_conf.update(
            subnetFile=str(self.root / "subnet.env"),
            dataDir=str(self.root / "flannel"),
            netConf=str(self.root / "net-conf.json"),
            ipam={"dataDir": str(self.root / "ipam")},
        )
        self.write("cni.conf", json.dumps(cni_conf, indent=2).encode())

    def cni(
        self,
        command: str,
        container: str,
        netns: str,
        prev: dict | None = None,
        expect: int = 0,
        extra: dict | None = None,
    ) -> dict | None:
        conf = json.loads(self.conf.read_text())
        if prev is not None:
            conf["prevResult"] = prev
        conf.update(extra or {})
        env = {**self.env, "CNI_COMMAND": command, "CNI_CONTAINERID": container, "CNI_NETNS": netns}
        shown = (
            f"CNI_COMMAND={command} CNI_CONTAINERID={container} CNI_NETNS={netns or '(empty)'} {self.plugin} < cni.conf"
        )
        if prev is not None:
            shown += " (+ prevResult)"
        if extra:
            shown += " (+ " + ", ".join(f"{k}={json.dumps(v)}" for k, v in extra.items()) + ")"
        proc = self.run([str(self.bin / self.plugin)], json.dumps(conf).encode(), env, show=shown)
        out = proc.stdout.decode().strip()
        doc = json.loads(out) if out else None
        for line in proc.stderr.decode().splitlines():
            say(f"  stderr: {line}")
        if proc.returncode != expect:
            raise DemoFailed(
                f"{self.plugin} {command} exited {proc.returncode} (expected {expect}): {out or proc.stderr.decode()}"
            )
        say(f"  exit {proc.returncode}" + (f": {summary(doc)}" if doc else ", no output (success)"))
        if doc and VERBOSE:
            say("  " + json.dumps(doc, indent=2).replace("\n", "\n  "))
        return doc

    def namespace(self) -> str:
        """A new HostComputeNamespace, as containerd creates one for a pod: its ID."""
        return json.loads(self.hnsctl("namespace", "create", "-o", "json", quiet=True))["ID"]

    def endpoints(self) -> list[dict]:
        self.hnsctl("endpoint", "list")
        return json.loads(self.hnsctl("endpoint", "list", "-o", "json", quiet=True))

    def ip_files(self) -> list[str]:
        store = self.root / "ipam" / self.network
        return sorted(p.name for p in store.iterdir() if p.name[0].isdigit()) if store.exists() else []


def expect(condition: bool, what: str) -> None:
    if not condition:
        raise DemoFailed(what)
    say(f"  ok: {what}")


def pod_names(endpoints: list[dict]) -> set[str]:
    return {e["Name"] for e in endpoints if not e["Name"].endswith("_ep")}


def lifecycle(node: Node) -> None:
    # --- dockershim-style pod: HNS V1, pause container + an app container sharing its endpoint
    heading(f"[{node.network}] pod A, dockershim style: CNI_NETNS=none for the pause container (HNS V1)")
    pause, app = "pauseA" + uuid.uuid4().hex[:8], "appA" + uuid.uuid4().hex[:8]
    say("The runtime starts the pause container (an HCS compute system) before calling CNI:")
    node.hnsctl("container", "create", pause)
    result = node.cni("ADD", pause, "none")
    say("\nThe app container joins the pause container's network (CNI_NETNS=container:<pause>):")
    shared = node.cni("ADD", app, f"container:{pause}")
    eps = node.endpoints()
    expect(
        pod_names(eps) == {f"{pause}_{node.network}"},
        "one endpoint, named <pause id>_<network>, shared by both containers",
    )
    expect(shared["ips"] == result["ips"], "the app container got the pause container's address")
    expect(len(node.ip_files()) == 1, "host-local holds exactly one address")
    node.cni("CHECK", pause, "none", prev=result)
    node.cni("DEL", app, f"container:{pause}", prev=shared)
    expect(
        pod_names(node.endpoints()) == {f"{pause}_{node.network}"}, "the app container's DEL keeps the shared endpoint"
    )
    node.cni("DEL", pause, "none", prev=result)
    expect(not pod_names(node.endpoints()), "the pause container's DEL removed the endpoint")
    expect(not node.ip_files(), "and released the address")
    node.cni("DEL", pause, "none", prev=result)
    say("  ok: a second DEL succeeds (DEL is idempotent)")

    # --- containerd-style pod: HCN V2, namespace GUID; same config, API chosen from CNI_NETNS
    heading(f"[{node.network}] pod B, containerd style: CNI_NETNS=<HostComputeNamespace GUID> (HCN V2)")
    say("The same cni.conf (no apiVersion): wincni sees a namespace GUID and uses HCN, translating")
    say("the V1-shaped policies to their V2 form instead of letting HNS reject them (0x803B000D).")
    netns = node.namespace()
    say(f"\n(containerd created HostComputeNamespace {netns})")
    pod = "podB" + uuid.uuid4().hex[:8]
    result = node.cni("ADD", pod, netns)
    retry = node.cni("ADD", pod, netns)
    expect(retry == result, "a retried ADD returns the same result (no second address or endpoint)")
    eps = node.endpoints()
    mine = [e for e in eps if e["Name"] == f"{pod}_{node.network}"]
    expect(
        len(mine) == 1 and mine[0].get("HostComputeNamespace", "").upper() == netns.upper(),
        "the endpoint is attached to the pod's namespace",
    )
    policies = json.loads(node.hnsctl("endpoint", "show", f"{pod}_{node.network}", "-o", "json", quiet=True)).get(
        "Policies", []
    )
    say(
        "\nThe endpoint's HCN policies (the V1-shaped config translated; automatic ones appended unless already covered):"
    )
    for p in policies if VERBOSE else policies[:1]:
        say("  " + json.dumps(p))
    if not VERBOSE and len(policies) > 1:
        say(f"  ... and {len(policies) - 1} more (--verbose)")
    expect(all("Settings" in p for p in policies), "every policy HNS received is in the V2 schema")
    node.cni("CHECK", pod, netns, prev=result)
    say("\nGC with an empty cni.dev/valid-attachments list: the runtime knows no pods, so pod B is stale.")
    node.cni("GC", "", "", extra={"cniVersion": "1.1.0", "cni.dev/valid-attachments": []})
    expect(not pod_names(node.endpoints()), "GC removed the stale endpoint")
    expect(not node.ip_files(), "and its address")
    node.cni("DEL", pod, netns, prev=result)
    say("  ok: DEL after GC still succeeds")
    node.cni("STATUS", "", "", extra={"cniVersion": "1.1.0"})
    say("  ok: STATUS reports the network ready")


def standalone(root: Path) -> None:
    """No flanneld: win-overlay creates its Overlay network from the config's "network" section."""
    heading("node 3: standalone win-overlay, no flannel: the first ADD creates the HNS network")
    (root / "standalone").mkdir()
    node = Node(root / "standalone", "vxlan0", "none")
    node.plugin = "win-overlay"
    node.env["WINCNI_LOCK_DIR"] = str(
        node.root / "locks"
    )  # the node-wide network lock (/run/wincni; C:\\ProgramData\\wincni on Windows)
    say("A lab node or a containerd host outside Kubernetes: nobody runs flanneld or start.ps1.")
    node.hnsctl("network", "list")
    node.write(
        "cni.conf",
        json.dumps(
            {
                "cniVersion": "1.1.0",
                "name": "vxlan0",
                "type": "win-overlay",
                "network": {"subnet": "10.244.7.0/24", "adapter": "Ethernet"},
                "ipam": {"type": "host-local", "subnet": "10.244.7.0/24", "dataDir": str(node.root / "ipam")},
                "policies": [
                    {
                        "name": "EndpointPolicy",
                        "value": {"Type": "OutBoundNAT", "ExceptionList": ["10.244.0.0/16", "10.96.0.0/12"]},
                    }
                ],
            },
            indent=2,
        ).encode(),
    )
    node.cni("STATUS", "", "")
    say("  ok: STATUS is ready before any network exists: the next ADD creates it")

    say("\nFive pods start at once on the fresh node, and HNS takes a second to set up the management IP")
    say("(LIBHNS_SIM_MGMT_DELAY=1): one ADD creates the network and waits, the others wait on the node lock.")
    node.env["LIBHNS_SIM_MGMT_DELAY"] = "1"
    pods = [
        (
            "pod" + str(i) + uuid.uuid4().hex[:6],
            node.namespace(),
        )
        for i in range(5)
    ]
    procs = [
        subprocess.Popen(
            [str(BIN / "win-overlay")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**node.env, "CNI_COMMAND": "ADD", "CNI_CONTAINERID": cid, "CNI_NETNS": netns},
        )
        for cid, netns in pods
    ]
    say("\n$ 5 x (CNI_COMMAND=ADD ... win-overlay < cni.conf), in parallel")
    outs = [p.communicate(node.conf.read_bytes(), timeout=120) for p in procs]
    expect(
        all(p.returncode == 0 for p in procs),
        "all five ADDs succeeded: " + ", ".join(json.loads(o)["ips"][0]["address"] for o, _ in outs),
    )
    del node.env["LIBHNS_SIM_MGMT_DELAY"]
    nets = json.loads(node.hnsctl("network", "list", "-o", "json", quiet=True))
    expect(len(nets) == 1, "exactly one network was created")
    log = [json.loads(line) for line in (node.root / "wincni.log").read_text().splitlines()]
    [ready] = [e for e in log if e.get("event") == "network-ready"]
    say(
        f"  (debug log: network-created, then network-ready after {ready['waited']} with management IP {ready['managementIP']})"
    )
    node.hnsctl("network", "show", "vxlan0")
    expect(len(pod_names(node.endpoints())) == 5, "five pod endpoints on it")

    say(
        "\nHNS restarts (a node reboot, Restart-Service hns): the network was created non-persistent, as flanneld does."
    )
    node.hnsctl("restart")
    node.cni("DEL", *pods[0])
    expect(len(node.ip_files()) == 4, "a pod's DEL after the restart still releases its address")
    new_ns = node.namespace()
    node.cni("ADD", "podF" + uuid.uuid4().hex[:6], new_ns)
    again = json.loads(node.hnsctl("network", "list", "-o", "json", quiet=True))
    expect(len(again) == 1 and again[0]["ID"] != nets[0]["ID"], "the next ADD recreated the network")

    say("\nA VNI Linux flannel nodes would not share is refused before anything happens:")
    node.cni("ADD", "podG", new_ns, expect=1, extra={"network": {"subnet": "10.244.7.0/24", "vni": 1}})


def doctor(node: Node) -> None:
    """The operator's view of the node the demo built: every check of `wincni doctor` must pass."""
    heading(f"[{node.network}] wincni doctor: the Windows troubleshooting guide, checked in one command")
    (node.root / "conf").mkdir()
    shutil.copy(node.conf, node.root / "conf" / "10-flannel.conf")
    if node.network == "vxlan0":
        say("kube-proxy (overlay) needs a source VIP no pod can get: wincni sourcevip reserves it in the pods' store.")
        vip = ["sourcevip", "--cni-conf", str(node.conf), "--out", str(node.root / "SourceVip.json")]
        proc = node.run([str(BIN / "wincni"), *vip], show="wincni " + " ".join(vip))
        output(proc.stdout.decode())
        expect(proc.returncode == 0, "the source VIP is reserved and SourceVip.json written")
    else:
        node.write(
            "SourceVip.json", json.dumps({"cniVersion": "0.2.0", "ip4": {"ip": "10.244.4.254/24"}}).encode(), show=False
        )
    args = [
        "doctor",
        "--cni-conf",
        str(node.root / "conf"),
        "--cni-bin-dir",
        str(BIN),
        "--source-vip",
        str(node.root / "SourceVip.json"),
        "--reach",
        "8.8.8.8",
    ]
    proc = node.run([str(BIN / "wincni"), *args], show="wincni " + " ".join(args))
    output(proc.stdout.decode())
    expect(proc.returncode == 0, "wincni doctor finds nothing wrong with the node")


def node_day(root: Path) -> None:
    """What the DaemonSet does on a node, with the package folder: install (the operator's template,
    the kubelet's DNS) -> doctor -> the doctor's own run: command -> doctor -> a pod -> uninstall."""
    heading("node 4: a node's day with the package folder (make dist): install -> doctor -> a pod -> uninstall")
    (root / "day").mkdir()
    node = Node(root / "day", "vxlan0", "vxlan")
    say(f"The package folder: {DIST}. flanneld and kubeadm have left their files and the Overlay network:")
    node.hnsctl(
        "network",
        "create",
        "vxlan0",
        "--type",
        "Overlay",
        "--subnet",
        POD_SUBNET,
        "--management-ip",
        "10.127.130.36",
        quiet=True,
    )
    node.write(
        "net-conf.json",
        json.dumps(
            {"Network": "10.244.0.0/16", "Backend": {"name": "vxlan0", "type": "vxlan", "VNI": 4096, "Port": 4789}}
        ).encode(),
    )
    node.write("subnet.env", (FIXTURES / "subnet.env").read_bytes(), show=False)
    node.write("kubelet.yaml", b"kind: KubeletConfiguration\nclusterDNS:\n- 10.96.0.10\nclusterDomain: cluster.local\n")
    say(
        "\nThe operator's conflist template (on a cluster, the wincni-cni-template ConfigMap); install fills in its __TOKENS__:"
    )
    node.write(
        "template.conflist",
        json.dumps(
            {
                "cniVersion": "1.0.0",
                "name": "__NETWORK_NAME__",
                "plugins": [
                    {
                        "type": "flannel",
                        "subnetFile": str(node.root / "subnet.env"),
                        "netConf": str(node.root / "net-conf.json"),
                        "dataDir": str(node.root / "flannel"),
                        "ipam": {"dataDir": str(node.root / "ipam")},
                        "capabilities": {"portMappings": True, "dns": True},
                        "delegate": {
                            "type": "__DELEGATE_TYPE__",
                            "dns": {"Nameservers": ["__DNS_SERVER__"], "Search": ["svc.__DNS_DOMAIN__"]},
                            "policies": [
                                {
                                    "Name": "EndpointPolicy",
                                    "Value": {
                                        "Type": "OutBoundNAT",
                                        "ExceptionList": ["__CLUSTER_CIDR__", "__SERVICE_CIDR__"],
                                    },
                                },
                                {
                                    "Name": "EndpointPolicy",
                                    "Value": {
                                        "Type": "ROUTE",
                                        "DestinationPrefix": "__SERVICE_CIDR__",
                                        "NeedEncap": True,
                                    },
                                },
                            ],
                        },
                    }
                ],
            },
            indent=2,
        ).encode(),
    )
    bin_dir, conf_dir = node.root / "bin", node.root / "net.d"
    dirs = [
        "--cni-bin-dir",
        str(bin_dir),
        "--cni-conf-dir",
        str(conf_dir),
        "--containerd-config",
        str(node.root / "config.toml"),
    ]

    def wincni(exe: Path, *args: str) -> str:
        proc = node.run([str(exe), *args], show=f"{exe} " + " ".join(args))
        output(proc.stdout.decode())
        if proc.returncode != 0 or proc.stderr:
            raise DemoFailed(f"wincni {args[0]} exited {proc.returncode}: {proc.stderr.decode()}")
        return proc.stdout.decode()

    wincni(
        DIST / "wincni",
        "install",
        *dirs,
        "--net-conf",
        str(node.root / "net-conf.json"),
        "--kubelet-config",
        str(node.root / "kubelet.yaml"),
        "--template",
        str(node.root / "template.conflist"),
    )
    conflist = json.loads((conf_dir / "10-flannel.conflist").read_text())
    expect(
        conflist["plugins"][0]["delegate"]["dns"] == {"Nameservers": ["10.96.0.10"], "Search": ["svc.cluster.local"]},
        "the config carries the kubelet's clusterDNS and clusterDomain",
    )
    doctor = [
        "doctor",
        "--cni-conf",
        str(conf_dir),
        "--cni-bin-dir",
        str(bin_dir),
        "--source-vip",
        str(node.root / "SourceVip.json"),
    ]
    table = wincni(bin_dir / "wincni", *doctor)
    [run] = [line.split("run: ", 1)[1] for line in table.splitlines() if "run: " in line]
    say("\nThe doctor's run: line, pasted as printed:")
    proc = node.run(shlex.split(run), show=run)
    output(proc.stdout.decode())
    expect(proc.returncode == 0, "the fix ran")
    expect("0 failed, 0 warnings" in wincni(bin_dir / "wincni", *doctor), "the doctor finds nothing wrong any more")

    say(
        "\nA pod, as containerd runs it: the conflist's plugin with the list's name and cniVersion (what libcni hands it):"
    )
    node.write(
        "cni.conf",
        json.dumps(
            {"cniVersion": conflist["cniVersion"], "name": conflist["name"], **conflist["plugins"][0]}, indent=2
        ).encode(),
        show=False,
    )
    node.bin, node.env["CNI_PATH"] = bin_dir, str(bin_dir)
    netns = node.namespace()
    result = node.cni("ADD", "pod1", netns)
    expect(pod_names(node.endpoints()) == {"pod1_vxlan0"}, "the installed plugins made the pod's endpoint")
    node.cni("DEL", "pod1", netns, prev=result)
    expect(not pod_names(node.endpoints()), "and removed it")
    wincni(DIST / "wincni", "install", "--uninstall", *dirs)
    expect(
        not list(bin_dir.iterdir()) and not list(conf_dir.iterdir()), "uninstall took exactly what install laid down"
    )


def main() -> int:
    if not (BIN / "flannel").exists() or not (DIST / "wincni").exists():
        say(
            f"error: {BIN / 'flannel'} or {DIST / 'wincni'} not found; run `make demo` (it installs the console "
            "scripts and builds the package folder)"
        )
        return 1
    root = Path(tempfile.mkdtemp(prefix="wincni-demo-"))
    try:
        heading("wincni demo: flannel -> win-bridge / win-overlay -> host-local on the HNS simulator, then standalone")
        say(f"work dir: {root}")
        say(
            "Executables: "
            + ", ".join(str(BIN / n) for n in ("flannel", "win-bridge", "win-overlay", "host-local", "hnsctl"))
        )
        subnet_env = (FIXTURES / "subnet.env").read_bytes()

        heading("node 1: flannel host-gw -> HNS L2Bridge network cbr0 (win-bridge)")
        bridge = Node(root, "cbr0", "host-gw")
        say("flanneld creates the L2Bridge network and the bridge's host endpoint cbr0_ep at .2:")
        bridge.hnsctl(
            "network",
            "create",
            "cbr0",
            "--type",
            "L2Bridge",
            "--subnet",
            POD_SUBNET,
            "--gateway",
            "10.244.4.1",
            "--adapter",
            "Ethernet",
        )
        bridge.hnsctl("endpoint", "create", "cbr0_ep", "--network", "cbr0", "--ip", "10.244.4.2", "--host")
        bridge.setup(
            subnet_env,
            {"Network": "10.244.0.0/16", "Backend": {"name": "cbr0", "type": "host-gw"}},
            {
                "cniVersion": "1.0.0",
                "name": "cbr0",
                "type": "flannel",
                "capabilities": {"portMappings": True, "dns": True},
                "delegate": {
                    "type": "win-bridge",
                    "dns": {"Nameservers": ["10.96.0.10"], "Search": ["svc.cluster.local"]},
                    "policies": [
                        {
                            "Name": "EndpointPolicy",
                            "Value": {
                                "Type": "OutBoundNAT",
                                "ExceptionList": ["10.244.0.0/16", "10.96.0.0/12", "10.127.130.0/24"],
                            },
                        },
                        {
                            "Name": "EndpointPolicy",
                            "Value": {"Type": "ROUTE", "DestinationPrefix": "10.96.0.0/12", "NeedEncap": True},
                        },
                        {
                            "Name": "EndpointPolicy",
                            "Value": {"Type": "ROUTE", "DestinationPrefix": "10.127.130.36/32", "NeedEncap": True},
                        },
                    ],
                },
            },
        )
        lifecycle(bridge)

        heading("node 2: flannel vxlan -> HNS Overlay network vxlan0, VNI 4096, UDP 4789 (win-overlay)")
        overlay = Node(root, "vxlan0", "vxlan")
        say("flanneld creates the Overlay network (HNS adds the ProviderAddress = management IP):")
        overlay.hnsctl(
            "network",
            "create",
            "vxlan0",
            "--type",
            "Overlay",
            "--subnet",
            POD_SUBNET,
            "--gateway",
            "10.244.4.1",
            "--vsid",
            "4096",
            "--adapter",
            "Ethernet",
            "--management-ip",
            "10.127.130.36",
        )
        overlay.setup(
            subnet_env,
            {"Network": "10.244.0.0/16", "Backend": {"name": "vxlan0", "type": "vxlan", "VNI": 4096, "Port": 4789}},
            {
                "cniVersion": "1.0.0",
                "name": "vxlan0",
                "type": "flannel",
                "capabilities": {"portMappings": True, "dns": True},
                "delegate": {
                    "dns": {"Nameservers": ["10.96.0.10"], "Search": ["svc.cluster.local"]},
                    "Policies": [
                        {
                            "Name": "EndpointPolicy",
                            "Value": {"Type": "OutBoundNAT", "ExceptionList": ["10.244.0.0/16", "10.96.0.0/12"]},
                        },
                        {
                            "Name": "EndpointPolicy",
                            "Value": {"Type": "ROUTE", "DestinationPrefix": "10.96.0.0/12", "NeedEncap": True},
                        },
                    ],
                },
            },
        )
        say('\n(the delegate has no "type": flannel picks win-overlay from net-conf.json\'s vxlan backend)')
        lifecycle(overlay)
        doctor(overlay)
        standalone(root)
        node_day(root)

        heading("done: every step did what it should")
        if "--keep" in sys.argv:
            say(f"state and debug logs (wincni.log, JSON lines) kept in {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
            say("(run `.venv/bin/python demo/walkthrough.py --keep` to keep the state and the JSON-lines debug logs)")
        return 0
    except DemoFailed as err:
        say(f"\nDEMO FAILED: {err}")
        say(f"(state and debug logs kept for inspection in {root})")
        return 1


if __name__ == "__main__":
    sys.exit(main())
