"""The agent's loop: the watch's cluster -> this node's accesses -> the state ADD reads, and the
endpoints converged. ``wincni netpol`` runs ``Agent.run``; each ``sync`` is one pass.

A sync waits for every kind to have been listed once (a partial cluster would isolate or open
pods wrongly), then runs after each change (``SETTLE`` later, so a burst of events is one sync)
and every ``resync`` seconds (``RESYNC`` unless ``--resync`` says), which reads HNS again. An object the model refuses is left out and
counted, never the reason the other pods' rules stop following their policies. While the pods
and namespaces are the objects of the last sync (a policy changed), their model and the peers
resolved over them are kept: a policy change costs the policies' part alone.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from plugins.netpol import model, resources
from plugins.netpol.errors import PolicyError
from plugins.winnet.netpolstate import HEARTBEAT
from tools.wincni.netpol import plan as P
from tools.wincni.netpol import state as S

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable

    from tools.wincni.netpol.node_endpoints import Failure, NodeEndpoints
    from tools.wincni.netpol.state import StateFile
    from tools.wincni.netpol.watch import ClusterWatch

SETTLE = 0.1
RESYNC = 300.0


@dataclass(frozen=True)
class Sync:
    """What one pass did: the endpoints per action, the applies that failed, the objects left out."""

    counts: dict
    failures: tuple[Failure, ...]
    refused: tuple[str, ...]
    state_written: bool
    seconds: float


@dataclass(frozen=True)
class PodsModel:
    """The namespaces and pods one sync read (the watch's own objects), their model, what of
    them the model refused, and the peers resolved over them (``model.node_access``'s memo)."""

    namespaces: list
    pods: list
    cluster: resources.Cluster
    refused: list
    memo: dict = field(default_factory=dict)

    def holds(self, namespaces: list, pods: list) -> bool:
        """Whether these are the very objects read last (the watch replaces an object it changes)."""
        return all(
            len(new) == len(old) and all(a is b for a, b in zip(new, old))
            for new, old in ((namespaces, self.namespaces), (pods, self.pods))
        )


def readable(namespaces: list, pods: list, policies: list) -> tuple[resources.Cluster, list[str]]:
    """The cluster of the objects the model reads, and the errors of those it refuses (each
    object is tried alone only when the whole is refused)."""
    try:
        return resources.read(namespaces, pods, policies), []
    except PolicyError:
        pass
    kept: tuple[list, list, list] = ([], [], [])
    refused = []
    for i, objects in enumerate((namespaces, pods, policies)):
        for obj in objects:
            one: list = [[], [], []]
            one[i] = [obj]
            try:
                resources.read(*one)
            except PolicyError as err:
                refused.append(str(err))
                continue
            kept[i].append(obj)
    return resources.read(*kept), refused


class Agent:
    def __init__(
        self,
        watch: ClusterWatch,
        endpoints: NodeEndpoints,
        state: StateFile,
        node: str,
        clock: Callable[[], float] = time.monotonic,
        resync: float = RESYNC,
    ) -> None:
        self.watch, self.endpoints, self.state, self.node, self.clock = watch, endpoints, state, node, clock
        self.pods_model: PodsModel | None = None
        self.made: dict = {}  # the state's rules by pod (``state.document``'s ``made``)
        self.resync = resync

    def sync(self) -> Sync:
        start = self.clock()
        r = self.watch.reflectors
        namespaces, pods = r["namespaces"].snapshot(), r["pods"].snapshot()
        if self.pods_model is None or not self.pods_model.holds(namespaces, pods):
            self.pods_model = PodsModel(namespaces, pods, *readable(namespaces, pods, []))
        held, refused = readable([], [], r["networkpolicies"].snapshot())
        base = self.pods_model.cluster
        cluster = resources.Cluster(base.namespaces, base.pods, held.policies)
        refused = self.pods_model.refused + refused
        node_access = model.node_access(cluster, self.node, self.pods_model.memo)
        known = {a.pod.key: a for a in node_access}
        doc = S.document(cluster, self.node, self.endpoints.node_addresses, known, self.made)
        written = self.state.write(doc)
        steps, failures = self.endpoints.converge(P.by_address(node_access))
        counts = {action: sum(s.action == action for s in steps) for action in (P.APPLY, P.IN_SYNC, P.NO_POD)}
        seconds = self.clock() - start
        failed = [f"{f.endpoint}: {f.error}" for f in failures]
        errors = sum(r.errors for r in self.watch.reflectors.values())
        status = S.report(steps, failed, len(refused), errors, seconds, self.state.clock(), self.state.status)
        written = self.state.write(status=status) or written
        return Sync(counts, tuple(failures), tuple(refused), written, seconds)

    def run(self, report: Callable[[Sync], Any], stop: Any) -> None:
        """Sync after each change and every ``resync`` seconds until ``stop`` is set; between,
        the state's heartbeat (``netpolstate.HEARTBEAT``)."""
        changed = self.watch.changed
        last_read = self.clock()
        while not stop.is_set():
            changed.wait(min(HEARTBEAT, max(0.0, last_read + self.resync - self.clock())))
            if stop.is_set():
                return
            if not self.watch.synced:
                changed.clear()
                continue
            if not changed.is_set() and self.clock() - last_read < self.resync:
                self.state.write()  # nothing new: the heartbeat, when one is due
                continue
            stop.wait(SETTLE)
            changed.clear()
            if self.clock() - last_read >= self.resync:
                self.endpoints.refresh()
                last_read = self.clock()
            report(self.sync())
