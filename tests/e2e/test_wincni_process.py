"""``wincni doctor`` as an operator runs it: a process, against a node whose pods the plugins made."""

from __future__ import annotations

import json
import os
import subprocess
import time

from hnsnode import VENV_BIN, Node


def doctor(node: Node, *args: str) -> tuple[int, dict]:
    proc = subprocess.run(
        [
            str(VENV_BIN / "wincni"),
            "doctor",
            "--cni-bin-dir",
            str(VENV_BIN),
            "--subnet-env",
            str(node.root / "none.env"),
            "--net-conf",
            str(node.root / "none.json"),
            "--source-vip",
            str(node.root / "none.vip"),
            "-o",
            "json",
            *args,
        ],
        env=node.env,
        capture_output=True,
        timeout=60,
    )
    assert proc.stderr == b""
    return proc.returncode, {c["id"]: c for c in json.loads(proc.stdout)["checks"]}


def test_win_bridge_node_with_pods_then_a_leaked_reservation(tmp_path) -> None:
    node = Node(tmp_path).bridge()
    conf = node.conf(
        policies=[{"Name": "EndpointPolicy", "Value": {"Type": "OutBoundNAT", "ExceptionList": ["10.244.0.0/16"]}}]
    )
    (tmp_path / "10-bridge.conf").write_text(json.dumps(conf))
    netns = node.sandbox("v2", "pod1")
    node.add(conf, "pod1", netns)
    rc, found = doctor(node, "--cni-conf", str(tmp_path / "10-bridge.conf"))
    assert rc == 0 and {c["status"] for i, c in found.items() if i != "build"} == {"ok"}, found
    assert found["build"]["status"] == "not-checked"  # the venv's plugins: not laid by wincni install
    assert "1 reservation" in found["ipam-store"]["message"]

    node.hnsctl("endpoint", "delete", "pod1_cbr0")  # the endpoint vanished, the IP stayed
    for reservation in (node.ipam_dir / "cbr0").iterdir():  # an hour ago: past reclaim's --min-age
        os.utime(reservation, (time.time() - 3600,) * 2)
    rc, found = doctor(node, "--cni-conf", str(tmp_path / "10-bridge.conf"))
    assert rc == 1 and found["pod-endpoints"]["status"] == "fail" and "pod1" in found["pod-endpoints"]["message"]
    assert found["ipam-store"]["status"] == "ok"  # its namespace runs: a pod to recreate, not an address to free
    node.hnsctl("namespace", "delete", netns)  # the pod is gone too: now the address is a leak
    rc, found = doctor(node, "--cni-conf", str(tmp_path / "10-bridge.conf"))
    assert rc == 0 and found["ipam-store"]["status"] == "warn" and "pod1" in found["ipam-store"]["message"]

    rc, found = doctor(node, "--cni-conf", str(tmp_path / "missing.conf"))
    assert rc == 1 and found["config"]["status"] == "fail" and "does not exist" in found["config"]["message"]
