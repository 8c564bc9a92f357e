"""The Windows budgets, reported by the lane: a benchmark report (PASS/FAIL lines at the
end of the run, ours against the Go reference plugins and against the Windows CPython floor), not
a failing test; the test fails only when a timed command of either side fails, leaves its pod
behind, or the fake HNS saw no call from a side."""

from __future__ import annotations

import sys
from pathlib import Path

from winenode import ROOT, WineNode

sys.path.insert(0, str(ROOT / "bench"))
import windows


def test_budgets_against_go_and_the_windows_cpython_floor(node: WineNode, package_zip: Path, timings: dict) -> None:
    figures = windows.measure(node)
    timings["budget_lines"] = windows.report(figures, package_zip.stat().st_size)
    assert not [name for name in node.endpoints() if name.startswith("bench-")]  # every timed DEL took its pod
    for side in ("wincni", "Go"):  # both sides' pods went through the fake HNS, every command counted
        assert all(
            figures["calls"][(f"{label} {cmd}", side)] for label, _, _ in windows.PODS for cmd in ("ADD", "DEL")
        ), figures["calls"]
