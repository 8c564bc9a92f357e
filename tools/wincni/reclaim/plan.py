"""What the sweep frees: ``plan`` (pure, by the ownership rule) and ``act``, the pass that frees under host-local's store lock, each candidate planned again alone."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from plugins.cni import ownership
from tools.wincni.reclaim.holdings import Delegate, HeldEndpoint, Reservation

WHO = "wincni reclaim"


#: Frees per pass by default: a node's worth of leaked pods, in a pass of a few seconds.
MAX_PER_PASS = 100

ENDPOINT, RESERVATION, DELEGATE = "endpoint", "reservation", "delegate"


@dataclass(frozen=True)
class Seen:
    """One read of the node: what ``plan`` decides from. ``runtime``: the sandbox IDs the runtime
    lists; None when it could not be asked (the rule alone)."""

    network: str
    reservations: tuple[Reservation, ...] = ()
    endpoints: tuple[HeldEndpoint, ...] = ()
    delegates: tuple[Delegate, ...] = ()
    runtime: frozenset[str] | None = None


@dataclass(frozen=True)
class Free:
    kind: str  # ENDPOINT, RESERVATION or DELEGATE
    name: str  # the endpoint's name, the reserved IP, the saved config's key
    pod: str  # the sandbox (container ID) it was for
    why: str

    def same(self, other: "Free") -> bool:
        return (self.kind, self.name, self.pod) == (other.kind, other.name, other.pod)


def plan(seen: Seen, min_age: float) -> tuple[list[Free], dict[tuple[str, str], str]]:
    """(what may be freed, in the order to free it; why each thing of ours stays, by (kind, name)).
    Endpoints come first, then reservations, then saved configs: a pass cut short by its bound
    never frees a reservation while the endpoint that would have kept it stays."""
    net = seen.network
    listed = seen.runtime if seen.runtime is not None else frozenset()
    young = {r.owner for r in seen.reservations if r.age < min_age} | {d.key for d in seen.delegates if d.age < min_age}
    gone = "no namespace or container holds it" + (
        ", and the runtime does not list it" if seen.runtime is not None else ""
    )
    frees: list[Free] = []
    kept: dict[tuple[str, str], str] = {}
    live: set[str] = set()
    for ep in seen.endpoints:
        pod = ownership.pod_of(ep.name, net)
        why = (
            ownership.endpoint_kept(ep.name, net, ep.in_use)
            or (ownership.NODE_OWNED if ownership.pinned(pod) else "")
            or (ownership.RUNTIME_LISTS if pod in listed else "")
            or (ownership.IN_FLIGHT if pod in young else "")
        )
        if not why:
            frees.append(Free(ENDPOINT, ep.name, pod, f"its sandbox {pod} is gone ({gone})"))
        elif pod:
            live.add(pod)
            kept[(ENDPOINT, ep.name)] = why
    holders = set(live)
    for r in seen.reservations:
        why = ownership.reservation_kept(r.owner, live, r.age, min_age, r.sandbox_alive) or (
            ownership.RUNTIME_LISTS if r.owner in listed else ""
        )
        if not why:
            frees.append(
                Free(
                    RESERVATION,
                    r.ip,
                    r.owner,
                    f"reserved {r.age:.0f} s ago for {r.owner or 'no container'}, which has no HNS endpoint on {net}",
                )
            )
        else:
            holders.add(r.owner)
            kept[(RESERVATION, r.ip)] = why
    for d in seen.delegates:
        why = ownership.delegate_kept(d.key, holders, d.age, min_age) or (
            ownership.RUNTIME_LISTS if d.key in listed else ""
        )
        if not why:
            frees.append(Free(DELEGATE, d.key, d.key, f"its pod {d.key} holds no endpoint or reservation on {net}"))
        else:
            kept[(DELEGATE, d.key)] = why
    return frees, kept


@dataclass
class PassResult:
    """One pass: what was (or would be) freed, what the re-check kept and why, what the bound left."""

    freed: list[Free] = field(default_factory=list)
    kept: list[tuple[Free, str]] = field(default_factory=list)
    deferred: int = 0


def act(holdings: Any, runtime: frozenset[str] | None, min_age: float, limit: int, dry_run: bool) -> PassResult:
    """Read, plan and free, all under host-local's store lock. ``holdings``: ``holdings.Holdings``
    or a test's fake of it. HNS and flannel's store are read before the lock is taken (an ADD
    waits on it meanwhile only for the store's part), then each candidate again under it."""
    network = holdings.network
    endpoints, delegates = tuple(holdings.endpoints()), tuple(holdings.delegates())
    out = PassResult()
    with holdings.locked() as store:
        seen = Seen(network, tuple(store.reservations()), endpoints, delegates, runtime)
        frees, _ = plan(seen, min_age)
        out.deferred = max(0, len(frees) - limit)
        for f in frees[:limit]:
            again, kept = plan(_seen_of(f.pod, holdings, store, runtime), min_age)
            if not any(f.same(g) for g in again):
                out.kept.append((f, kept.get((f.kind, f.name)) or "it is gone, or its owner changed"))
                continue
            if not dry_run:
                _free(f, holdings, store)
            out.freed.append(f)
    return out


def _seen_of(pod: str, holdings: Any, store: Any, runtime: frozenset[str] | None) -> Seen:
    """What the node holds for ``pod`` now: its reservations (the lock is held), its endpoint and
    its saved config, read again."""
    ep = holdings.endpoint(f"{pod}_{holdings.network}") if pod else None
    saved = holdings.delegate(pod) if pod else None
    return Seen(
        holdings.network,
        tuple(store.reservations(pod)),
        (ep,) if ep is not None else (),
        (saved,) if saved is not None else (),
        runtime,
    )


def _free(f: Free, holdings: Any, store: Any) -> None:
    if f.kind == ENDPOINT:
        holdings.remove_endpoint(f.name)
        ownership.freed(WHO, f"HNS endpoint {f.name}", f.why)
    elif f.kind == RESERVATION:
        store.release(f.name)
        ownership.freed(WHO, f"the reservation of {f.name} in {holdings.ipam_dir}", f.why)
    else:
        holdings.remove_delegate(f.name)
        ownership.freed(WHO, f"saved delegate config {f.name} in {holdings.data_dir}", f.why)
