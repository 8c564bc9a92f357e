"""The node's sweep (``wincni reclaim --every``, the DaemonSet's ``sweep`` container) on a busy node:
leaks planted as a reboot or a crash leaves them (endpoints whose sandbox is gone with their
reservations and saved configs, reservations alone, a saved config alone, all long past the
in-flight age), live pods whose files are as old (only their attached endpoints keep them), and
workers starting and removing other pods through flannel as processes the whole time. The sweep
frees every leak, a few a pass, and nothing else: no live pod, no pod a worker runs, no ADD or DEL
disturbed."""

from __future__ import annotations

import itertools
import json
import os
import re
import subprocess
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from hnsnode import VENV_BIN, Node, first_ip

WORKERS = 4
CHURN_SECONDS = 8.0
LEAKS = [f"leak{i}" for i in range(4)]  # endpoint + reservation + saved config, sandbox gone
ORPHANS = {"10.244.4.240": "orphan0", "10.244.4.241": "orphan1"}  # a reservation alone
GHOST = "ghost"  # a saved config alone
LIVE = [f"live{i}" for i in range(3)]
PER_PASS = 3


def age(path: Path, seconds: float = 3600) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


class Churn:
    """Workers that start pods and remove their oldest, as a runtime does; every answer kept."""

    def __init__(self, node: Node, conf: dict) -> None:
        self.node, self.conf = node, conf
        self.lock = threading.Lock()
        self.live: dict[str, str] = {}  # pod -> netns, while it runs
        self.codes: Counter[str] = Counter()
        self.failures: list[str] = []

    def worker(self, n: int, stop: float) -> None:
        mine: list[str] = []
        for i in itertools.count():
            if time.monotonic() > stop:
                break
            if len(mine) >= 2:
                self.remove(mine.pop(0))
            pod = f"w{n}p{i}"
            with self.lock:
                netns = self.node.sandbox("v2", pod)
                self.live[pod] = netns
            run = self.node.run("ADD", self.conf, pod, netns)
            code = "0" if run.ok else str((run.out or {}).get("code"))
            with self.lock:
                self.codes[f"ADD {code}"] += 1
            if code not in ("0", "11") or "Traceback" in run.stderr:
                self.failures.append(f"ADD {pod}: {run.out} {run.stderr[-1000:]}")
            if code != "0":
                self.remove(pod)
                continue
            mine.append(pod)

    def remove(self, pod: str) -> None:
        run = self.node.run("DEL", self.conf, pod, self.live[pod])
        with self.lock:
            self.codes[f"DEL {0 if run.ok else 1}"] += 1
            del self.live[pod]
        if not run.ok:
            self.failures.append(f"DEL {pod}: {run.out} {run.stderr[-1000:]}")


def holds(node: Node, pod: str) -> list[str]:
    """What of ``pod`` the node still holds."""
    out = []
    if f"{pod}_{node.network}" in node.endpoints():
        out.append("endpoint")
    if pod in node.ip_files().values():
        out.append("reservation")
    if (node.flannel_dir / pod).exists():
        out.append("saved config")
    return out


@pytest.mark.slow
def test_the_sweep_frees_every_leak_and_nothing_live_while_pods_come_and_go(tmp_path: Path) -> None:
    node = Node(tmp_path, "flannel").bridge().lease().venv_plugins()
    conf = node.flannel_conf("cni.conf.l2bridge-v2.json", cniVersion="1.1.0")
    conf_path = node.write_cni_conf(conf)
    store = node.ipam_dir / node.network
    netns = {pod: node.sandbox("v2", pod) for pod in LEAKS + LIVE}
    ips = {pod: first_ip(node.add(conf, pod, netns[pod]))[0] for pod in LEAKS + LIVE}
    for pod in LEAKS:
        node.hnsctl("namespace", "delete", netns[pod])  # the node rebooted, the runtime forgot the pod
    for pod in LEAKS + LIVE:  # all as old: only a live sandbox's endpoint tells them apart
        age(store / ips[pod])
        age(node.flannel_dir / pod)
    for ip, owner in ORPHANS.items():
        (store / ip).write_bytes(f"{owner}\r\neth0".encode())
        age(store / ip)
    (node.flannel_dir / GHOST).write_bytes((node.flannel_dir / LIVE[0]).read_bytes())
    age(node.flannel_dir / GHOST)
    planted = set(LEAKS) | set(ORPHANS.values()) | {GHOST}

    log = tmp_path / "sweep.log"
    with log.open("w") as err:
        sweep = subprocess.Popen(
            [str(VENV_BIN / "wincni"), "reclaim", "--cni-conf", str(conf_path), "--every", "0.3"]
            + ["--max", str(PER_PASS), "--runtime-endpoint", "none"],
            env=node.env,
            stdout=subprocess.PIPE,
            stderr=err,
        )
        churn = Churn(node, conf)
        try:
            stop = time.monotonic() + CHURN_SECONDS
            with ThreadPoolExecutor(WORKERS) as pool:
                jobs = [pool.submit(churn.worker, n, stop) for n in range(WORKERS)]
                for job in jobs:
                    job.result()
            deadline = time.monotonic() + 60
            while any(holds(node, pod) for pod in LEAKS + [GHOST]) or set(ORPHANS) & set(node.ip_files()):
                assert time.monotonic() < deadline, f"leaks left: {node.ip_files()} {sweep.poll()} {log.read_text()}"
                time.sleep(0.3)
            time.sleep(1)  # a few more passes over what is left: the live pods and the workers' last ones
        finally:
            sweep.terminate()
            stdout, _ = sweep.communicate(timeout=30)
    said = log.read_text()
    print(f"\n{dict(churn.codes)}; sweep:\n{said[-3000:]}")
    assert not churn.failures, "\n".join(churn.failures[:5])
    assert churn.codes["ADD 0"] >= WORKERS and churn.codes["DEL 0"] >= WORKERS
    assert stdout == b"", "the sweep writes its log to stderr only"

    removals = [line for line in said.splitlines() if ": removing " in line]
    named = [set(re.findall(r"\b(?:leak\d|orphan\d|ghost|live\d|w\d+p\d+)\b", line)) for line in removals]
    assert all(len(pods) == 1 and pods <= planted for pods in named), removals
    assert len(removals) == 3 * len(LEAKS) + len(ORPHANS) + 1, removals
    assert f"more left for the next pass (--max {PER_PASS})" in said

    for pod in LEAKS:
        assert holds(node, pod) == [], pod
        node.assert_clean(pod)
    for pod in [*LIVE, *churn.live]:
        assert holds(node, pod) == ["endpoint", "reservation", "saved config"], pod
        assert f"{pod}@{pod}@eth0" in os.listdir(node.flannel_dir / ".attachments")
    assert {ips[pod] for pod in LIVE} <= set(node.ip_files())
    for pod in churn.live:
        assert node.run("DEL", conf, pod, churn.live[pod]).ok
    for pod in LIVE:
        assert node.run("DEL", conf, pod, netns[pod]).ok
    assert node.ip_files() == {} and json.loads(json.dumps(os.listdir(node.flannel_dir))) == [".attachments"]
