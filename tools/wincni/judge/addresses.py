"""Address-space questions of the judge and the doctor: does a union of CIDRs cover an address or a
whole network. The standard library's ``ipaddress`` answers them (the operator tools are on no
pod's path), so the package carries no second address library.
"""

from __future__ import annotations

import ipaddress

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Iterable, Union

    Address = Union[ipaddress.IPv4Address, ipaddress.IPv6Address]
    Network = Union[ipaddress.IPv4Network, ipaddress.IPv6Network]


def network(text: Any) -> Network | None:
    """``text`` as a network, host bits allowed as HNS takes them (``10.0.0.5/24``), or None."""
    if not isinstance(text, str):
        return None
    try:
        return ipaddress.ip_network(text, strict=False)
    except ValueError:
        return None


def address(text: Any) -> Address | None:
    """``text`` as an address, or None."""
    if not isinstance(text, str):
        return None
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


class AddressSet:
    """A union of networks; ``x in s`` holds for an address or a network (or their text) all of
    whose addresses lie in it. Kept collapsed per IP version: CIDR blocks nest or are disjoint, so a network the union
    covers lies inside one of its collapsed blocks."""

    __slots__ = ("_blocks",)

    def __init__(self, networks: Iterable[Network | str]) -> None:
        by_version: dict[int, list] = {4: [], 6: []}
        for n in networks:
            found = network(n) if isinstance(n, str) else n
            if found is not None:
                by_version[found.version].append(found)
        self._blocks = {v: list(ipaddress.collapse_addresses(ns)) for v, ns in by_version.items()}

    def __contains__(self, item: Address | Network | str) -> bool:
        """Text is read as an address, else as a network; text that is neither is in no set."""
        found = (address(item) or network(item)) if isinstance(item, str) else item
        if found is None:
            return False
        if isinstance(found, (ipaddress.IPv4Address, ipaddress.IPv6Address)):
            return any(found in block for block in self._blocks[found.version])
        return any(found.subnet_of(block) for block in self._blocks[found.version])
