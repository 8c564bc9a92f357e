"""The Windows lane's benchmark: the package zip's executables under Wine against the Go
reference plugins built for Windows (``winbuild/gobuild.py``) and against the Windows CPython floor
(the embeddable ``python.exe -I -S -c pass`` the bundle is built from), on one Wine node with the
fake HNS DLLs. The rounds are interleaved (each step runs on both sides back to back, which side
goes first alternating by round), and each step is judged by the median of its per-round ratios
(``paired``), so drift and bursts of the other work on the machine weigh on both sides of a
ratio alike; ``verdict.judged`` judges that median by its 95% interval, as every ``make bench`` line.

Each side has its own networks, flanneld lease and host-local stores (``Side``), so neither sees
the other's addresses; both use the same configs apart from names. The chain runs at CNI 0.4.0
because the Go flannel the proxy serves predates CNI 1.0 (see ``winbuild/gobuild.py``). The fake
HNS server counts every DLL call a process makes, so the Go side's HNS calls per command are
counted the same way as ours.

Timed with the Wine server kept running (``wineserver -p``); see ``Timer`` for
why the timed runs still use pipes. ``measure`` needs a ``tests/windows/winenode.WineNode``;
``report`` turns its figures into PASS/FAIL lines: a benchmark, nothing here fails a test.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import statistics
import time
import zipfile
from pathlib import Path

from verdict import judged
from winbuild import gobuild, toolchain

CHAIN = "flannel->win-bridge->host-local"
VERSION = "host-local VERSION"
# The pod steps, in the order each round runs them: (label, plugin run, HNS API).
PODS = (
    ("win-bridge V2", "win-bridge", "v2"),
    ("win-overlay V2", "win-overlay", "v2"),
    (f"{CHAIN} V2", "flannel", "v2"),
    ("win-bridge V1", "win-bridge", "v1"),
    ("win-overlay V1", "win-overlay", "v1"),
)
STEPS = (VERSION, *(f"{label} {cmd}" for label, _, _ in PODS for cmd in ("ADD", "DEL")))
# Against Go (never relaxed to pass): the chain's ADD at 0.8x, every other pod command at 1.0x.
GO_BUDGETS = {step: 0.8 if step == f"{CHAIN} V2 ADD" else 1.0 for step in STEPS if step != VERSION}
# Against the Windows CPython floor: (step, budget).
FLOOR_BUDGETS = ((VERSION, 1.5), (f"{CHAIN} V2 ADD", 3.0), ("win-bridge V2 DEL", 2.5))
# The package zip's size line: 5.0 MiB raised by what the NetworkPolicy model, its node agent and
# the HNS self-test add to the contents folder (no new dependency: the agent's list+watch is ours),
# then by 2.25 MiB, what TLS to the API server costs wincni.exe (measured: _ssl with OpenSSL's two
# DLLs, 2.2 MiB of the zip; http.client, email and the idna codec in the pack, 0.14 MiB).
PACKAGE_MIB = 7.75
REPS = 11  # the lane's medians: 11 rounds (plus one warm-up) of 24 Wine processes
BENCH_DIR = "C:\\bench"
GO_DIR = "C:\\goref"  # the Go plugins' CNI_PATH on the node; ours are in C:\k\cni
SERVICES = "10.96.0.0/12"


def gateway(subnet: str) -> str:
    """A /24's .1, where flanneld puts the gateway."""
    return subnet.rsplit(".", 1)[0] + ".1"


