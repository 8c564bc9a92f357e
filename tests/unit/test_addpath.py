"""The ratchet on ``bench/addpath.py``: a pod ADD followed module by module through ``Lifecycle.add``
may not pass more of our modules, nor come back into a module it left in more ways, than it does
now. A change that lowers a figure lowers its bound here; one that raises it says why in review."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import addpath

# scenario -> (modules, returns, all returns). ADD's decision is its own pure module (winnet.addaction),
# one module more on every path than before it, and fewer returns in all. host-local reaches each
# store file through the store's folder held open (basics.posixfolder's Folder) and safefs's
# read_regular / replace_file / open_rewrite, where a bare os call by path was: two modules more on
# the chain, four more ways back, 22 returns more in all.
BOUNDS = {"v2": (25, 40, 129), "v1": (25, 41, 120), "chain": (40, 84, 246)}


@pytest.mark.parametrize("scenario", sorted(BOUNDS))
def test_a_pod_add_passes_no_more_modules_than_pinned(scenario):
    fig, steps = addpath.measure(scenario)
    modules, returns, all_returns = BOUNDS[scenario]
    shown = " ".join(("<" if kind == "return" else "") + module for module, kind, _ in steps)
    assert steps[0][0] == steps[-1][0] == "plugins.winnet.lifecycle", shown
    assert fig["modules"] <= modules, (
        f"{scenario}: {fig['modules']} modules (bound {modules}): {sorted({s[0] for s in steps})}"
    )
    assert fig["returns"] <= returns, f"{scenario}: {fig['returns']} returns (bound {returns}): {shown}"
    assert fig["all_returns"] <= all_returns, (
        f"{scenario}: {fig['all_returns']} returns in all (bound {all_returns}): {shown}"
    )


def test_the_count_follows_its_definition():
    """Distinct ways back vs every return, on a made-up sequence: a -> b -> a -> b -> a -> c -> a."""
    steps = [
        ["a", "call", "f"],
        ["b", "call", "g"],
        ["a", "return", "f"],
        ["b", "call", "g"],
        ["a", "return", "f"],
        ["c", "call", "h"],
        ["a", "return", "f"],
    ]
    assert addpath.figures(steps) == {"modules": 3, "returns": 2, "all_returns": 3, "steps": 7}
