"""Every check of ``wincni doctor`` (and the gauges ``wincni metrics`` adds) takes time linear in
what it reads, so a node of a big cluster (thousands of kube-proxy's remote endpoints and load
balancers) is judged in seconds: each is timed on a node (``tests/scalenode.py``) and on one twice
its size in every dimension (one load balancer's VIPs and ports among them), and must not take
three times as long. A pairwise comparison takes four times. Each size's figure is the least of
interleaved rounds (the machine's other work only ever adds time), a round repeating a quick check
for long enough that the clock's grain and one scheduling hiccup do not decide."""

from __future__ import annotations

import json
import tarfile
import time
from pathlib import Path
from typing import Any, Callable

import pytest

from scalenode import Scale, bundle
from tools.wincni.doctor.archive import replay
from tools.wincni.doctor.archive.members import MANIFEST
from tools.wincni.doctor.checks import registry
from tools.wincni.doctor.metrics.gauges import gauges

SMALL = Scale(pods=50, orphans=25, remote=400, balancers=160, wide=(150, 150))
DOUBLE = Scale(pods=100, orphans=50, remote=800, balancers=320, wide=(300, 300))
ROUNDS = 5
ROUND = 0.02  # seconds: a round calls the check until this much has passed
RATIO, SLACK = 3.0, 0.001  # twice the input: linear ~2x, n log n a little more, quadratic 4x


@pytest.fixture(scope="module")
def nodes(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Any]:
    tmp = tmp_path_factory.mktemp("scale")
    return tuple(replay.gather(replay.load(str(bundle(s, tmp / f"{n}.tar.gz")))) for n, s in enumerate((SMALL, DOUBLE)))


def judges() -> dict[str, Callable[[Any], Any]]:
    """Every check the full doctor runs, and the metrics' gauges (which count orphans their own way)."""
    found: dict[str, Callable[[Any], Any]] = {c.id: c.judge for c in registry.CHECKS}
    found["metrics gauges"] = lambda f: gauges(f, [])
    return found


def seconds(judge: Callable[[Any], Any], facts: Any) -> float:
    """One call's time, from as many calls as fill a round."""
    calls, started = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - started) < ROUND or not calls:
        judge(facts)
        calls += 1
    return elapsed / calls


def test_the_fixture_gives_every_check_something_to_judge(nodes: tuple[Any, Any]) -> None:
    small, double = nodes
    assert len(double.inventory.remote_endpoints) == 2 * len(small.inventory.remote_endpoints) == 800
    assert len(double.inventory.load_balancers) == 321 and len(double.reservations) == 150
    found = {c.id: c for c in registry.run(double)}
    assert found["stale-remote-endpoints"].status == "ok" and "(800)" in found["stale-remote-endpoints"].message
    assert found["duplicate-load-balancers"].status == "ok" and found["dns-load-balancer"].status == "ok"
    assert found["pod-endpoints"].status == "ok" and "50 reservation(s)" in found["pod-endpoints"].message
    assert found["ipam-store"].status == "warn" and "gone49" in found["ipam-store"].message


@pytest.mark.parametrize("check", sorted(judges()))
def test_no_check_takes_more_than_linear_time(nodes: tuple[Any, Any], check: str) -> None:
    judge = judges()[check]
    small, double = nodes
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(ROUNDS):  # interleaved: a slow moment of the machine weighs on both sizes
        times[0].append(seconds(judge, small))
        times[1].append(seconds(judge, double))
    at_n, at_2n = min(times[0]), min(times[1])
    assert at_2n <= RATIO * at_n + SLACK, f"{check}: {at_n * 1000:.1f} ms at n, {at_2n * 1000:.1f} ms at 2n"


def test_a_bundle_at_the_issues_scale_is_replayable(tmp_path: Path) -> None:
    """The generator's bundle stays within a bundle's caps at the benchmark's scale (the wide load
    balancer's V1 policy list alone would not: it repeats every VIP in each of its policies)."""
    path = bundle(Scale(), tmp_path / "big.tar.gz")
    with tarfile.open(path) as tar:
        manifest = json.load(tar.extractfile(MANIFEST))
    assert manifest["omitted"] == {}
