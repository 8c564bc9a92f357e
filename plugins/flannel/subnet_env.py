"""flanneld's ``subnet.env``: the node lease, read exactly like the reference plugin.

Exact-case keys, the value after the first ``=`` taken verbatim (no trimming, no quotes), CRLF
tolerated, a repeated key overrides (network lists accumulate without duplicates). Anything
malformed raises ``LeaseError`` and never anything else, so a bad file can't crash the plugin.
"""

from __future__ import annotations

from basics import ipaddr
from plugins.cni.record import FrozenRecord

Network = ipaddr.Network

_MAX_MTU = 2**32 - 1  # strconv.ParseUint(v, 10, 32)


class LeaseProblem:
    """Why the lease is unusable: each maps to a different CNI code per command."""

    MISSING = "missing"
    UNREADABLE = "unreadable"
    MALFORMED = "malformed"


class LeaseError(Exception):
    def __init__(self, problem: str, path: str, reason: str) -> None:  # problem: a LeaseProblem value
        super().__init__(reason)
        self.problem = problem
        self.path = path
        self.reason = reason


class Lease(FrozenRecord):
    """What flanneld granted this node; the MTU is required by the file format though Windows ignores it."""

    __slots__ = ("networks", "subnet", "ipv6_networks", "ipv6_subnet", "mtu", "ipmasq")

    def __init__(
        self,
        networks: tuple[Network, ...],
        subnet: Network | None,
        ipv6_networks: tuple[Network, ...],
        ipv6_subnet: Network | None,
        mtu: int,
        ipmasq: bool,
    ) -> None:
        self.networks = networks  # FLANNEL_NETWORK (cluster CIDRs)
        self.subnet = subnet  # FLANNEL_SUBNET (this node's pod subnet)
        self.ipv6_networks = ipv6_networks
        self.ipv6_subnet = ipv6_subnet
        self.mtu = mtu
        self.ipmasq = ipmasq

    @property
    def first_ipv4_network(self) -> ipaddr.Network | None:
        return next((n for n in self.networks if n.version == 4), None)


#: flanneld's lease is a few hundred bytes; a larger file is not one (and is never read whole).
MAX_LEASE = 64 << 10


def load(path: str) -> Lease:
    """The lease at ``path``, opened as a file the config names (``basics.inputfile``: never
    waited on, a regular file, no user's link followed) and read no further than the cap."""
    from basics.inputfile import ANY_SIZE, open_file

    try:
        with open(open_file(path, ANY_SIZE)[0], "rb") as f:
            raw = f.read(MAX_LEASE + 1)
    except FileNotFoundError as exc:
        raise LeaseError(LeaseProblem.MISSING, path, f"{path} does not exist") from exc
    except OSError as exc:
        raise LeaseError(LeaseProblem.UNREADABLE, path, f"cannot read {path}: {exc.strerror or exc}") from exc
    return decode(raw, path)


def decode(raw: bytes, path: str) -> Lease:
    """The lease in the bytes ``raw`` of ``path``, as ``load`` reads it (the operator tools read
    the file themselves, through ``basics.inputfile`` too)."""
    if len(raw) > MAX_LEASE:
        raise LeaseError(
            LeaseProblem.MALFORMED, path, f"{path} is over {MAX_LEASE >> 10} KiB: not flanneld's subnet.env"
        )
    # A file saved by Notepad starts with a BOM that would hide the first key (dropped here, not
    # by the "utf-8-sig" codec: that is one more module to import).
    return parse(raw.removeprefix(b"\xef\xbb\xbf").decode(errors="replace"), path)


def parse(text: str, path: str) -> Lease:
    found: dict[str, object] = {}
    nets: dict[str, list[Network]] = {"FLANNEL_NETWORK": [], "FLANNEL_IPV6_NETWORK": []}
    for number, line in enumerate(text.split("\n"), start=1):
        key, sep, value = line.removesuffix("\r").partition("=")
        if not sep:
            continue
        try:
            _apply(key, value, found, nets)
        except ValueError as exc:
            raise LeaseError(LeaseProblem.MALFORMED, path, f"{path} line {number}: {key}: {exc}") from None
    missing = _missing(found)
    if missing:
        raise LeaseError(LeaseProblem.MALFORMED, path, f"{path} is missing {', '.join(missing)}")
    return Lease(
        networks=tuple(nets["FLANNEL_NETWORK"]),
        subnet=found.get("FLANNEL_SUBNET"),  # type: ignore[arg-type]
        ipv6_networks=tuple(nets["FLANNEL_IPV6_NETWORK"]),
        ipv6_subnet=found.get("FLANNEL_IPV6_SUBNET"),  # type: ignore[arg-type]
        mtu=found["FLANNEL_MTU"],  # type: ignore[arg-type]
        ipmasq=found["FLANNEL_IPMASQ"],  # type: ignore[arg-type]
    )


def _apply(key: str, value: str, found: dict[str, object], nets: dict[str, list[Network]]) -> None:
    if key in nets:
        for cidr in value.split(","):
            net = _cidr(cidr)
            if net not in nets[key]:
                nets[key].append(net)
        found[key] = True
    elif key in ("FLANNEL_SUBNET", "FLANNEL_IPV6_SUBNET"):
        found[key] = _cidr(value)
    elif key == "FLANNEL_MTU":
        found[key] = _mtu(value)
    elif key == "FLANNEL_IPMASQ":
        found[key] = value == "true"


def _missing(found: dict[str, object]) -> list[str]:
    """The reference's list: a v4 or v6 network, a v4 or v6 subnet, the MTU, the masquerade flag."""
    out: list[str] = []
    for pair in (("FLANNEL_NETWORK", "FLANNEL_IPV6_NETWORK"), ("FLANNEL_SUBNET", "FLANNEL_IPV6_SUBNET")):
        if not any(k in found for k in pair):
            out.extend(pair)
    return out + [k for k in ("FLANNEL_MTU", "FLANNEL_IPMASQ") if k not in found]


def _cidr(value: str) -> Network:
    """Go's net.ParseCIDR, returning the network: ``10.1.17.1/24`` -> ``10.1.17.0/24``."""
    addr, sep, prefix = value.partition("/")
    try:
        # Python would also take a netmask, a bare address or a zone; Go takes none of them.
        if not sep or not (prefix.isascii() and prefix.isdigit()) or "%" in addr:
            raise ValueError(value)
        return ipaddr.ip_interface(value).network
    except ValueError:
        raise ValueError(f"invalid CIDR address: {value}") from None


def _mtu(value: str) -> int:
    if value.isascii() and value.isdigit() and int(value) <= _MAX_MTU:
        return int(value)
    raise ValueError(f'"{value}" is not an MTU (a decimal number up to {_MAX_MTU})')
