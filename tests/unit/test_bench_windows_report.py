"""bench/windows.py's report judges each step by the median of its per-round ratios to Go (both
sides ran back to back in a round) and that median's 95% interval (``verdict.judged``, whose own
tests are test_bench_verdict.py), and gives the CPU ratio beside the wall clock's."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
import windows

CHAIN_ADD = f"{windows.CHAIN} V2 ADD"


def figures(ours: list[float], go: list[float], cpu=(0.05, 0.06)) -> dict:
    """Every step timed as ``ours`` and ``go`` (seconds per round); the floors at 50 and 10 ms."""
    samples, cpus = {}, {}
    for step in windows.STEPS:
        samples[(step, "wincni")], samples[(step, "Go")] = list(ours), list(go)
        cpus[(step, "wincni")], cpus[(step, "Go")] = [cpu[0]] * len(ours), [cpu[1]] * len(go)
    samples[("floor", "Windows CPython")] = samples[("floor", "Wine")] = [0.05] * len(ours)
    cpus[("floor", "Windows CPython")] = cpus[("floor", "Wine")] = [0.01] * len(ours)
    import statistics

    return {
        "samples": samples,
        "cpu_samples": cpus,
        "reps": len(ours),
        "load": [1.0, 1.0],
        "others": {},
        "medians": {k: statistics.median(v) for k, v in samples.items()},
        "cpu": {k: statistics.median(v) for k, v in cpus.items()},
        "calls": {(step, side): 8 for step in windows.STEPS for side in ("wincni", "Go")},
    }


def line(lines: list[str], step: str) -> str:
    return next(text for text in lines if f"Wine {step} / Go:" in text)


def test_the_verdict_is_the_median_of_per_round_ratios_not_the_ratio_of_medians() -> None:
    # Load moved between rounds and hit both sides of a round alike: each round ours is 0.9x Go's.
    go = [0.100, 0.300, 0.110, 0.290, 0.120, 0.280, 0.130]
    ours = [0.9 * t for t in go]
    ours[1], ours[3] = 0.090 * 3.3, 0.290  # two rounds where ours was as slow as or slower than Go's
    lines = windows.report(figures(ours, go), 1 << 20)
    text = line(lines, "win-bridge V2 ADD")
    assert text.startswith("PASS Wine win-bridge V2 ADD / Go: 0.90x (budget <= 1.0x)"), text
    assert "median of 7 rounds, 95% CI 0.90-1.00x]" in text and "within noise" not in text, text
    assert line(lines, CHAIN_ADD).startswith(f"FAIL Wine {CHAIN_ADD} / Go: 0.90x (budget <= 0.8x)")


def test_a_budget_inside_the_interval_is_said_to_be_within_noise() -> None:
    go = [0.100] * 7
    ours = [0.070, 0.075, 0.078, 0.076, 0.090, 0.095, 0.085]
    text = line(windows.report(figures(ours, go), 1 << 20), CHAIN_ADD)
    assert text.startswith(f"PASS Wine {CHAIN_ADD} / Go: 0.78x"), text
    assert "CI 0.70-0.95x, within noise of the budget" in text, text


def test_the_floor_lines_judge_per_round_ratios_too() -> None:
    """Against the Windows CPython floor (50 ms each round), a step at 140-160 ms is 2.8-3.2x:
    over the chain's 3x in the median, inside the noise, so it passes saying so."""
    lines = windows.report(figures([0.14, 0.15, 0.16, 0.155, 0.145, 0.152, 0.148], [0.2] * 7), 1 << 20)
    text = next(t for t in lines if f"Wine {CHAIN_ADD} / Windows CPython floor:" in t)
    assert text.startswith(f"PASS Wine {CHAIN_ADD} / Windows CPython floor: 3.00x (budget <= 3.0x)"), text
    assert "CI 2.80-3.20x, within noise of the budget" in text, text


def test_cpu_ratio_and_hns_calls_beside_the_wall_clock() -> None:
    text = line(windows.report(figures([0.1] * 7, [0.2] * 7, cpu=(0.045, 0.060)), 1 << 20), "win-overlay V1 DEL")
    assert "medians 100 vs 200 ms = 0.50x; CPU 45 vs 60 ms = 0.75x; HNS calls 8 vs 8" in text, text


@pytest.mark.parametrize("reps", ["0", "-3", "many"])
def test_reps_that_give_no_timed_round_are_refused_by_name(reps: str, capsys) -> None:
    """A median needs a timed round: --reps 0 was a KeyError after the node was built."""
    with pytest.raises(SystemExit) as caught:
        windows.main(["--reps", reps])
    err = capsys.readouterr().err
    assert caught.value.code == 2 and "argument --reps" in err and "give 1 or more" in err, err


def test_the_newest_package_zip_is_the_one_written_last_not_the_last_name(tmp_path: Path) -> None:
    """0.10.0 sorts before 0.9.0 by name; bench/windows.py, winbuild/image.py and the lane pick by time."""
    from winbuild.dist import newest_zip

    assert newest_zip(tmp_path) is None
    older, newer = tmp_path / "wincni-0.9.0-windows-amd64.zip", tmp_path / "wincni-0.10.0-windows-amd64.zip"
    older.write_bytes(b"")
    newer.write_bytes(b"")
    os.utime(older, (2_000_000_000, 2_000_000_000))
    os.utime(newer, (1_000_000_000, 1_000_000_000))
    assert newest_zip(tmp_path) == older
    (tmp_path / "notes.zip").write_bytes(b"")
    assert newest_zip(tmp_path) == older
