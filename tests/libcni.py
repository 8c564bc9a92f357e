"""A runtime that is not ours: ``cnidriver`` (winbuild/gomain/cnidriver: libcni v1.3.0 as
containerd's go-cni drives it) over a conf dir, a plugin path and a libcni cache dir. Both lanes use
it: the linux/amd64 build over dist/'s executables, and the windows/amd64 build under Wine.

Both lanes walk the same node (flanneld's vxlan network ``vxlan0`` and its lease, our flannel's
conflist at cniVersion 1.1.0) through ``pods_and_gc`` and ``status_states``.
"""

from __future__ import annotations

import json
import subprocess
import time
from dataclasses import dataclass
from typing import Callable, Sequence

from hnsnode import Node, Run, first_ip

#: STATUS waits at most libhns.deadline.STATUS_SECONDS (3 s) on HNS; the rest is process starts.
BOUND = 5.0
#: The state of ``status_states`` whose time the lanes judge on its own (a row of the table).
HUNG = "HNS hung (every call blocks 20 s)"
#: The calls STATUS's HNS reads go through (V1 HNSCall and the V2 exports), each blocking.
HUNG_HNS = ",".join(
    f"{target}=hang:20" for target in ("HNSCall", "HcnEnumerateNetworks", "HcnOpenNetwork", "HcnQueryNetworkProperties")
)


@dataclass(frozen=True)
class Driver:
    """One node's libcni: ``launch(argv, env)`` runs the driver program (natively or under Wine)."""

    launch: Callable[[list[str], dict[str, str]], subprocess.CompletedProcess]
    conf_dir: str
    path: str
    cache_dir: str

    def __call__(
        self, command: str, cid: str = "", netns: str = "", valid: Sequence[str] = (), args: str = "", **env: str
    ) -> tuple[Run, float]:
        """The command's outcome (stdout parsed: the result, or the CNI error) and its seconds;
        ``args``: the runtime's CNI_ARGS (``K=V;K=V``, e.g. the pod's name as kubelet passes it)."""
        argv = ["-confdir", self.conf_dir, "-path", self.path, "-cachedir", self.cache_dir]
        argv += ["-id", cid, "-netns", netns, "-args", args, "-valid", ",".join(valid), command.lower()]
        start = time.monotonic()
        proc = self.launch(argv, env)
        took = time.monotonic() - start
        text = proc.stdout.decode()
        return Run(proc.returncode, json.loads(text) if text.strip() else None, proc.stderr.decode()), took

    def ok(
        self, command: str, cid: str = "", netns: str = "", valid: Sequence[str] = (), args: str = "", **env: str
    ) -> Run:
        run, _ = self(command, cid, netns, valid, args, **env)
        assert run.ok, (command, run.out, run.stderr)
        return run


def pods_and_gc(node: Node, driver: Driver) -> None:
    """Two pods added, one checked; GC with only that one live frees the other (libcni DELs the
    cached attachment not listed, then runs the plugins' GC); DEL leaves nothing."""
    pods = {cid: node.sandbox("v2", cid) for cid in ("live", "gone")}
    added = {cid: driver.ok("ADD", cid, netns).out for cid, netns in pods.items()}
    assert node.endpoints()["live_vxlan0"]["IPAddress"] == first_ip(added["live"])[0]
    driver.ok("CHECK", "live", pods["live"])
    driver.ok("GC", valid=["live/eth0"])
    assert set(node.endpoints()) == {"live_vxlan0"}
    assert list(node.ip_files().values()) == ["live"]
    driver.ok("DEL", "live", pods["live"])
    node.assert_clean("live")


def status_states(node: Node, status: Driver) -> dict[str, tuple[int, float]]:
    """STATUS in each node state, as containerd's NetworkReady sees it, each code and reason
    asserted: {state: (code, seconds)} in the order walked (``table`` prints it, ``slow`` judges it)."""
    measured = {}

    def state(name: str, code: int, *words: str, **env: str) -> None:
        run, took = status("STATUS", **env)
        measured[name] = (run.out["code"] if run.out else run.rc, took)
        if code:
            run.failed(code, *words)
        else:
            assert run.ok and run.out is None, (run.out, run.stderr)

    state("healthy node", 0)
    lease = node.subnet_env.read_bytes()
    node.subnet_env.unlink()
    state("subnet.env gone (flanneld down)", 50, "subnet.env", "flanneld")
    node.subnet_env.write_bytes(lease)
    state("subnet.env back", 0)
    state(HUNG, 50, "no answer from HNS after", LIBHNS_SIM_FAULTS=HUNG_HNS)
    node.hnsctl("network", "delete", "vxlan0")
    state("HNS network missing", 50, "vxlan0 not found", "flanneld")
    node.overlay("vxlan0", 4095)
    state("overlay VNI 4095 (limited connectivity)", 51, "VSID", "4095", "4096")
    return measured


def slow(measured: dict[str, tuple[int, float]], bound: float = BOUND) -> dict[str, float]:
    """The states whose answer took ``bound`` seconds or more."""
    return {state: took for state, (_, took) in measured.items() if took >= bound}


def table(lane: str, measured: dict[str, tuple[int, float]]) -> str:
    """STATUS's code and seconds for each node state, as the run prints it."""
    lines = [f"STATUS through libcni's GetStatusNetworkList, {lane}:", f"  {'node state':<42} code  seconds"]
    lines += [f"  {state:<42} {code:>4}  {took:7.2f}" for state, (code, took) in measured.items()]
    return "\n".join(lines)