class Side:
    """One contender: where its plugins are, and its own networks, lease and stores."""

    def __init__(self, name: str, cni_dir: str, octet: int) -> None:
        self.name, self.cni_dir = name, cni_dir
        self.bridge, self.overlay = f"{name.lower()}-cbr0", f"{name.lower()}-vxlan0"
        self.bridge_subnet, self.overlay_subnet = f"10.244.{octet}.0/24", f"10.244.{octet + 1}.0/24"
        self.dir = f"{BENCH_DIR}\\{name.lower()}"

    def setup(self, node) -> None:
        """Its two HNS networks (as flanneld makes them) and flanneld's lease."""
        for name, kind, subnet, extra in (
            (self.bridge, "L2Bridge", self.bridge_subnet, ["--adapter", "Ethernet"]),
            (self.overlay, "Overlay", self.overlay_subnet, ["--vsid", "4096", "--management-ip", "10.127.130.36"]),
        ):
            node.hnsctl(
                "network", "create", name, "--type", kind, "--subnet", subnet, "--gateway", gateway(subnet), *extra
            )
        lease = node.path(self.dir + "\\subnet.env")
        lease.parent.mkdir(parents=True, exist_ok=True)
        lease.write_text(
            f"FLANNEL_NETWORK=10.244.0.0/16\r\nFLANNEL_SUBNET={gateway(self.bridge_subnet)}/24\r\n"
            "FLANNEL_MTU=1450\r\nFLANNEL_IPMASQ=true\r\n"
        )

    def exe(self, plugin: str) -> str:
        return f"{self.cni_dir}\\{plugin}.exe"

    def conf(self, plugin: str, api: str) -> bytes:
        """The same config for both sides, bar names: what a flannel node's CNI config holds."""
        v2 = api == "v2"
        nat = (
            {"Type": "OutBoundNAT", "Settings": {"Exceptions": [SERVICES]}}
            if v2
            else {"Type": "OutBoundNAT", "ExceptionList": [SERVICES]}
        )
        policies = [{"name": "EndpointPolicy", "value": nat}]
        if plugin == "flannel":
            return json.dumps(
                {
                    "cniVersion": "0.4.0",
                    "name": self.bridge,
                    "type": "flannel",
                    "subnetFile": self.dir + "\\subnet.env",
                    "dataDir": self.dir + "\\flannel",
                    "delegate": {"type": "win-bridge", "apiVersion": 2, "policies": policies},
                }
            ).encode()
        network, subnet = (
            (self.bridge, self.bridge_subnet) if plugin == "win-bridge" else (self.overlay, self.overlay_subnet)
        )
        doc = {
            "cniVersion": "1.0.0",
            "name": network,
            "type": plugin,
            "apiVersion": 2 if v2 else 1,
            "policies": policies,
            "ipam": {"type": "host-local", "subnet": subnet, "dataDir": self.dir + "\\ipam"},
        }
        if plugin == "win-overlay":
            doc["ipMasq"] = True
        return json.dumps(doc).encode()


class Timer:
    """Runs Windows programs under the node's prefix and times them, the Wine server kept running
    (``WineNode.keep_server``)."""

    def __init__(self, node) -> None:
        self.node = node
        _subreaper(True)
        node.keep_server()

    def run(self, argv: list[str], stdin: bytes = b"", **env: str) -> tuple[float, float, list[str]]:
        """Seconds the program took, the CPU seconds it used with the Windows processes it started
        (Go's host-local, Go flannel's delegate; less disturbed by the machine's other work than the
        wall clock; neither the Wine server's nor the fake HNS's), and the HNS calls it made (the
        fake HNS's names, Close calls left out as the goldens count them); a failure is an
        AssertionError with its output."""
        calls = self.node.server.calls
        _reap()
        before, cpu = len(calls), _children_cpu()
        started = time.perf_counter()
        proc = self.node.wine(*argv, stdin=stdin, **env)
        elapsed = time.perf_counter() - started
        _reap()
        assert proc.returncode == 0, (argv, env, proc.stdout.decode(), proc.stderr.decode())
        return elapsed, _children_cpu() - cpu, [name for name in calls[before:] if "Close" not in name]

    def close(self) -> None:
        _subreaper(False)
        _reap()


def _subreaper(on: bool) -> None:
    """Wine starts a Windows process with a double fork, so the processes a timed program starts are
    orphans, not its children, and their CPU time would be missing from its figure (Go's host-local
    and flannel's delegates; ours run in-process). As the child subreaper (Linux
    ``PR_SET_CHILD_SUBREAPER``) this process inherits them and ``_reap`` counts them."""
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(36, int(on), 0, 0, 0)


