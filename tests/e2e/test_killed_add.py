"""A flannel ADD killed (SIGKILL, the whole process group) at random moments, as a runtime's
timeout or a node under memory pressure does. Whatever the moment, the DEL that follows leaves
nothing behind, a retried ADD succeeds with one endpoint and one IP, and GC with the runtime's
valid attachments removes whatever only GC can find. Bounded: a few kills per mode, a fixed seed.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import time

import pytest

from hnsnode import VENV_BIN, Node
from plugins.cni.ownership import IN_FLIGHT_SECONDS
from test_flannel_lifecycle import pod_ip

KILLS = 6


def start_add(node: Node, conf: dict, cid: str, netns: str, env: dict) -> subprocess.Popen:
    proc = subprocess.Popen(
        [str(VENV_BIN / "flannel")],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        env={**node.env, **env, "CNI_COMMAND": "ADD", "CNI_CONTAINERID": cid, "CNI_NETNS": netns},
    )
    proc.stdin.write(json.dumps(conf).encode())
    proc.stdin.close()
    return proc


def kill_at(proc: subprocess.Popen, delay: float) -> None:
    time.sleep(delay)
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # the plugin and any child it spawned
    except ProcessLookupError:
        pass  # it finished first: a complete ADD is a moment too
    proc.wait(timeout=60)


def moments(seed: int, whole: float) -> list[float]:
    """KILLS delays over one ADD's lifetime and a little past it (a finished ADD is a moment too),
    one at random in each of KILLS equal slices: independent draws can miss a stage entirely (the
    host-local reservation, the endpoint's creation) when there are this few kills."""
    rng = random.Random(seed)
    out = [(i + rng.random()) * 1.2 * whole / KILLS for i in range(KILLS)]
    rng.shuffle(out)
    return out


def run(node: Node, command: str, conf: dict, cid: str, netns: str, env: dict) -> tuple[int, dict | None]:
    done = node.run(command, conf, cid, netns, **env)
    return done.rc, done.out


def endpoints(node: Node) -> list[str]:
    return list(node.endpoints())


def assert_nothing_left(node: Node, cid: str) -> None:
    assert f"{cid}_{node.network}" not in endpoints(node)
    assert node.allocated_to(cid) == []
    assert not (node.flannel_dir / cid).exists()
    assert not list(node.flannel_dir.glob(f".{cid}.*.tmp")), "a config save cut short was left"
    markers = node.flannel_dir / ".attachments"
    assert not (markers.exists() and any(p.name.startswith(cid) for p in markers.iterdir()))


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["inprocess", "exec"])
def test_killed_add_then_retry_then_del_leaves_nothing(tmp_path, mode):
    env = {"WINCNI_NO_INPROCESS": "1"} if mode == "exec" else {}
    node = Node(tmp_path, "flannel").bridge().lease().venv_plugins()
    conf = node.flannel_conf("cni.conf.l2bridge-v2.json", cniVersion="1.1.0")
    started = time.perf_counter()
    assert run(node, "ADD", conf, "probe", node.sandbox("v2", "probe"), env)[0] == 0
    whole = time.perf_counter() - started  # kill anywhere inside one ADD's lifetime
    for i, delay in enumerate(moments(20261123, whole)):
        cid = f"kill{i}"
        netns = node.sandbox("v2", cid)
        kill_at(start_add(node, conf, cid, netns, env), delay)
        rc, result = run(node, "ADD", conf, cid, netns, env)  # the runtime's retry
        assert rc == 0, result
        assert endpoints(node).count(f"{cid}_{node.network}") == 1
        assert node.allocated_to(cid) == [str(pod_ip(result))]
        for _ in range(2):
            assert run(node, "DEL", conf, cid, netns, env) == (0, None)
        assert_nothing_left(node, cid)


@pytest.mark.slow
def test_gc_removes_what_a_killed_add_left_behind(tmp_path):
    node = Node(tmp_path, "flannel").bridge().lease().venv_plugins()
    conf = node.flannel_conf("cni.conf.l2bridge-v2.json", cniVersion="1.1.0")
    keep_netns = node.sandbox("v2", "keep")
    started = time.perf_counter()
    assert run(node, "ADD", conf, "keep", keep_netns, {})[0] == 0
    whole = time.perf_counter() - started
    cids = [f"gc{i}" for i in range(KILLS)]
    for cid, delay in zip(cids, moments(7, whole)):
        kill_at(start_add(node, conf, cid, node.sandbox("v2", cid), {}), delay)
    # What host-local killed between creating a reservation file and writing it leaves: no owner.
    orphan = node.ipam_dir / node.network / "10.244.4.250"
    orphan.write_bytes(b"")
    # ...and what flannel killed between writing its config's temp file and renaming it leaves.
    half_saved = node.flannel_dir / ".gc-lost.4242.tmp"
    half_saved.write_bytes(b"{")
    long_ago = time.time() - 2 * IN_FLIGHT_SECONDS  # whatever process holds PID 4242 today
    os.utime(half_saved, (long_ago, long_ago))
    valid = {**conf, "cni.dev/valid-attachments": [{"containerID": "keep", "ifname": "eth0"}]}
    assert run(node, "GC", valid, "", "", {}) == (0, None)
    for cid in cids:
        assert_nothing_left(node, cid)
    assert "keep_cbr0" in endpoints(node) and node.allocated_to("keep") and not orphan.exists()
    assert not half_saved.exists()
