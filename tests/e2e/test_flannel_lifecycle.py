"""flannel → win-bridge / win-overlay → host-local, all as real processes, on the HNS simulator.

``hnsctl`` plays flanneld (it creates the HNS network); the node fixtures are used unchanged.
host-local's store is moved with flannel's top-level ``ipam.dataDir`` (our extension: extra keys
merged into the delegate's host-local config), so the tests never touch /var/lib/cni/networks.
"""
from __future__ import annotations

import ipaddress
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from testdata import FIXTURES

REPO = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent
SUBNET = ipaddress.ip_network("10.244.4.0/24")


def _requires(*paths: str) -> pytest.MarkDecorator:
    missing = [p for p in paths if not (REPO / p).exists()]
    return pytest.mark.skipif(bool(missing), reason=f"not written yet: {', '.join(missing)} (turns on when it lands)")


COMMON = ("plugins/ipam_host_local/__main__.py", "libhns/hnsctl.py")
needs_win_bridge = _requires("plugins/win_bridge/commands.py", *COMMON)
needs_win_overlay = _requires("plugins/win_overlay/commands.py", *COMMON)

class Node:
    def __init__(self, root: Path, network: str, hns_type: str) -> None:
        self.root = root
        self.network = network
        self.bin = root / "bin"
        self.bin.mkdir()
        for name in ("win-bridge", "win-overlay", "host-local"):
            (self.bin / name).symlink_to(VENV_BIN / name)
        self.subnet_env = root / "subnet.env"
        self.subnet_env.write_bytes((FIXTURES / "subnet.env").read_bytes())
        self.ipam_dir = root / "networks"
        self.data_dir = root / "flannel"
        self.env = {"PATH": os.environ.get("PATH", ""), "LIBHNS_BACKEND": "sim", "LIBHNS_SIM_DIR": str(root / "hns"),
                    "CNI_PATH": str(self.bin), "CNI_IFNAME": "eth0"}
        self.hnsctl("network", "create", network, "--type", hns_type, "--subnet", str(SUBNET), "--gateway", "10.244.4.1",
                    "--management-ip", "10.127.130.36")

    def hnsctl(self, *args: str) -> str:
        proc = subprocess.run([str(VENV_BIN / "hnsctl"), *args], env=self.env, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    def sandbox(self, conf: dict, cid: str) -> str:
        """What the runtime sets up before ADD: a HostComputeNamespace (V2) or a running container (V1)."""
        if conf["delegate"].get("apiVersion") == 2:
            return json.loads(self.hnsctl("namespace", "create", "-o", "json"))["ID"]
        self.hnsctl("container", "create", cid)
        return "none"

    def conf(self, fixture: str, **changes) -> dict:
        doc = json.loads((FIXTURES / fixture).read_text())
        doc.update(subnetFile=str(self.subnet_env), dataDir=str(self.data_dir),
                   netConf=str(self.root / "net-conf.json"), ipam={"dataDir": str(self.ipam_dir)}, **changes)
        return doc

    def flannel(self, command: str, conf: dict, cid: str, netns: str = "none") -> tuple[int, dict | None]:
        env = {**self.env, "CNI_COMMAND": command, "CNI_CONTAINERID": cid, "CNI_NETNS": netns}
        proc = subprocess.run([str(VENV_BIN / "flannel")], input=json.dumps(conf).encode(), env=env,
                              capture_output=True, timeout=120)
        return proc.returncode, json.loads(proc.stdout) if proc.stdout.strip() else None

    def allocated_to(self, cid: str) -> list[str]:
        store = self.ipam_dir / self.network
        if not store.exists():
            return []
        return [p.name for p in store.iterdir() if p.read_bytes().split(b"\r\n")[0] == cid.encode()]


def pod_ip(result: dict) -> ipaddress.IPv4Address:
    address = result["ip4"]["ip"] if "ip4" in result else result["ips"][0]["address"]
    return ipaddress.ip_interface(address).ip


def lifecycle(node: Node, fixture: str) -> None:
    conf = node.conf(fixture)
    netns = node.sandbox(conf, "pod1")
    rc, result = node.flannel("ADD", conf, "pod1", netns)
    assert rc == 0, result
    assert pod_ip(result) in SUBNET
    assert f"pod1_{node.network}" in node.hnsctl("dump")
    assert (node.data_dir / "pod1").exists() and node.allocated_to("pod1")

    assert node.flannel("DEL", conf, "pod1", netns) == (0, None)
    assert f"pod1_{node.network}" not in node.hnsctl("dump")
    assert not (node.data_dir / "pod1").exists() and node.allocated_to("pod1") == []
    assert node.flannel("DEL", conf, "pod1", netns) == (0, None)


@needs_win_bridge
@pytest.mark.parametrize("fixture", ["cni.conf.l2bridge-v1.json", "cni.conf.l2bridge-v2.json"])
def test_win_bridge_lifecycle(tmp_path, fixture):
    lifecycle(Node(tmp_path, "cbr0", "L2Bridge"), fixture)


@needs_win_overlay
@pytest.mark.parametrize("fixture", ["cni.conf.overlay-v1.json", "cni.conf.overlay-v2.json"])
def test_win_overlay_lifecycle(tmp_path, fixture):
    lifecycle(Node(tmp_path, "vxlan0", "Overlay"), fixture)


@needs_win_bridge
def test_dockershim_pod_through_win_bridge(tmp_path):
    node = Node(tmp_path, "cbr0", "L2Bridge")
    conf = node.conf("cni.conf.l2bridge-v1.json")
    node.sandbox(conf, "pause1")
    node.sandbox(conf, "app1")
    rc, pause = node.flannel("ADD", conf, "pause1")
    assert rc == 0, pause
    rc, app = node.flannel("ADD", conf, "app1", netns="container:pause1")
    assert rc == 0, app
    assert pod_ip(app) == pod_ip(pause)  # one endpoint, shared
    assert node.flannel("DEL", conf, "app1", netns="container:pause1") == (0, None)
    assert (node.data_dir / "pause1").exists()
    assert node.flannel("DEL", conf, "pause1") == (0, None)
    assert "pause1_cbr0" not in node.hnsctl("dump") and not (node.data_dir / "pause1").exists()


@needs_win_bridge
def test_gc_and_status_through_win_bridge(tmp_path):
    node = Node(tmp_path, "cbr0", "L2Bridge")
    conf = node.conf("cni.conf.l2bridge-v1.json", cniVersion="1.1.0")
    for cid in ("pod1", "pod2"):
        rc, out = node.flannel("ADD", conf, cid, node.sandbox(conf, cid))
        assert rc == 0, out
    gc = {**conf, "cni.dev/valid-attachments": [{"containerID": "pod1", "ifname": "eth0"}]}
    assert node.flannel("GC", gc, "") == (0, None)
    assert (node.data_dir / "pod1").exists() and not (node.data_dir / "pod2").exists()
    assert node.allocated_to("pod1") and node.allocated_to("pod2") == []
    assert node.flannel("STATUS", conf, "") == (0, None)
    node.subnet_env.unlink()
    rc, out = node.flannel("STATUS", conf, "")
    assert (rc, out["code"]) == (1, 11) and str(node.subnet_env) in out["msg"]
