"""#23's Windows budgets, reported by the lane: a benchmark report (PASS/FAIL lines at the end of the
run), not a failing test; the test fails only when a timed command fails or leaves its pod behind."""
from __future__ import annotations

import sys
from pathlib import Path

from winenode import ROOT, WineNode

sys.path.insert(0, str(ROOT / "bench"))
import windows  # noqa: E402  bench/windows.py


def test_budgets_over_the_windows_cpython_floor(node: WineNode, release_zip: Path, timings: dict) -> None:
    figures = windows.measure(node)
    timings["budget_lines"] = windows.report(figures, release_zip.stat().st_size)
    endpoints = node.endpoints()  # every timed ADD left its pod up, every timed DEL took its pod down
    rounds = range(windows.REPS + 1)
    assert sorted(n for n in endpoints if n.startswith("bench-add")) == sorted(f"bench-add{i}_{windows.NETWORK}"
                                                                              for i in rounds)
    assert not [n for n in endpoints if n.startswith("bench-del")]
