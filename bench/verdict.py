"""One budget line for `make bench` and the Windows lane's report: PASS/FAIL, the figure, the limit."""

from __future__ import annotations


def verdict(label: str, value: float, limit: float, unit: str = "x") -> str:
    return f"{'PASS' if value <= limit else 'FAIL'} {label}: {value:.2f}{unit} (budget <= {limit}{unit})"