def _reap() -> None:
    """Wait for every child that has ended (the orphans this subreaper took in), which adds their
    CPU time to ``RUSAGE_CHILDREN``; Wine's services, still running, stay."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if not pid:
            return


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def install_go(node) -> None:
    """The Go reference plugins into ``GO_DIR`` on the node (built on first use)."""
    target = node.path(GO_DIR)
    target.mkdir(parents=True, exist_ok=True)
    for name in gobuild.REFERENCE_PLUGINS:
        shutil.copy(gobuild.build(name), target / name)


def measure(node, reps: int = REPS, others: tuple[Path, ...] = ()) -> dict:
    """Medians (seconds: wall clock and the process's CPU) of every step on every side and of
    the two floors, HNS calls per command, and the machine's load average before and after:
    ``report``'s input. The sides are ours (the node's package zip), Go's, and ``others``: more
    package zips (e.g. the build before a change) laid beside ours and timed in the same rounds."""
    sides = [Side("wincni", "C:\\k\\cni", 40), Side("Go", GO_DIR, 50)]
    install_go(node)
    for n, other in enumerate(others, 2):
        side = Side(f"zip{n}", f"C:\\k\\cni-zip{n}", 50 + 10 * n)
        with zipfile.ZipFile(other) as zf:
            zf.extractall(node.path(side.cni_dir))
        sides.append(side)
    for side in sides:
        side.setup(node)
    timer = Timer(node)
    python = toolchain.winpath(toolchain.ensure_python(toolchain.cache_dir()))
    samples: dict[tuple[str, str], list[float]] = {}
    cpu: dict[tuple[str, str], list[float]] = {}
    calls: dict[tuple[str, str], list[str]] = {}
    load = [os.getloadavg()[0]]
    version = json.dumps({"cniVersion": "1.1.0"}).encode()

    def timed(key: tuple[str, str], rep: int, argv: list[str], stdin: bytes = b"", **env: str) -> None:
        elapsed, used, names = timer.run(argv, stdin, **env)
        if rep:  # round 0 warms the caches and is not counted
            samples.setdefault(key, []).append(elapsed)
            cpu.setdefault(key, []).append(used)
            calls[key] = names

    try:
        for rep in range(reps + 1):
            turn = sides[rep % len(sides) :] + sides[: rep % len(sides)]  # who goes first rotates
            timed(("floor", "Windows CPython"), rep, [python, "-I", "-S", "-c", "pass"])
            timed(("floor", "Wine"), rep, [toolchain.winpath(node.trivial)])
            for side in turn:
                timed((VERSION, side.name), rep, [side.exe("host-local")], version, CNI_COMMAND="VERSION")
            for label, plugin, api in PODS:
                pods = {}
                for side in turn:
                    cid = f"bench-{side.name.lower()}-{plugin}-{api}-{rep}"
                    pods[side.name] = cid, node.sandbox(api, cid), side.conf(plugin, api)
                for command in ("ADD", "DEL"):
                    for side in turn:
                        cid, netns, conf = pods[side.name]
                        timed(
                            (f"{label} {command}", side.name),
                            rep,
                            [side.exe(plugin)],
                            conf,
                            CNI_COMMAND=command,
                            CNI_CONTAINERID=cid,
                            CNI_NETNS=netns,
                            CNI_PATH=side.cni_dir,
                        )
    finally:
        timer.close()
    load.append(os.getloadavg()[0])
    return {
        "medians": {key: statistics.median(values) for key, values in samples.items()},
        "cpu": {key: statistics.median(values) for key, values in cpu.items()},
        "samples": samples,
        "cpu_samples": cpu,
        "calls": {key: len(names) for key, names in calls.items()},
        "reps": reps,
        "load": load,
        "others": {f"zip{n}": str(other) for n, other in enumerate(others, 2)},
    }


def paired(figures: dict, step: str, side: str, against: str = "Go") -> list[float]:
    """``side``'s wall time over ``against``'s in each round: the two ran back to back, so the load
    of that moment weighs on both, where medians taken apart mix a busy round of one side with a
    quiet round of the other."""
    ours, theirs = figures["samples"][(step, side)], figures["samples"][(step, against)]
    return [a / b for a, b in zip(ours, theirs)]


def report(figures: dict, zip_bytes: int) -> list[str]:
    """The budget lines (against Go, then against the floor), then the figures they came from."""
    med, cpu, calls = figures["medians"], figures["cpu"], figures["calls"]
    floor = med[("floor", "Windows CPython")]
    lines = []
    for step, limit in GO_BUDGETS.items():
        ours, go = med[(step, "wincni")], med[(step, "Go")]
        lines.append(
            judged(f"Wine {step} / Go", paired(figures, step, "wincni"), limit)
            + f"  [per-round ratios; medians {ours * 1000:.0f} vs "
            f"{go * 1000:.0f} ms = {ours / go:.2f}x; CPU {cpu[(step, 'wincni')] * 1000:.0f} vs "
            f"{cpu[(step, 'Go')] * 1000:.0f} ms = {cpu[(step, 'wincni')] / cpu[(step, 'Go')]:.2f}x; "
            f"HNS calls {calls[(step, 'wincni')]} vs {calls[(step, 'Go')]}]"
        )
    floors = figures["samples"][("floor", "Windows CPython")]
    lines += [
        judged(
            f"Wine {step} / Windows CPython floor",
            [a / b for a, b in zip(figures["samples"][(step, "wincni")], floors)],
            limit,
        )
        for step, limit in FLOOR_BUDGETS
    ]
    lines.append(judged("package zip size", [zip_bytes / 2**20], PACKAGE_MIB, unit=" MiB"))
    ours, go = med[(VERSION, "wincni")], med[(VERSION, "Go")]
    lines.append(
        f"     {VERSION}: wincni {ours * 1000:.0f} ms ({ours / go:.2f}x Go's {go * 1000:.0f} ms), "
        f"Windows CPython floor {floor * 1000:.0f} ms (wincni {ours / floor:.2f}x it), "
        f"Wine floor (an empty mingw program) {med[('floor', 'Wine')] * 1000:.0f} ms; CPU: wincni "
        f"{cpu[(VERSION, 'wincni')] * 1000:.0f}, Go {cpu[(VERSION, 'Go')] * 1000:.0f}, CPython floor "
        f"{cpu[('floor', 'Windows CPython')] * 1000:.0f}, Wine floor {cpu[('floor', 'Wine')] * 1000:.0f} ms"
    )
    for name, path in figures["others"].items():
        lines.append(
            f"     {name} ({path}), same rounds: "
            + "; ".join(
                f"{step} {med[(step, name)] * 1000:.0f} ms ({statistics.median(paired(figures, step, name)):.2f}x Go, "
                f"{statistics.median(paired(figures, step, name, 'wincni')):.2f}x wincni per round, "
                f"CPU {cpu[(step, name)] * 1000:.0f})"
                for step in STEPS
            )
        )
    lines.append(
        f"     (medians of {figures['reps']} interleaved rounds; 1-min load average "
        f"{figures['load'][0]:.1f} before, {figures['load'][1]:.1f} after)"
    )
    return lines


def _rounds(text: str) -> int:
    """--reps: a median needs at least one timed round (the warm-up is not one)."""
    import argparse

    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of rounds: give 1 or more")
    return value


def main(argv: list[str] | None = None) -> int:
    """``make bench-windows``, or ``PYTHONPATH=. python bench/windows.py [ZIP [OTHER...]]``: the
    report for a package zip (default: the one ``make dist-windows`` built); each OTHER zip (another
    build: before a change, another packaging option) is timed in the same rounds on the same node
    and reported beside it."""
    import argparse
    import sys
    import tempfile

    root = Path(__file__).resolve().parents[1]
    sys.path[:0] = [str(root), str(root / "tests"), str(root / "tests" / "windows")]
    from winenode import WineNode

    ap = argparse.ArgumentParser(description=main.__doc__.splitlines()[0])
    ap.add_argument("zips", nargs="*", type=Path)
    ap.add_argument("--reps", type=_rounds, default=REPS, help=f"timed rounds, at least 1 (default {REPS})")
    args = ap.parse_args(argv)
    from winbuild.dist import newest_zip

    zips = args.zips or [z for z in [newest_zip()] if z]
    if not zips:
        ap.error("no package zip: run `make dist-windows` first")
    for zip_path in zips:
        if not zipfile.is_zipfile(zip_path):
            ap.error(f"{zip_path} is not a package zip (`make dist-windows` writes one to dist-windows/)")
    with tempfile.TemporaryDirectory(prefix="wincni-winbench-") as tmp:
        node = WineNode(Path(tmp), zips[0])
        try:
            figures = measure(node, args.reps, tuple(zips[1:]))
        finally:
            node.close()
    print(zips[0])
    for line in report(figures, zips[0].stat().st_size):
        print("  " + line, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
