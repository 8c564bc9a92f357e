"""Every check of ``wincni doctor`` (and the gauges ``wincni metrics`` adds) takes time linear in
what it reads, so a node of a big cluster (thousands of kube-proxy's remote endpoints and load
balancers) is judged in seconds: each is run on a node (``tests/scalenode.py``) and on one four
times its size in every dimension (one load balancer's VIPs and ports among them), counting the
Python lines it runs (``sys.settrace``), and must not run six times as many: linear is four times,
a pairwise comparison sixteen (four times its part of the work even where it is only a part). A
count, unlike a clock, is the same on a loaded machine and a quiet one, and the same whether the
larger node's sets fit the processor's caches; what it cannot see is a loop inside one C call
(``x in some_list``), so the checks look things up in sets and dicts."""

from __future__ import annotations

import json
import sys
import tarfile
from pathlib import Path
from typing import Any, Callable

import pytest

from scalenode import Scale, bundle, recorded_node, replayed
from tools.wincni.doctor.archive import replay
from tools.wincni.doctor.archive.members import MANIFEST
from tools.wincni.doctor.checks import registry
from tools.wincni.doctor.metrics.gauges import gauges

SMALL = Scale(pods=125, adding=75, remote=200, balancers=80, wide=(75, 75))
LARGE = Scale(pods=500, adding=300, remote=800, balancers=320, wide=(300, 300))  # four times SMALL
RATIO = 6.0


@pytest.fixture(scope="module")
def nodes() -> tuple[Any, Any]:
    return replayed(SMALL), replayed(LARGE)


def judges() -> dict[str, Callable[[Any], Any]]:
    """Every check the full doctor runs, and the metrics' gauges (which count orphans their own way)."""
    found: dict[str, Callable[[Any], Any]] = {c.id: c.judge for c in registry.CHECKS}
    found["metrics gauges"] = lambda f: gauges(f, [])
    return found


def steps(judge: Callable[[Any], Any], facts: Any) -> int:
    """The Python lines (and calls) one call of ``judge`` runs."""
    count = 0

    def trace(frame: Any, event: str, arg: Any) -> Callable:
        nonlocal count
        count += 1
        return trace

    sys.settrace(trace)
    try:
        judge(facts)
    finally:
        sys.settrace(None)
    return count


def test_the_fixture_gives_every_check_something_to_judge(nodes: tuple[Any, Any]) -> None:
    small, large = nodes
    assert len(large.inventory.remote_endpoints) == 4 * len(small.inventory.remote_endpoints) == 800
    assert len(large.inventory.load_balancers) == 321 and len(large.reservations) == 800
    found = {c.id: c for c in registry.run(large)}
    assert found["stale-remote-endpoints"].status == "ok" and "(800)" in found["stale-remote-endpoints"].message
    assert found["duplicate-load-balancers"].status == "ok" and found["dns-load-balancer"].status == "ok"
    assert found["pod-endpoints"].status == "ok" and "300 reservation(s)" in found["pod-endpoints"].message
    assert found["ipam-store"].status == "ok" and "300 younger than" in found["ipam-store"].message


@pytest.mark.parametrize("check", sorted(judges()))
def test_no_check_takes_more_than_linear_time(nodes: tuple[Any, Any], check: str) -> None:
    judge = judges()[check]
    small, large = (steps(judge, facts) for facts in nodes)
    assert large <= RATIO * small, f"{check}: {small} steps at n, {large} at 4n ({large / small:.1f}x)"


def test_replay_reads_a_bundle_in_linear_time() -> None:
    """``--replay`` gathers the facts through the recorded HNS documents, opening each object by
    its ID as the clients do on a node: each open looks the ID up, never scans every document."""
    small, large = (steps(replay.gather, recorded_node(scale)) for scale in (SMALL, LARGE))
    assert large <= RATIO * small, f"replay: {small} steps at n, {large} at 4n ({large / small:.1f}x)"


@pytest.mark.slow
def test_the_benchmarks_bundle_fits_a_bundles_caps(tmp_path: Path) -> None:
    """At the benchmark's scale every member is in the bundle (the wide load balancer's V1 policy
    list alone would not be: it repeats every VIP in each of its policies), and it replays."""
    path = bundle(Scale(), tmp_path / "big.tar.gz")
    with tarfile.open(path) as tar:
        manifest = json.load(tar.extractfile(MANIFEST))
    assert manifest["omitted"] == {}
    assert len(replay.gather(replay.load(str(path))).inventory.load_balancers) == Scale().balancers
