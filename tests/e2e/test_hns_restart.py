"""After an HNS restart or a reboot, as processes against the simulator: flanneld's
non-persistent overlay network vanishes with its endpoints and comes back with a new ID. The
first ADD on it works, CHECK reports the lost endpoint, old pods' DEL releases their addresses,
and GC — or ``wincni reclaim`` when the runtime never sends GC — gives back the rest."""

from __future__ import annotations

import json
import subprocess

import pytest

from hnsnode import VENV_BIN, Node

pytestmark = pytest.mark.node("win-overlay")  # flanneld's vxlan0


def restart_and_recreate(node: Node) -> str:
    old = node.hnsctl("network", "list", "-o", "json")[0]["ID"]
    assert node.hnsctl("restart", "-o", "json") == {"droppedNetworks": [node.network]}
    assert node.endpoints() == {}
    node.overlay()  # flanneld comes back and creates the network again
    new = node.hnsctl("network", "list", "-o", "json")[0]["ID"]
    assert new != old
    return new


def reclaim(node: Node, conf_path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(VENV_BIN / "wincni"), "reclaim", "--cni-conf", str(conf_path), *args],
        env=node.env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_after_an_hns_restart_pods_start_check_reports_del_and_gc_clean_up(node):
    conf = node.conf()
    old = {cid: node.sandbox("v2", cid) for cid in ("old1", "old2")}
    ips = {cid: node.add(conf, cid, netns)["ips"][0]["address"].split("/")[0] for cid, netns in old.items()}
    node.hnsctl("restart")
    node.run("CHECK", conf, "old1", old["old1"]).failed(50, f"network {node.network} not found")
    node.overlay()  # flanneld creates the network again, with a new ID
    node.run("CHECK", conf, "old1", old["old1"]).failed(101, f"HNS endpoint old1_{node.network} does not exist")

    netns = node.sandbox("v2", "new")
    out = node.add(conf, "new", netns)
    assert out["ips"][0]["address"].split("/")[0] not in ips.values()  # the old pods still hold theirs
    assert node.endpoints()[f"new_{node.network}"]["Namespace"]["ID"].upper() == netns.upper()

    assert node.run("DEL", conf, "old1", old["old1"]).ok  # the runtime tears the old pod down
    node.assert_clean("old1")
    valid = {**conf, "cniVersion": "1.1.0", "cni.dev/valid-attachments": [{"containerID": "new", "ifname": "eth0"}]}
    assert node.run("GC", valid).ok
    node.assert_clean("old2")
    assert node.ip_files() == {out["ips"][0]["address"].split("/")[0]: "new"}


def test_wincni_reclaim_does_what_gc_would_from_hns_view(node, tmp_path):
    conf = node.conf()
    conf_path = tmp_path / "10-overlay.conf"
    conf_path.write_text(json.dumps(conf))
    olds = {cid: node.sandbox("v2", cid) for cid in ("old1", "old2")}
    for cid, netns in olds.items():
        node.add(conf, cid, netns)
    restart_and_recreate(node)
    node.add(conf, "new", node.sandbox("v2", "new"))
    assert set(node.ip_files().values()) == {"old1", "old2", "new"}

    young = reclaim(node, conf_path)  # default --min-age 300: an ADD in flight is never robbed
    assert young.returncode == 0 and "0 reservation(s) released" in young.stdout, young
    running = reclaim(node, conf_path, "--min-age", "0", "--force", "--dry-run")
    assert running.returncode == 0 and "would release " not in running.stdout, running  # their sandboxes run on
    for netns in olds.values():  # the runtime ended the old pods without a DEL
        node.hnsctl("namespace", "delete", netns)
    dry = reclaim(node, conf_path, "--min-age", "0", "--force", "--dry-run")
    assert dry.returncode == 0 and dry.stdout.count("would release ") == 2 and len(node.ip_files()) == 3
    done = reclaim(node, conf_path, "--min-age", "0", "--force")
    assert done.returncode == 0 and "2 reservation(s) released" in done.stdout, done
    assert set(node.ip_files().values()) == {"new"}


def test_wincni_reclaim_refuses_without_hns(node, tmp_path):
    conf_path = tmp_path / "10-overlay.conf"
    conf_path.write_text(json.dumps(node.conf()))
    node.add(node.conf(), "pod", node.sandbox("v2", "pod"))
    proc = subprocess.run(
        [str(VENV_BIN / "wincni"), "reclaim", "--cni-conf", str(conf_path), "--min-age", "0", "--force"],
        env={**node.env, "LIBHNS_SIM_FAULTS": "HcnEnumerateNetworks=0x800706BA", "LIBHNS_COMMAND_TIMEOUT": "1"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1 and "RPC_S_SERVER_UNAVAILABLE" in proc.stderr, proc
    assert set(node.ip_files().values()) == {"pod"}
