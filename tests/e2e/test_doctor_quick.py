"""``wincni doctor --quick``, the DaemonSet's readiness probe: the checks that decide whether a pod
can get a network now, as a process, and nothing on the node written (not even host-local's lock)."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

from hnsnode import VENV_BIN, Node
from tools.wincni.doctor.checks import registry as checks


def sim_node(root: Path, kind: str) -> Node:
    """A healthy node as flanneld and kube-proxy leave it."""
    node = Node(root)
    node.cni_conf = node.flannel_files(kind)
    node.bridge(host_endpoint=False) if kind == "bridge" else node.overlay()
    return node


def snapshot(root: Path) -> dict[str, tuple]:
    """Every file and folder under ``root``: kind, size, mtime, content digest."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath, name)
            st = path.lstat()
            digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else ""
            out[str(path)] = (st.st_mode, st.st_size, st.st_mtime_ns, digest)
    return out


def quick(node: Node) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(VENV_BIN / "wincni"), *node.doctor_argv("--quick", output="table")],
        env={k: v for k, v in node.env.items() if k != "LIBHNS_JOURNAL"},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_healthy_node_is_ready_and_nothing_is_written(tmp_path: Path) -> None:
    node = sim_node(tmp_path, "overlay")
    node.write_cni_conf(node.cni_conf)
    before = snapshot(tmp_path)
    proc = quick(node)
    assert proc.returncode == 0 and proc.stderr == "", proc
    ids = [line.split()[1] for line in proc.stdout.splitlines() if line[:4].strip() in ("OK", "WARN", "FAIL", "SKIP")]
    assert ids == [c.id for c in checks.CHECKS if c.quick]
    assert len(ids) == 10 and "ipam-store" not in ids and "build" not in ids  # every quick check, nothing read-write
    assert snapshot(tmp_path) == before


def test_a_node_without_its_network_is_not_ready(tmp_path: Path) -> None:
    node = sim_node(tmp_path, "bridge")
    node.hnsctl("network", "delete", "cbr0")
    node.write_cni_conf(node.cni_conf)
    proc = quick(node)
    assert proc.returncode == 1 and "FAIL  hns-network" in proc.stdout, proc
