"""Benchmark ``wincni doctor``, ``wincni metrics`` and ``wincni doctor --replay`` on a node of a big
cluster (``tests/scalenode.py``: kube-proxy's remote endpoints and load balancers, the node's own
pods), in-process from the source tree: wall seconds (median of a few runs) and the peak of
Python's allocations (``tracemalloc``, a run of its own, since tracing slows the run).

- **doctor**: every check of the full doctor (``registry.run``) and the report, on the facts
  ``gather`` read (from the bundle: reading the live node is the sweep's and libhns's cost).
- **metrics**: the same checks and the gauges' text (``gauges``, ``exposition``).
- **replay**: ``wincni doctor --replay BUNDLE`` end to end: the archive read, the facts gathered
  through the recorded HNS documents, the checks and the report.

    python bench/doctor_scale.py [--pods N] [--adding N] [--remote N] [--balancers N] [--wide VIPS PORTS] [--reps N]
"""

from __future__ import annotations

import argparse
import io
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Callable

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from scalenode import Scale, bundle, replayed

#: The issue's budget for each line at the big cluster's scale.
SECONDS, MIB = 5.0, 200.0
#: Each line's name in ``make bench``.
LINES = {
    "doctor": "wincni doctor's checks and report",
    "metrics": "wincni metrics' checks and gauges",
    "replay": "wincni doctor --replay of its bundle",
}


def replay(path: Path) -> None:
    from tools.wincni.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    if main(["doctor", "--replay", str(path), "-o", "json"], out, err, {}, platform="linux", cwd="/") not in (0, 1):
        raise SystemExit(f"wincni doctor --replay {path} failed: {err.getvalue()}")


def doctor(facts) -> None:
    from tools.wincni.doctor.checks import registry
    from tools.wincni.doctor.report import report

    report(registry.run(facts), {}, True, "json", io.StringIO())


def metrics(facts) -> None:
    from tools.wincni.doctor.checks import registry
    from tools.wincni.doctor.metrics.gauges import exposition, gauges

    exposition(gauges(facts, registry.run(facts)))


def peak(run: Callable[[], None]) -> float:
    """The MiB peak of Python's allocations during one run (tracemalloc: a run of its own, since
    tracing slows it)."""
    tracemalloc.start()
    try:
        run()
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def measure(scale: Scale, reps: int = 3) -> dict[str, dict]:
    """{line: {"seconds": [one a round], "MiB": peak}} for doctor, metrics and replay at
    ``scale``, the three taking turns in each round."""
    with tempfile.TemporaryDirectory(prefix="wincni-doctor-scale-") as tmp:
        path = bundle(scale, Path(tmp) / "node.tar.gz")
        facts = replayed(scale)
        runs = {"doctor": lambda: doctor(facts), "metrics": lambda: metrics(facts), "replay": lambda: replay(path)}
        out = {line: {"seconds": []} for line in runs}
        for _ in range(reps):
            for line, run in runs.items():
                started = time.perf_counter()
                run()
                out[line]["seconds"].append(time.perf_counter() - started)
        for line, run in runs.items():
            out[line]["MiB"] = peak(run)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pods", type=int, default=Scale.pods)
    ap.add_argument("--adding", type=int, default=Scale.adding)
    ap.add_argument("--remote", type=int, default=Scale.remote)
    ap.add_argument("--balancers", type=int, default=Scale.balancers)
    ap.add_argument("--wide", type=int, nargs=2, default=(0, 0), metavar=("VIPS", "PORTS"))
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args(argv)
    scale = Scale(args.pods, args.adding, args.remote, args.balancers, wide=tuple(args.wide))
    print(f"node: {scale}")
    for line, got in measure(scale, args.reps).items():
        secs = got["seconds"]
        print(
            f"  {line:<8} median {statistics.median(secs):7.2f} s (of {', '.join(f'{s:.2f}' for s in secs)}), "
            f"peak {got['MiB']:7.1f} MiB"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
