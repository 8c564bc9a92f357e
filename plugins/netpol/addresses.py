"""Address and port sets as HNS ACLs can hold them: CIDR subtraction (ipBlock ``except``, which
no Windows implementation expresses: Calico drops the rule, Azure NPM refuses it), collapsing,
port ranges merged, and lists cut into chunks. Pure."""

from __future__ import annotations

import ipaddress

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Iterable, Sequence

    Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def spans(networks: Iterable[Network]) -> list[tuple[int, int, int]]:
    """Networks as ``(family, first, last)`` integer spans, the form sets are merged in (CIDR
    objects cost too much to handle by the thousand)."""
    return [(n.version, int(n.network_address), int(n.broadcast_address)) for n in networks]


def merge(items: Iterable[tuple[int, int, int]]) -> tuple[tuple[int, int, int], ...]:
    """Spans merged where they overlap or touch, IPv4 first, in address order."""
    out: list[tuple[int, int, int]] = []
    for family, first, last in sorted(items):
        if out and out[-1][0] == family and first <= out[-1][2] + 1:
            if last > out[-1][2]:
                out[-1] = (family, out[-1][1], last)
        else:
            out.append((family, first, last))
    return tuple(out)


def cut(items: Iterable[tuple[int, int, int]], holes: Iterable[tuple[int, int, int]]) -> tuple:
    """Merged spans less the holes."""
    left = list(merge(items))
    for family, low, high in merge(holes):
        out = []
        for f, first, last in left:
            if f != family or last < low or first > high:
                out.append((f, first, last))
                continue
            if first < low:
                out.append((f, first, low - 1))
            if last > high:
                out.append((f, high + 1, last))
        left = out
    return tuple(left)


_ADDRESS = {4: ipaddress.IPv4Address, 6: ipaddress.IPv6Address}


def networks(items: Iterable[tuple[int, int, int]]) -> tuple[Network, ...]:
    """Merged spans as the fewest CIDRs, IPv4 first, in address order."""
    out = []
    for family, first, last in merge(items):
        out.extend(ipaddress.summarize_address_range(_ADDRESS[family](first), _ADDRESS[family](last)))
    return tuple(out)


def collapse(items: Iterable[Network]) -> tuple[Network, ...]:
    """The same addresses as the fewest CIDRs, IPv4 first, in address order."""
    return networks(spans(items))


def contains(networks: Sequence[Network], ip) -> bool:
    return any(ip in net for net in networks)


def merge_ranges(ranges: Iterable[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    """Port ranges ``(first, last)`` merged where they overlap or touch, in order."""
    out: list[tuple[int, int]] = []
    for first, last in sorted(ranges):
        if out and first <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], last))
        else:
            out.append((first, last))
    return tuple(out)


def chunks(items: Sequence, size: int) -> list[tuple]:
    """``items`` cut into consecutive tuples of at most ``size`` (one empty tuple for none)."""
    if not items:
        return [()]
    return [tuple(items[i : i + size]) for i in range(0, len(items), size)]


def text(net: Network) -> str:
    """A network as HNS lists it: a lone address without its /32 or /128."""
    return str(net.network_address) if net.num_addresses == 1 else str(net)
