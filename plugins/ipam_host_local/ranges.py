"""Address ranges and range sets, with the reference's defaults and error wording.

Everything here is pure (no I/O) so the allocator and the config loader share one model.
Messages are the Go plugin's, because operators grep logs for them.
"""

from __future__ import annotations

from basics import ipaddr

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Iterable

from plugins.cni.record import FrozenRecord

IPAddress = ipaddr.Address
IPNetwork = ipaddr.Network


class RangeError(Exception):
    """A semantically invalid range; the loader adds which set and turns it into CNI code 7."""


def parse_ip(text: str) -> IPAddress:
    """An IP like Go's net.ParseIP: no zone suffix, IPv4-mapped IPv6 counts as IPv4."""
    if not isinstance(text, str) or "%" in text:
        raise ValueError(f"invalid IP address {text}")
    ip = ipaddr.ip_address(text.strip())
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    return ip


def parse_cidr(text: str) -> ipaddr.Interface:
    """``ip/prefix`` like Go's net.ParseCIDR: the prefix is required, host bits are kept."""
    if not isinstance(text, str) or "/" not in text or "%" in text:
        raise ValueError(f"invalid CIDR address: {text}")
    return ipaddr.ip_interface(text.strip())


def parse_ip_or_cidr(text: str) -> IPAddress:
    """``ip`` or ``ip/prefix`` (prefix dropped), the form of CNI_ARGS IP and args/runtime ``ips``."""
    if isinstance(text, str) and "/" in text:
        return parse_ip(str(parse_cidr(text).ip))
    return parse_ip(text)


class Range(FrozenRecord):
    """One contiguous pool inside a subnet; ``gateway`` is never handed out."""

    __slots__ = ("subnet", "range_start", "range_end", "gateway")

    def __init__(
        self, subnet: IPNetwork, range_start: IPAddress, range_end: IPAddress, gateway: IPAddress | None = None
    ) -> None:
        self.subnet = subnet
        self.range_start = range_start
        self.range_end = range_end
        self.gateway = gateway

    @classmethod
    def canonical(
        cls, subnet: str, range_start: str | None = None, range_end: str | None = None, gateway: str | None = None
    ) -> "Range":
        """Fill the reference's defaults and reject what it rejects (Range.Canonicalize)."""
        iface = parse_cidr(subnet)
        net = iface.network
        if net.prefixlen > net.max_prefixlen - 2:
            raise RangeError(f"Network {iface.ip}/{net.prefixlen} too small to allocate from")
        if iface.ip != net.network_address:
            raise RangeError(
                f"Network has host bits set. For a subnet mask of length {net.prefixlen} "
                f"the network address is {net.network_address}"
            )
        first = net.network_address + 1
        last = net.broadcast_address - 1 if net.version == 4 else net.broadcast_address
        gw = _family(parse_ip(gateway), net) if gateway else first
        start = parse_ip(range_start) if range_start else None
        end = parse_ip(range_end) if range_end else None
        # Like Go, each bound is checked while the other may still be unset, so start > end
        # is reported against RangeStart.
        if start is not None and not _inside(start, net, None, end):
            raise RangeError(f"RangeStart {start} not in network {net}")
        start = start if start is not None else first
        if end is not None and not _inside(end, net, start, None):
            raise RangeError(f"RangeEnd {end} not in network {net}")
        return cls(net, start, end if end is not None else last, gw)

    @property
    def version(self) -> int:
        return self.subnet.version

    def contains(self, ip: IPAddress) -> bool:
        return _inside(ip, self.subnet, self.range_start, self.range_end)

    def overlaps(self, other: "Range") -> bool:
        if self.version != other.version:
            return False
        return (
            self.contains(other.range_start)
            or self.contains(other.range_end)
            or other.contains(self.range_start)
            or other.contains(self.range_end)
        )

    def size(self) -> int:
        """Addresses this range can hand out (the gateway excluded)."""
        total = int(self.range_end) - int(self.range_start) + 1
        return total - (1 if self.gateway is not None and self.contains(self.gateway) else 0)

    def __str__(self) -> str:
        return f"{self.range_start}-{self.range_end}"


class RangeSet(FrozenRecord):
    """Ranges of one family that together yield one address per container."""

    __slots__ = ("ranges",)

    def __init__(self, ranges: tuple[Range, ...]) -> None:
        self.ranges = ranges

    @classmethod
    def canonical(cls, ranges: list[Range]) -> "RangeSet":
        if not ranges:
            raise RangeError("empty range set")
        if any(r.version != ranges[0].version for r in ranges):
            raise RangeError("mixed address families")
        pair = first_overlap((r, r) for r in ranges)
        if pair is not None:
            first, second = sorted(pair, key=ranges.index)
            raise RangeError(f"subnets {first} and {second} overlap")
        return cls(tuple(ranges))

    @property
    def version(self) -> int:
        return self.ranges[0].version

    def range_for(self, ip: IPAddress) -> Range | None:
        return next((r for r in self.ranges if r.contains(ip)), None)

    def contains(self, ip: IPAddress) -> bool:
        return self.range_for(ip) is not None

    def overlaps(self, other: "RangeSet") -> bool:
        return any(r.overlaps(o) for r in self.ranges for o in other.ranges)

    def size(self) -> int:
        return sum(r.size() for r in self.ranges)

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.ranges)


def first_overlap(tagged: Iterable[tuple[Range, Any]]) -> tuple[Any, Any] | None:
    """The tags of two overlapping ranges among (range, tag) pairs, or None: one sort and a sweep
    (O(n log n); comparing every pair made 2,000 ranges take seconds)."""
    reach: tuple[int, int, Any] | None = None  # the family, end and tag of the furthest range so far
    spans = sorted(((r.version, int(r.range_start), int(r.range_end), t) for r, t in tagged), key=lambda x: x[:2])
    for version, start, end, tag in spans:
        if reach is not None and reach[0] == version and start <= reach[1]:
            return reach[2], tag
        if reach is None or reach[0] != version or end > reach[1]:
            reach = (version, end, tag)
    return None


def _family(ip: IPAddress, net: IPNetwork) -> IPAddress:
    if ip.version != net.version:
        raise RangeError(f"{ip} is not an IPv{net.version} address like subnet {net}")
    return ip


def _inside(ip: IPAddress, net: IPNetwork, start: IPAddress | None, end: IPAddress | None) -> bool:
    if ip.version != net.version or ip not in net:
        return False
    return (start is None or ip >= start) and (end is None or ip <= end)
