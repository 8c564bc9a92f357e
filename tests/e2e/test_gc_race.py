"""The runtime's GC racing its own ADDs, as on a busy node: 8 workers start and remove pods through
flannel (win-bridge, host-local in-process) while the runtime's GC runs all the time, through
flannel and, at once, straight to host-local, each with a list of attachments taken a moment before
it runs (the pods registered since are not on it). By the ownership rule GC may free what its list leaves out, but never a
temporary file its writer may still be writing, and an ADD never answers 999 nor prints a
traceback: every ADD succeeds or answers "try again later" (11) with a reason, and every pod each
GC's list named keeps its saved config and its reservation.
"""

from __future__ import annotations

import itertools
import os
import random
import re
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest

from hnsnode import SUBNET, Node, Run, first_ip

SECONDS = float(os.environ.get("GC_RACE_SECONDS", "60"))
WORKERS = 8
PODS_PER_WORKER = 4  # live pods a worker keeps before it removes its oldest
RETRYABLE = {11}
POD = re.compile(r"\bw\d+p\d+\b")


class Runtime:
    """The runtime's side: which pods it knows (registered before their ADD, forgotten after their
    DEL), the list each GC gets, and every answer it saw."""

    def __init__(self, node: Node, conf: dict, ipam_conf: dict) -> None:
        self.node, self.conf, self.ipam_conf = node, conf, ipam_conf
        self.lock = threading.Lock()
        self.clock = itertools.count()
        self.known: dict[str, int] = {}  # pod -> when it was registered (a tick of ``clock``)
        self.live: dict[str, str] = {}  # pod -> its address, once its ADD succeeded
        self.netns: dict[str, str] = {}  # pod -> its sandbox (CNI_NETNS)
        self.unlisted: set[str] = set()  # pods a GC ran over without them on its list
        self.running: dict[str, int] = {}  # GC -> when its list was taken, while it runs
        self.adds: Counter[int] = Counter()  # CNI code (0: success) -> ADDs
        self.gcs: Counter[str] = Counter()  # plugin -> GCs
        self.failures: list[str] = []
        self.checked = 0  # listed live pods whose files were checked after a GC

    def check(self, what: str, run: Run, codes: set[int]) -> int:
        code = 0 if run.ok else (run.out or {}).get("code", -1)
        if code not in codes or "Traceback" in run.stderr or (code and not (run.out or {}).get("msg")):
            self.failures.append(f"{what}: rc={run.rc} out={run.out} stderr={run.stderr[-2000:]}")
        return code

    def worker(self, n: int, stop: float) -> None:
        mine: list[str] = []
        for i in itertools.count():
            if time.monotonic() > stop:
                break
            if len(mine) >= PODS_PER_WORKER:
                self.remove(mine.pop(0))
            pod = f"w{n}p{i}"
            with self.lock:
                netns = self.node.sandbox("v2", pod)  # hnsctl in-process: one at a time
                self.known[pod] = next(self.clock)
                self.netns[pod] = netns
            run = self.node.run("ADD", self.conf, pod, netns)
            code = self.check(f"ADD {pod}", run, {0} | RETRYABLE)
            with self.lock:
                self.adds[code] += 1
            if code:
                self.remove(pod)  # the runtime's DEL after a failed ADD
                continue
            with self.lock:
                self.live[pod] = first_ip(run.out)[0]
            mine.append(pod)

    def remove(self, pod: str) -> None:
        with self.lock:
            self.live.pop(pod, None)  # leaving: its files go now
        self.check(f"DEL {pod}", self.node.run("DEL", self.conf, pod, self.netns[pod]), {0})
        with self.lock:
            del self.known[pod]

    def collector(self, plugin: str, stop: float, rng: random.Random) -> None:
        conf = self.conf if plugin == "flannel" else self.ipam_conf
        while True:
            time.sleep(rng.uniform(0, 0.5))  # the pods registered meanwhile are on the next list
            if time.monotonic() > stop:
                break
            with self.lock:
                listed, taken = set(self.known), next(self.clock)
                self.running[plugin] = taken
            time.sleep(rng.uniform(0, 0.2))  # new ADDs start between the list and the GC
            valid = [{"containerID": pod, "ifname": "eth0"} for pod in sorted(listed)]
            run = self.node.run("GC", {**conf, "cni.dev/valid-attachments": valid}, plugin=plugin)
            self.check(f"{plugin} GC", run, {0})
            with self.lock:
                self.gcs[plugin] += 1
                self.unlisted |= {pod for pod, at in self.known.items() if at > taken}
                del self.running[plugin]
                self.failures += self.freed_listed(run.stderr, listed) + self.lost(listed)

    @staticmethod
    def freed_listed(stderr: str, listed: set[str]) -> list[str]:
        """Freeings (``<who> GC: removing <what>: <why>``) that name a pod on the GC's list."""
        return [
            f"GC freed a listed pod's: {line}"
            for line in stderr.splitlines()
            if "GC: removing " in line and listed & set(POD.findall(line))
        ]

    def lost(self, listed: set[str]) -> list[str]:
        """Live pods on the list (and on every list since they were registered, that of a GC
        still running too) whose saved config, its marker or their reservation is gone; under
        ``lock``: no DEL of them runs."""
        since = min(self.running.values(), default=next(self.clock))  # the other GC may be on it now
        pods = {
            pod: ip
            for pod, ip in self.live.items()
            if pod in listed and pod not in self.unlisted and self.known[pod] < since
        }
        self.checked += len(pods)
        reserved = reservations(self.node)
        markers = set(os.listdir(self.node.flannel_dir / ".attachments")) if pods else set()
        out = []
        for pod, ip in pods.items():
            if not (self.node.flannel_dir / pod).is_file() or f"{pod}@{pod}@eth0" not in markers:
                out.append(f"{pod} lost its saved delegate config")
            if reserved.get(ip) != pod:
                out.append(f"{pod} lost its reservation of {ip} ({reserved.get(ip)!r} holds it)")
        return out


