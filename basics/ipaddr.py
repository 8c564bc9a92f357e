"""IP addresses, networks and interfaces for the pod path, without the ``ipaddress`` module.

Why not ``ipaddress``: it imports ``functools``, which imports ``collections`` (and ``operator``,
``keyword``, ``reprlib``, ``types``): about 3.5 ms of every frozen pod command, more than any
module of ours, for the handful of operations the plugins need. This module parses and prints
exactly as ``ipaddress`` does (``tests/unit/test_ipaddr.py`` compares the two on generated
input), with two deliberate differences: an IPv6 zone (``fe80::1%eth0``) is refused, as Go's
parsers refuse it, and only text is parsed (no ints or packed bytes).

``ip_address``, ``ip_network`` and ``ip_interface`` raise ``ValueError`` with ``ipaddress``'s
wording for the common cases.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Iterator

_MAX = {4: 32, 6: 128}
_HEX = frozenset("0123456789abcdefABCDEF")


def _v4_int(text: str) -> int:
    octets = text.split(".")
    if len(octets) != 4:
        raise ValueError(f"Expected 4 octets in {text!r}")
    value = 0
    for octet in octets:
        if not octet or not (octet.isascii() and octet.isdigit()) or len(octet) > 3:
            raise ValueError(f"Invalid octet {octet!r} in {text!r}")
        if len(octet) > 1 and octet[0] == "0":
            raise ValueError(f"Leading zeros are not permitted in {octet!r} in {text!r}")
        n = int(octet)
        if n > 255:
            raise ValueError(f"Octet {n} (> 255) not permitted in {text!r}")
        value = value << 8 | n
    return value


def _v6_int(text: str) -> int:
    parts = text.split(":")
    if len(parts) < 3:
        raise ValueError(f"At least 3 parts expected in {text!r}")
    if "." in parts[-1]:  # an IPv4 tail stands for the last two hextets
        v4 = _v4_int(parts.pop())
        parts += [f"{v4 >> 16:x}", f"{v4 & 0xFFFF:x}"]
    if len(parts) > 9:
        raise ValueError(f"At most 8 colons permitted in {text!r}")
    skips = [i for i in range(1, len(parts) - 1) if not parts[i]]
    if len(skips) > 1:
        raise ValueError(f"At most one '::' permitted in {text!r}")
    if skips:
        head, rest = parts[: skips[0]], parts[skips[0] + 1 :]
        if not head[0]:  # a leading ':' is only the first half of '::'
            if len(head) > 1:
                raise ValueError(f"Leading ':' only permitted as part of '::' in {text!r}")
            head = []
        if not rest[-1]:
            if len(rest) > 1:
                raise ValueError(f"Trailing ':' only permitted as part of '::' in {text!r}")
            rest = []
        missing = 8 - len(head) - len(rest)
        if missing < 1:
            raise ValueError(f"Expected at most 7 other parts with '::' in {text!r}")
        parts = head + ["0"] * missing + rest
    elif len(parts) != 8 or not parts[0] or not parts[-1]:
        raise ValueError(f"Exactly 8 parts expected without '::' in {text!r}")
    value = 0
    for group in parts:
        if not group or len(group) > 4 or not _HEX.issuperset(group):
            raise ValueError(f"Invalid hextet {group!r} in {text!r}")
        value = value << 16 | int(group, 16)
    return value


def _v6_str(value: int) -> str:
    groups = [(value >> shift) & 0xFFFF for shift in range(112, -16, -16)]
    best_start, best_len, start = -1, 0, -1
    for i, g in enumerate(groups + [1]):
        if g == 0 and start < 0:
            start = i
        elif g != 0 and start >= 0:
            if i - start > best_len:
                best_start, best_len = start, i - start
            start = -1
    text = [f"{g:x}" for g in groups]
    if best_len > 1:
        end = best_start + best_len
        text[best_start:end] = [""]
        if best_start == 0:
            text.insert(0, "")
        if end == 8:
            text.append("")
    return ":".join(text)


class _Value:
    """What addresses, networks and interfaces share: equal when of one class with one
    ``_identity``, hashed by it, shown as ``ipaddress`` shows them (``IPv4Network('10.0.0.0/8')``)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"IPv{self.version}{type(self).__name__}({str(self)!r})"

    def __hash__(self) -> int:
        return hash(self._identity())

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and self._identity() == other._identity()


