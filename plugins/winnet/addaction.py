"""What an ADD does with what HNS holds under the pod's endpoint name: one action, chosen from a
few facts, so the lifecycle carries out a choice instead of making it between its HNS calls.

The lifecycle reads the facts (``Facts``; who holds the endpoint only when ``needs_holder`` says
the choice depends on it, since learning it costs HNS calls), ``decide`` picks the action (pure
and total), and the lifecycle carries that one action out. An endpoint the node's ownership rule
keeps (``plugins.cni.ownership.endpoint_kept``) is never removed here.
"""

from __future__ import annotations

from plugins.cni.ownership import ATTACHED
from plugins.cni.record import FrozenRecord

#: Where the endpoint of the pod's name is: none, on the pod's network, on another network.
NOWHERE, HERE, ELSEWHERE = "nowhere", "here", "elsewhere"
PLACES = (NOWHERE, HERE, ELSEWHERE)

#: Why a stale endpoint of the pod's name is removed (logged with it).
STALE_HERE = "its sandbox is gone; this ADD creates the pod's endpoint anew"
STALE_ELSEWHERE = "it is on another network and its sandbox is gone; this ADD creates the pod's endpoint anew"


class Facts(FrozenRecord):
    """What ADD saw under the pod's endpoint name. ``shared``: this command joins its pod's
    existing endpoint (an HNS V1 app container); ``place``: one of ``PLACES``; ``attached``: to
    this command's sandbox; ``kept``: why the ownership rule keeps the endpoint ("" when it may
    go), None when it was not asked (``needs_holder``)."""

    __slots__ = ("shared", "place", "attached", "kept")

    def __init__(self, shared: bool, place: str, attached: bool = False, kept: str | None = None) -> None:
        self.shared, self.place, self.attached, self.kept = shared, place, attached, kept


def needs_holder(shared: bool, place: str, attached: bool) -> bool:
    """Whether the choice depends on who holds the endpoint: it is on another network, or on the
    pod's but not attached to this (unshared) command's sandbox."""
    return place == ELSEWHERE or (place == HERE and not shared and not attached)


class Create(FrozenRecord):
    """Nothing holds the pod's name: reserve an address, create the endpoint, attach it."""

    __slots__ = ()


class Replace(FrozenRecord):
    """A stale endpoint holds the pod's name: remove it (``why``), then as ``Create``."""

    __slots__ = ("why",)

    def __init__(self, why: str) -> None:
        self.why = why


class Reuse(FrozenRecord):
    """A retry of an ADD that succeeded: answer with its endpoint, attaching it first when
    ``attach``; no second address or endpoint."""

    __slots__ = ("attach",)

    def __init__(self, attach: bool) -> None:
        self.attach = attach


class Join(FrozenRecord):
    """An app container: attach it to its pause container's endpoint and answer with that."""

    __slots__ = ()


class LeaveAlone(FrozenRecord):
    """The pod's name is on an endpoint the ownership rule keeps (``kept`` says why), on the pod's
    network or another (``elsewhere``): code 11 naming it, the pod's reservation released."""

    __slots__ = ("kept", "elsewhere")

    def __init__(self, kept: str, elsewhere: bool) -> None:
        self.kept, self.elsewhere = kept, elsewhere


class NoPodEndpoint(FrozenRecord):
    """An app container whose pause container has no endpoint on this network: code 11. A stale
    endpoint of the pod's name on another network is removed first (``why``; "" when none)."""

    __slots__ = ("why",)

    def __init__(self, why: str = "") -> None:
        self.why = why


#: Every action ``decide`` returns.
ACTIONS = (Create, Replace, Reuse, Join, LeaveAlone, NoPodEndpoint)


def decide(facts: Facts) -> Create | Replace | Reuse | Join | LeaveAlone | NoPodEndpoint:
    """The one action for ``facts`` (``kept`` must be given when ``needs_holder`` says so)."""
    shared, place = facts.shared, facts.place
    if place == NOWHERE:
        return NoPodEndpoint() if shared else Create()
    if place == HERE and (shared or facts.attached):
        return Join() if shared else Reuse(attach=False)
    if facts.kept is None:
        raise ValueError(f"the choice for {facts!r} needs who holds the endpoint")
    if place == HERE and facts.kept == ATTACHED:
        return Reuse(attach=True)  # another live sandbox holds it: attach (HNS refuses what it cannot), never remove
    if facts.kept:
        return LeaveAlone(facts.kept, elsewhere=place == ELSEWHERE)
    why = STALE_ELSEWHERE if place == ELSEWHERE else STALE_HERE
    return NoPodEndpoint(why) if shared else Replace(why)
