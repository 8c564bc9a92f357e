"""The Windows lane's budgets (#23): the release zip's executables under Wine against the Windows
CPython floor (the embeddable ``python.exe -I -S -c pass`` the bundle is built from), medians
taken in the same run, rounds interleaved so drift hits floor and commands alike.

Timed as the issue prescribes, with the Wine server kept running (``wineserver -p``); see ``Timer``
for why the timed runs still use pipes. ``measure`` needs a ``tests/windows/winenode.WineNode``
(the fake HNS DLLs, ``C:\\k\\cni``); ``report`` turns its figures into PASS/FAIL lines.
"""
from __future__ import annotations

import json
import statistics
import subprocess
import time
from pathlib import Path

from verdict import verdict

from winbuild import toolchain

NETWORK, SUBNET, GATEWAY = "bench0", "10.244.40.0/24", "10.244.40.1"
LEASE = "FLANNEL_NETWORK=10.244.0.0/16\nFLANNEL_SUBNET=10.244.40.1/24\nFLANNEL_MTU=1450\nFLANNEL_IPMASQ=true\n"
POLICY = {"name": "EndpointPolicy", "value": {"Type": "OutBoundNAT", "Settings": {"Exceptions": ["10.96.0.0/12"]}}}
BENCH_DIR = r"C:\bench"
REPS = 7  # medians of 7 rounds (plus one warm-up): about 40 Wine processes, well under a minute
# (label, budget over the floor), #23; never relaxed to pass.
BUDGETS = (("host-local VERSION", 1.5), ("flannel->win-bridge->host-local V2 ADD", 3.0), ("win-bridge V2 DEL", 2.5))


class Timer:
    """Runs Windows programs under the node's prefix and times them, the Wine server kept running.

    Windows CPython will not start on file or /dev/null handles under Wine (``init_sys_streams``:
    invalid handle), so the timed runs use pipes; Wine's services are started first by the trivial
    program with /dev/null handles, so none of them inherits (and holds open) a timed run's pipe."""

    def __init__(self, node) -> None:
        self.node = node
        wineserver = str(toolchain.WINE.parent / "wineserver")
        quiet = {"stdin": subprocess.DEVNULL, "stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
        subprocess.run([wineserver, "-w"], env=node.win_env, timeout=60, **quiet)  # services of piped runs gone
        subprocess.run([wineserver, "-p"], env=node.win_env, check=True, **quiet)
        subprocess.run([str(toolchain.WINE), str(node.trivial)], env=node.win_env, timeout=120, **quiet)

    def run(self, argv: list[str], stdin: bytes = b"", **env: str) -> float:
        """Seconds the program took; a failure is an AssertionError with its output."""
        started = time.perf_counter()
        proc = self.node.wine(*argv, stdin=stdin, **env)
        elapsed = time.perf_counter() - started
        assert proc.returncode == 0, (argv, proc.stdout.decode(), proc.stderr.decode())
        return elapsed


def measure(node, reps: int = REPS) -> dict[str, float]:
    """Median seconds of the floor and the three budgeted commands."""
    timer = Timer(node)
    python = toolchain.winpath(toolchain.ensure_python(toolchain.cache_dir()))
    node.hnsctl("network", "create", NETWORK, "--type", "L2Bridge", "--subnet", SUBNET, "--gateway", GATEWAY,
                "--adapter", "Ethernet")
    node.path(BENCH_DIR).mkdir(parents=True, exist_ok=True)
    (node.path(BENCH_DIR) / "subnet.env").write_text(LEASE)
    flannel = json.dumps({"cniVersion": "1.0.0", "name": NETWORK, "type": "flannel",
                          "subnetFile": BENCH_DIR + r"\subnet.env", "dataDir": BENCH_DIR + r"\flannel",
                          "ipam": {"dataDir": BENCH_DIR + r"\ipam"},
                          "delegate": {"type": "win-bridge", "apiVersion": 2, "policies": [POLICY]}}).encode()
    bridge = json.dumps({"cniVersion": "1.0.0", "name": NETWORK, "type": "win-bridge", "apiVersion": 2,
                         "policies": [POLICY], "ipam": {"type": "host-local", "subnet": SUBNET,
                                                        "dataDir": BENCH_DIR + r"\ipam"}}).encode()
    version = json.dumps({"cniVersion": "1.1.0"}).encode()
    samples: dict[str, list[float]] = {"floor": [], BUDGETS[0][0]: [], BUDGETS[1][0]: [], BUDGETS[2][0]: []}
    for rep in range(reps + 1):  # round 0 warms the caches and is not counted
        floor = timer.run([python, "-I", "-S", "-c", "pass"])
        ver = timer.run([node.exe("host-local")], version, CNI_COMMAND="VERSION")
        cid = f"bench-add{rep}"
        add = timer.run([node.exe("flannel")], flannel, CNI_COMMAND="ADD", CNI_CONTAINERID=cid,
                        CNI_NETNS=node.sandbox("v2", cid))
        cid = f"bench-del{rep}"
        netns = node.sandbox("v2", cid)
        timer.run([node.exe("win-bridge")], bridge, CNI_COMMAND="ADD", CNI_CONTAINERID=cid, CNI_NETNS=netns)
        dele = timer.run([node.exe("win-bridge")], bridge, CNI_COMMAND="DEL", CNI_CONTAINERID=cid,
                         CNI_NETNS=netns)
        if rep:
            for key, value in zip(samples, (floor, ver, add, dele)):
                samples[key].append(value)
    return {key: statistics.median(values) for key, values in samples.items()}


def report(figures: dict[str, float], zip_bytes: int) -> list[str]:
    """The budget lines, then the figures they came from."""
    floor = figures["floor"]
    lines = [verdict(f"Wine {label} / Windows CPython floor", figures[label] / floor, limit)
             for label, limit in BUDGETS]
    lines.append(verdict("release zip size", zip_bytes / 2**20, 5.0, unit=" MiB"))
    lines.append("     (figures, medians) " + "; ".join(f"{k} {v * 1000:.0f} ms" for k, v in figures.items()))
    return lines


def main(argv: list[str] | None = None) -> int:
    """``PYTHONPATH=. python bench/windows.py ZIP...``: the same figures for release zips built with other packaging
    options (one fresh Wine node each), to compare them; ``make test-windows`` reports the real zip."""
    import argparse
    import sys
    import tempfile

    root = Path(__file__).resolve().parents[1]
    sys.path[:0] = [str(root), str(root / "tests"), str(root / "tests" / "windows")]
    from winenode import WineNode

    ap = argparse.ArgumentParser(description=main.__doc__.splitlines()[0])
    ap.add_argument("zips", nargs="+", type=Path)
    ap.add_argument("--reps", type=int, default=REPS)
    args = ap.parse_args(argv)
    for zip_path in args.zips:
        with tempfile.TemporaryDirectory(prefix="wincni-winbench-") as tmp:
            node = WineNode(Path(tmp), zip_path)
            try:
                figures = measure(node, args.reps)
            finally:
                node.close()
        print(zip_path)
        for line in report(figures, zip_path.stat().st_size):
            print("  " + line, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