class Address(_Value):
    """An IPv4 or IPv6 address: ordered within its family, hashable, ``+``/``-`` an int."""

    __slots__ = ("_ip", "version")

    def __init__(self, value: int, version: int) -> None:
        if not 0 <= value < 1 << _MAX[version]:
            raise ValueError(f"{value} does not fit an IPv{version} address")
        self._ip, self.version = value, version

    @property
    def max_prefixlen(self) -> int:
        return _MAX[self.version]

    @property
    def packed(self) -> bytes:
        return self._ip.to_bytes(self.max_prefixlen // 8, "big")

    @property
    def ipv4_mapped(self) -> Address | None:
        """The IPv4 address inside ``::ffff:a.b.c.d``, else None."""
        if self.version == 6 and self._ip >> 32 == 0xFFFF:
            return Address(self._ip & 0xFFFFFFFF, 4)
        return None

    def __int__(self) -> int:
        return self._ip

    def __str__(self) -> str:
        if self.version == 4:
            return ".".join(str(self._ip >> shift & 0xFF) for shift in (24, 16, 8, 0))
        return _v6_str(self._ip)

    def _identity(self) -> tuple[int, int]:
        return self._ip, self.version

    def _key(self, other: Address) -> int:
        if type(other) is not Address or other.version != self.version:
            raise TypeError(f"{self!r} and {other!r} are not of the same version")
        return other._ip

    def __lt__(self, other: Address) -> bool:
        return self._ip < self._key(other)

    def __le__(self, other: Address) -> bool:
        return self._ip <= self._key(other)

    def __gt__(self, other: Address) -> bool:
        return self._ip > self._key(other)

    def __ge__(self, other: Address) -> bool:
        return self._ip >= self._key(other)

    def __add__(self, n: int) -> Address:
        return Address(self._ip + n, self.version)

    def __sub__(self, n: int) -> Address:
        return Address(self._ip - n, self.version)


class Network(_Value):
    """A prefix: ``network_address``/``prefixlen``, with membership of addresses and networks."""

    __slots__ = ("network_address", "prefixlen", "version", "max_prefixlen", "num_addresses")

    def __init__(self, network_address: Address, prefixlen: int) -> None:
        self.network_address, self.prefixlen = network_address, prefixlen
        self.version, self.max_prefixlen = network_address.version, network_address.max_prefixlen
        self.num_addresses = 1 << (self.max_prefixlen - prefixlen)

    @property
    def broadcast_address(self) -> Address:
        return self.network_address + (self.num_addresses - 1)

    def __contains__(self, ip: object) -> bool:
        if type(ip) is not Address or ip.version != self.version:
            return False
        return int(self.network_address) <= int(ip) < int(self.network_address) + self.num_addresses

    def subnet_of(self, other: Network) -> bool:
        return self.version == other.version and self.prefixlen >= other.prefixlen and self.network_address in other

    def hosts(self) -> Iterator[Address]:
        """The usable addresses, as ``ipaddress`` counts them (no network/broadcast address in
        IPv4 below /31, no Subnet-Router anycast in IPv6 below /127)."""
        first, last = int(self.network_address), int(self.broadcast_address)
        if self.prefixlen < self.max_prefixlen - 1:
            first += 1
            last -= self.version == 4
        for value in range(first, last + 1):
            yield Address(value, self.version)

    def __str__(self) -> str:
        return f"{self.network_address}/{self.prefixlen}"

    def _identity(self) -> tuple[Address, int]:
        return self.network_address, self.prefixlen


class Interface(_Value):
    """An address with its network (``10.244.4.5/24``)."""

    __slots__ = ("ip", "network", "version")

    def __init__(self, ip: Address, network: Network) -> None:
        self.ip, self.network, self.version = ip, network, ip.version

    def __str__(self) -> str:
        return f"{self.ip}/{self.network.prefixlen}"

    def _identity(self) -> tuple[Address, Network]:
        return self.ip, self.network


def ip_address(text: str) -> Address:
    """An IPv4 or IPv6 address from its text; ValueError otherwise."""
    if isinstance(text, str) and "%" not in text:
        try:
            if ":" in text:
                return Address(_v6_int(text), 6)
            return Address(_v4_int(text), 4)
        except ValueError:
            pass
    raise ValueError(f"{text!r} does not appear to be an IPv4 or IPv6 address")


def _prefixlen(text: str, version: int) -> int:
    """A prefix length, or for IPv4 a netmask or host mask (``255.255.255.0``, ``0.0.0.255``)."""
    if text.isascii() and text.isdigit():
        n = int(text)
        if n <= _MAX[version]:
            return n
    elif version == 4:
        try:
            mask = _v4_int(text)
        except ValueError:
            mask = None
        for candidate in () if mask is None else (mask, mask ^ 0xFFFFFFFF):  # netmask, host mask
            ones = bin(candidate).count("1")
            if candidate == (0xFFFFFFFF << (32 - ones)) & 0xFFFFFFFF:
                return ones
    raise ValueError(f"{text!r} is not a valid netmask")


def ip_interface(text: str) -> Interface:
    """``address[/prefix]`` (a missing prefix is the full length); ValueError otherwise."""
    if not isinstance(text, str):
        raise ValueError(f"{text!r} does not appear to be an IPv4 or IPv6 interface")
    addr, slash, prefix = text.partition("/")
    ip = ip_address(addr)
    if slash and "/" in prefix:
        raise ValueError(f"Only one '/' permitted in {text!r}")
    plen = _prefixlen(prefix, ip.version) if slash else ip.max_prefixlen
    host = ip.max_prefixlen - plen
    return Interface(ip, Network(Address(int(ip) >> host << host, ip.version), plen))


def ip_network(text: str, strict: bool = True) -> Network:
    """``address[/prefix]`` as a network; with ``strict`` host bits are an error, else dropped."""
    if not isinstance(text, str):
        raise ValueError(f"{text!r} does not appear to be an IPv4 or IPv6 network")
    iface = ip_interface(text)
    if strict and iface.ip != iface.network.network_address:
        raise ValueError(f"{text} has host bits set")
    return iface.network
