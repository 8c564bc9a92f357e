"""Pod sandboxes as host-local recorded them at ADD (``plugins.ipam_host_local.store.SANDBOXES``),
and whether each still exists: what tells a pod that lost its HNS endpoint (it still runs and must
be recreated; its address must stay) from a pod that is gone (its address may be freed).

``sandbox_of`` and ``PodSandbox`` are pure; ``exists`` asks HNS through the clients it is handed
(the live node's, or a bundle's recorded ones): an HCN namespace for containerd's pods, an HCS
compute system (the pause container) for dockershim's, as ``EndpointApi.in_use`` asks for an
endpoint's holder.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

NAMESPACE, CONTAINER = "namespace", "container"


@dataclass(frozen=True, order=True)
class Sandbox:
    kind: str  # NAMESPACE (an HCN namespace GUID, uppercase) or CONTAINER (a pause container's ID)
    id: str

    def __str__(self) -> str:
        return f"{self.kind} {self.id}"


@dataclass(frozen=True)
class PodSandbox:
    """One reservation's recorded attachment and sandbox; ``exists`` None: not asked, or HNS did
    not answer (``problem`` says why)."""

    ip: str
    container: str
    ifname: str
    sandbox: Sandbox | None  # None: its CNI_NETNS names nothing HNS knows (a Linux namespace path)
    exists: bool | None = None
    problem: str = ""


def sandbox_of(container_id: str, netns: str) -> Sandbox | None:
    """The sandbox CNI_NETNS names: a namespace GUID (containerd), dockershim's
    ``container:<pause container>``, or the container itself (``none`` or unset); None for
    anything else."""
    from libhns.guid import parse
    from plugins.cni.names import is_name

    guid = parse(netns)
    if guid is not None:
        return Sandbox(NAMESPACE, guid)
    kind, sep, rest = netns.partition(":")
    pause = rest if sep and kind == CONTAINER else container_id if netns in ("", "none") else ""
    return Sandbox(CONTAINER, pause) if is_name(pause) else None


def exists(sandboxes: Iterable[Sandbox], hcn: Any, hnscall: Any) -> dict[Sandbox, bool]:
    """Whether each sandbox exists now: one enumeration of the namespaces' IDs, one HCS open per container.
    ``libhns.errors.HnsError`` when HNS does not answer."""
    wanted = set(sandboxes)
    found: dict[Sandbox, bool] = {}
    if any(s.kind == NAMESPACE for s in wanted):
        live = hcn.namespace_ids()
        found.update({s: s.id in live for s in wanted if s.kind == NAMESPACE})
    for s in sorted(s for s in wanted if s.kind == CONTAINER):
        found[s] = hnscall.compute_system_exists(s.id)
    return found
