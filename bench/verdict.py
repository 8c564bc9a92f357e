"""One budget line for `make bench` and the Windows lane's report: PASS or FAIL, the median of the
rounds' figures, its 95% interval and the budget.

The figures of a line come from interleaved rounds (each round measures both sides of a ratio back
to back, so a burst of the machine's other work weighs on both), and the line judges their median
by its interval, never the median alone: FAIL only when the whole interval lies over the budget
(its lower bound is over it: a regression the rounds agree on), PASS otherwise, saying "within
noise of the budget" when the budget lies inside the interval (more rounds would tell). The one
rule "the median is over and the interval excludes the budget" is the same test, since the
interval holds the median. A single figure (a count, a size) is its own interval.
"""

from __future__ import annotations

import math
import statistics


def median_interval(values: list[float]) -> tuple[float, float]:
    """A distribution-free interval of at least 95% confidence for the median of ``values``
    (order statistics, binomial tails): with 15 rounds the 4th to the 12th smallest, with 6 to 8
    the whole range (below 6 rounds the whole range too, though less sure than that)."""
    n, ordered = len(values), sorted(values)
    k = 0  # the largest k with P(Binomial(n, 1/2) < k) <= 2.5%
    while k < n // 2 and sum(math.comb(n, i) for i in range(k + 1)) / 2**n <= 0.025:
        k += 1
    return ordered[max(k - 1, 0)], ordered[n - max(k, 1)]


def judged(label: str, values: list[float], limit: float, unit: str = "x") -> str:
    """The line for the figures ``values`` (one per round) against the budget ``limit``."""
    low, high = median_interval(values)
    status = "FAIL" if low > limit else "PASS"
    line = f"{status} {label}: {statistics.median(values):.2f}{unit} (budget <= {limit}{unit})"
    if len(values) == 1:
        return line
    noise = ", within noise of the budget" if low <= limit < high else ""
    return f"{line}  [median of {len(values)} rounds, 95% CI {low:.2f}-{high:.2f}{unit}{noise}]"
