"""``bench/verdict.py``: every budget line of ``make bench`` and the Windows lane judges the median
of interleaved rounds by its 95% interval, failing only when the whole interval is over the budget:
a clear regression fails, noise around the budget passes saying so."""

from __future__ import annotations

import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import verdict


def test_median_interval_takes_order_statistics_by_the_binomial_tails() -> None:
    assert verdict.median_interval(list(range(15))) == (3, 11)  # 4th and 12th of 15: 96.5%
    assert verdict.median_interval([5, 1, 3, 2, 4, 7, 6]) == (1, 7)  # 7 rounds: the whole range
    assert verdict.median_interval(list(range(30))) == (9, 20)
    assert verdict.median_interval([2.5]) == (2.5, 2.5)


def test_a_clear_regression_fails() -> None:
    """The issue's flannel chain at 2.63-2.70x the floor, budget 2.5x: every round is over."""
    line = verdict.judged("chain / floor", [2.63, 2.70, 2.66, 2.64, 2.69, 2.65, 2.68, 2.67, 2.66], 2.5)
    assert line == "FAIL chain / floor: 2.66x (budget <= 2.5x)  [median of 9 rounds, 95% CI 2.64-2.69x]"


def test_noise_around_the_budget_passes_saying_so() -> None:
    """The issue's host-local at 10,000 (1.59 / 1.33 / 1.15x, budget 1.5x) and win-bridge DEL
    (2.13 / 1.77 / 1.55 / 1.82x, budget 2.0x): runs that straddle the budget, even with the
    median over it, do not fail; the line says the budget is inside the noise."""
    line = verdict.judged("host-local", [1.59, 1.33, 1.15, 1.62, 1.41, 1.55, 1.52, 1.28, 1.58], 1.5)
    assert line.startswith("PASS host-local: 1.52x (budget <= 1.5x)"), line
    assert line.endswith("95% CI 1.28-1.59x, within noise of the budget]"), line
    line = verdict.judged("DEL", [2.13, 1.77, 1.55, 1.82, 2.05, 1.95, 2.21], 2.0)
    assert line.startswith("PASS DEL: 1.95x") and "within noise" in line, line


def test_well_under_the_budget_passes_without_a_word_of_noise() -> None:
    line = verdict.judged("VERSION", [1.10, 1.05, 1.12, 1.08, 1.11], 1.3)
    assert line == "PASS VERSION: 1.10x (budget <= 1.3x)  [median of 5 rounds, 95% CI 1.05-1.12x]"


def test_a_single_figure_is_its_own_interval() -> None:
    assert verdict.judged("raw HNS calls, V2 ADD", [8], 8, unit="") == "PASS raw HNS calls, V2 ADD: 8.00 (budget <= 8)"
    assert verdict.judged("zip", [5.6], 5.5, unit=" MiB") == "FAIL zip: 5.60 MiB (budget <= 5.5 MiB)"


def test_on_synthetic_rounds_a_regression_fails_and_noise_does_not() -> None:
    """Rounds drawn around a true ratio with the spread the issue's runs showed (about 10%): 30%
    over the budget fails nearly every time with 9 rounds; exactly at the budget, almost never."""
    rng = random.Random(52)

    def fails(true: float) -> int:
        return sum(
            verdict.judged("x", [true * rng.uniform(0.85, 1.15) for _ in range(9)], 2.5).startswith("FAIL")
            for _ in range(200)
        )

    assert fails(2.5 * 1.3) >= 190
    assert fails(2.5) <= 10
    assert fails(2.5 * 0.8) == 0
