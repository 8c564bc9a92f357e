"""Address and port sets as HNS ACLs can hold them: CIDR subtraction (ipBlock ``except``, which
no Windows implementation expresses: Calico drops the rule, Azure NPM refuses it), collapsing,
port ranges merged, and lists cut into chunks. Pure."""

from __future__ import annotations

import ipaddress

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Iterable, Sequence

    Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def subtract(cidr: Network, excepts: Iterable[Network]) -> tuple[Network, ...]:
    """``cidr`` less every network of ``excepts``, as the fewest CIDRs, sorted."""
    left = [cidr]
    for hole in excepts:
        out = []
        for net in left:
            if net.version != hole.version or not net.overlaps(hole):
                out.append(net)
            elif not hole.supernet_of(net):  # the hole lies inside net: keep what is around it
                out.extend(net.address_exclude(hole))
        left = out
    return collapse(left)


def order(net: Network) -> tuple[int, int, int]:
    """A sort key for networks of both families."""
    return net.version, int(net.network_address), net.prefixlen


def collapse(networks: Iterable[Network]) -> tuple[Network, ...]:
    """The same addresses as the fewest CIDRs, IPv4 first, in address order."""
    by_family: dict[int, list] = {4: [], 6: []}
    for net in networks:
        by_family[net.version].append(net)
    out = [n for family in (4, 6) for n in ipaddress.collapse_addresses(by_family[family])]
    return tuple(sorted(out, key=order))


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
