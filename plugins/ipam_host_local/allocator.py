"""Address allocation: pure logic over a store interface (the disk store, or a fake in tests).

The caller holds the store's lock for the whole ADD, so every range set of a dual-stack ADD is
decided under one lock (the reference locks per set).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Iterator, Protocol, Sequence
else:
    Protocol = object  # Store is a Protocol for type checkers, a plain class at run time

from plugins.cni.errors import INVALID_CONFIG, TRY_AGAIN_LATER, CniError
from plugins.cni.record import FrozenRecord
from plugins.cni.result import IPConfig

from .ranges import IPAddress, Range, RangeSet


class Owner(FrozenRecord):
    """Who holds an address: (container ID, ifname); ifname "" is a legacy id-only reservation."""

    __slots__ = ("container_id", "ifname")

    def __init__(self, container_id: str, ifname: str = "") -> None:
        self.container_id = container_id
        self.ifname = ifname

    @property
    def legacy(self) -> bool:
        return not self.ifname


class Store(Protocol):
    def reserve(self, owner: Owner, ip: IPAddress, range_id: int) -> bool:
        """Claim ``ip`` atomically; False when someone holds it."""

    def release(self, ip: IPAddress) -> None:
        """Drop one reservation (used to roll back a partly failed ADD)."""

    def last_reserved(self, range_id: int) -> IPAddress | None:
        """The address last handed out for this range set, for round-robin."""

    def owned_by(self, owner: Owner) -> list[IPAddress]:
        """Addresses reserved to exactly this (container ID, ifname)."""

    def renew(self, ip: IPAddress, owner: Owner) -> None:
        """Mark ``owner``'s reservation of ``ip`` as made now: a retried ADD reuses it
        (``plugins.cni.ownership``)."""


class Allocation(FrozenRecord):
    __slots__ = ("ip", "range")

    def __init__(self, ip: IPAddress, range: Range) -> None:
        self.ip = ip
        self.range = range

    def ip_config(self) -> IPConfig:
        gw = self.range.gateway
        return IPConfig(address=f"{self.ip}/{self.range.subnet.prefixlen}", gateway=str(gw) if gw else "")


def candidates(rset: RangeSet, last: IPAddress | None) -> Iterator[tuple[Range, IPAddress]]:
    """Round-robin order: after ``last`` (tried last itself), else from the first RangeStart.

    Gateways are skipped; the walk wraps across ranges and stops where it began.
    """
    ranges = rset.ranges
    idx, cur = 0, None
    if last is not None:
        for i, r in enumerate(ranges):
            if r.contains(last):
                idx, cur = i, last
                break
    start = None
    while True:
        r = ranges[idx]
        if cur is None:
            cur = r.range_start
        elif cur == r.range_end:
            idx = (idx + 1) % len(ranges)
            r = ranges[idx]
            cur = r.range_start
        else:
            cur = cur + 1
        if start is None:
            start = cur
        elif cur == start:
            return
        if cur != r.gateway:
            yield r, cur


def allocate(
    rset: RangeSet,
    store: Store,
    range_id: int,
    owner: Owner,
    requested: IPAddress | None = None,
    held: Sequence[IPAddress] = (),
) -> Allocation:
    """One address from ``rset`` for ``owner`` (Allocator.Get).

    ``held`` are the addresses already reserved to exactly this (container ID, ifname): an ADD
    retried after the first one was killed or timed out past its reservation. That address is
    this attachment's; it is handed back (the Go plugin refuses with "duplicate allocation",
    which leaves it reserved for nothing and the pod unable to start), renewed, so that reclaim
    sees an ADD in flight again rather than a reservation its pod abandoned long ago.
    """
    mine = next((ip for ip in held if rset.contains(ip) and requested in (None, ip)), None)
    if mine is not None:
        store.renew(mine, owner)
        return Allocation(mine, rset.range_for(mine))
    if requested is not None:
        r = rset.range_for(requested)
        if r is None:
            raise CniError(
                INVALID_CONFIG,
                f"{requested} not in range set {rset}",
                "request an address inside the configured ranges",
            )
        if requested == r.gateway:
            raise CniError(
                INVALID_CONFIG,
                f"requested ip {requested} is subnet's gateway",
                "the gateway is never assigned to a container",
            )
        if not store.reserve(owner, requested, range_id):
            raise CniError(
                TRY_AGAIN_LATER,
                f"requested IP address {requested} is not available in range set {rset}",
                "another container holds it; retry after it is released",
            )
        return Allocation(requested, r)
    for r, ip in candidates(rset, store.last_reserved(range_id)):
        if store.reserve(owner, ip, range_id):
            return Allocation(ip, r)
    raise CniError(
        TRY_AGAIN_LATER,
        f"no IP addresses available in range set: {rset}",
        "the range is exhausted; addresses free up as pods are deleted (or widen the range)",
    )


def allocate_all(
    range_sets: Sequence[RangeSet], store: Store, owner: Owner, requested: Sequence[IPAddress] = ()
) -> list[Allocation]:
    """One address per range set, honouring requested IPs; all or nothing (cmdAdd)."""
    pending = dict.fromkeys(requested)
    held = store.owned_by(owner)
    done: list[Allocation] = []
    try:
        for idx, rset in enumerate(range_sets):
            want = next((ip for ip in pending if rset.contains(ip)), None)
            pending.pop(want, None)
            try:
                done.append(allocate(rset, store, idx, owner, want, held))
            except CniError as err:
                raise CniError(err.code, f"failed to allocate for range {idx}: {err.msg}", err.details) from err
        if pending:
            raise CniError(
                INVALID_CONFIG,
                "failed to allocate all requested IPs: " + " ".join(map(str, pending)),
                "each requested IP must lie in a configured range set, one per set",
            )
    except Exception:
        # Only what this ADD reserved (an earlier ADD's addresses stay; the reference releases
        # all), and on any failure, an I/O error in a later set included.
        for a in done:
            if a.ip not in held:
                store.release(a.ip)
        raise
    return done