def reservations(node: Node) -> dict[str, str]:
    """host-local's reservations (address -> container ID) while other processes change them."""
    out = {}
    for path in (node.ipam_dir / node.network).iterdir():
        try:
            out[path.name] = path.read_bytes().split(b"\r\n")[0].decode()
        except FileNotFoundError:
            pass  # released meanwhile
        except IsADirectoryError:
            pass  # the sandbox records' folder
    return out


@pytest.mark.slow
def test_gc_racing_concurrent_adds_never_breaks_an_add_nor_frees_a_listed_pod(tmp_path):
    node = Node(tmp_path, "flannel").bridge().lease().venv_plugins()
    conf = node.flannel_conf("cni.conf.l2bridge-v2.json", cniVersion="1.1.0")
    ipam_conf = {
        "cniVersion": "1.1.0",
        "name": conf["name"],
        "ipam": {"type": "host-local", "subnet": SUBNET, "dataDir": str(node.ipam_dir)},
    }
    runtime = Runtime(node, conf, ipam_conf)
    node.flannel_dir.mkdir(mode=0o700)
    slow_save = node.flannel_dir / f".slow-save.{os.getpid()}.tmp"  # an ADD stuck in fsync the whole run
    slow_save.write_bytes(b"{")
    started = time.monotonic()
    stop = started + SECONDS
    with ThreadPoolExecutor(WORKERS + 2) as pool:
        jobs = [pool.submit(runtime.worker, n, stop) for n in range(WORKERS)]
        for seed, plugin in enumerate(("flannel", "host-local")):
            jobs.append(pool.submit(runtime.collector, plugin, stop, random.Random(seed)))
        for job in jobs:
            job.result()
    elapsed = time.monotonic() - started
    print(
        f"\n{sum(runtime.adds.values())} ADDs in {elapsed:.0f} s: {dict(runtime.adds)} (CNI code: ADDs); "
        f"GCs {dict(runtime.gcs)}; {runtime.checked} listed live pods checked after GCs; "
        f"{len(runtime.unlisted)} pods registered while a GC that did not list them ran"
    )
    assert not runtime.failures, "\n".join(runtime.failures[:5])
    assert runtime.adds[0] and runtime.gcs["flannel"] and runtime.gcs["host-local"] and runtime.checked
    with runtime.lock:
        assert not runtime.lost(set(runtime.live)), "after the last GC"
    assert slow_save.exists(), "GC removed the temporary file of a live writer"
    slow_save.unlink()
    for pod in list(runtime.live):  # the runtime removes its pods; then nothing half-saved is left
        runtime.remove(pod)
    assert not runtime.failures, "\n".join(runtime.failures[:5])
    assert not list(node.flannel_dir.glob(".*.tmp"))
