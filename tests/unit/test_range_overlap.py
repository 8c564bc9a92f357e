"""host-local's overlap check sorts instead of comparing every pair: the
same answer as the pairwise rule on any ranges, and linearithmic at the cap."""

from __future__ import annotations

import ipaddress
import time

from hypothesis import given
from hypothesis import strategies as st

from plugins.ipam_host_local.config import MAX_RANGES
from plugins.ipam_host_local.ranges import Range, first_overlap


def _range(base: int, size: int, offset: int) -> Range:
    """The ``base``-th /``size`` of 10.0.0.0, starting ``offset`` addresses in: sizes mix, so
    ranges nest, touch and overlap partly."""
    net = ipaddress.ip_network((0x0A000000 + (base << (32 - size)), size))
    return Range.canonical(str(net), str(net.network_address + 1 + offset) if offset else "", "", "")


spans = st.lists(st.tuples(st.integers(0, 15), st.sampled_from([26, 27, 28]), st.integers(0, 3)), max_size=12)


@given(spans)
def test_the_sweep_finds_an_overlap_exactly_when_two_ranges_overlap(raw):
    ranges = [_range(b, s, o) for b, s, o in raw]
    pairwise = any(r1.overlaps(r2) for i, r1 in enumerate(ranges) for r2 in ranges[i + 1 :])
    found = first_overlap((r, i) for i, r in enumerate(ranges))
    assert (found is not None) == pairwise
    if found is not None:
        assert ranges[found[0]].overlaps(ranges[found[1]]) and found[0] != found[1]


def test_the_families_never_overlap_each_other():
    v4 = Range.canonical("10.0.0.0/24", "", "", "")
    v6 = Range.canonical("::/120", "", "", "")
    assert first_overlap([(v4, 0), (v6, 1)]) is None


def test_thousands_of_ranges_are_checked_in_milliseconds():
    ranges = [(Range.canonical(f"10.{i // 256}.{i % 256}.0/24", "", "", ""), i) for i in range(20 * MAX_RANGES)]
    started = time.perf_counter()
    assert first_overlap(ranges) is None
    assert time.perf_counter() - started < 1.0  # the pairwise check took seconds for 2,000
