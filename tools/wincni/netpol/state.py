"""The state the agent leaves for ADD (``plugins.winnet.netpolstate`` reads it, and says what
it holds): this node's pods' rules and each policy namespace's safe default; and for the doctor,
``status``: how the agent does (``report``). Written atomically in an admin-only folder, only
when the rules or the status' steady part changed, else once a ``netpolstate.HEARTBEAT`` (the
doctor's proof that the agent runs), so an event that changes nothing writes nothing."""

from __future__ import annotations

import dataclasses
import os
import time

from basics import jsontext
from plugins.netpol import model, resources, translate
from plugins.winnet import netpolstate
from plugins.winnet.policies import V2
from tools.wincni.netpol import wanted as W

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, Iterable, Mapping, Sequence

    from tools.wincni.netpol.plan import EndpointStep

#: What moves each sync without saying anything new: not a reason to write.
MOVING = ("alive", "synced", "seconds", "counts")


def document(
    cluster: resources.Cluster,
    node: str,
    node_addresses: Sequence[Any],
    known: Mapping[str, Any] | None = None,
    made: dict | None = None,
) -> dict:
    """Pure: the state for ``node``. Each pod's rules are made without its address (ADD knows
    a pod before the API server shows its address), so they lack only its own-address allow.
    ``known``: accesses already worked out, by pod (a pod's access does not depend on its own
    address, only its rules do). ``made``: by pod, the access and rules of the last call with
    the same ``node_addresses``, used again where the access is the same, and left holding this
    call's."""
    memo: dict = {}
    pods, now = {}, {}
    for pod in sorted((p for p in cluster.pods if p.node == node), key=lambda p: p.key):
        access = (known or {}).get(pod.key) or model.access(cluster, pod, memo)
        if W.isolates(access):
            anonymous = dataclasses.replace(access, pod=dataclasses.replace(pod, ip=None))
            before = (made or {}).get(pod.key)
            rules = before[1] if before is not None and before[0] == anonymous else None
            pods[pod.key] = rules or translate.endpoint_acls(anonymous, node_addresses, V2)
            now[pod.key] = (anonymous, pods[pod.key])
    namespaces = {}
    for ns in sorted({p.namespace for p in cluster.policies}):
        held = cluster.policies_in(ns)
        ingress, egress = any(p.ingress is not None for p in held), any(p.egress is not None for p in held)
        namespaces[ns] = _closed(ns, node, ingress, egress, node_addresses)
    closed = _closed("", node, True, True, node_addresses)
    if made is not None:
        made.clear()
        made.update(now)
    return {"version": netpolstate.VERSION, "node": node, "pods": pods, "namespaces": namespaces, "closed": closed}


def _closed(namespace: str, node: str, ingress: bool, egress: bool, node_addresses: Sequence[Any]) -> list[dict]:
    """A pod the agent does not know yet: each direction given closed, the node allowed in."""
    stand_in = resources.Pod(namespace, "", {}, None, node, ())
    access = model.Access(stand_in, _closed_if(ingress), _closed_if(egress), ())
    return translate.endpoint_acls(access, node_addresses, V2)


def _closed_if(isolated: bool) -> model.Direction:
    return model.Direction(True, ()) if isolated else model.OPEN


def report(
    steps: Iterable[EndpointStep],
    failed: Sequence[str],
    refused: int,
    watch_errors: int,
    seconds: float,
    now: float,
    last: Mapping[str, Any],
) -> dict:
    """Pure: the state's ``status`` after a sync at wall time ``now`` (``last``: the one before).

    ``endpoints``: by address, each endpoint the agent keeps, its pod, how many rules of the
    agent's it wants there and their ``aclcompare.digest`` (the doctor compares HNS with it);
    ``synced``: when a sync last applied all it had to; ``lastError`` and ``failed``: what the
    last failure said and how many applies failed in this sync."""
    endpoints = {}
    counts: dict[str, int] = {}
    for step in steps:
        counts[step.action] = counts.get(step.action, 0) + 1
        if step.pod and step.held.ips:
            count, digest = step.owned
            endpoints[step.held.ips[0]] = {"pod": step.pod, "rules": count, "acls": digest}
    error = last.get("lastError")
    if failed:
        error = {"time": round(now, 3), "text": failed[0]}
    return {
        "endpoints": endpoints,
        "counts": counts,
        "failed": len(failed),
        "refused": refused,
        "watchErrors": watch_errors,
        "lastError": error,
        "synced": last.get("synced") if failed else round(now, 3),
        "seconds": round(seconds, 4),
    }


class StateFile:
    """Writes the state when its rules or its status' steady part differ from what this process
    wrote last, or when the last write is a ``HEARTBEAT`` old; ``clock``: wall time."""

    def __init__(self, path: str, clock: Callable[[], float] = time.time) -> None:
        self.path, self.clock = path, clock
        self.doc: dict = {}
        self.status: dict = {}
        self.last: bytes | None = None
        self.written = float("-inf")

    def write(self, doc: dict | None = None, status: dict | None = None) -> bool:
        """Whether it wrote. ``None``: the rules, or the status, as last given."""
        from basics.safefs import secure_folder

        self.doc = self.doc if doc is None else doc
        self.status = self.status if status is None else status
        steady = {k: v for k, v in self.status.items() if k not in MOVING}
        now = self.clock()
        key = jsontext.dumps({**self.doc, "status": steady}, separators=(",", ":"), sort_keys=True).encode()
        if key == self.last and now - self.written < netpolstate.HEARTBEAT:
            return False
        whole = {**self.doc, "status": {**self.status, "alive": round(now, 3)}}
        data = jsontext.dumps(whole, separators=(",", ":"), sort_keys=True).encode()
        folder = secure_folder(os.path.dirname(self.path))
        name = os.path.basename(self.path)
        temp = f".{name}.{os.getpid()}.tmp"
        try:
            fd = folder.open_new(temp, 0o600)
            try:
                os.write(fd, data)
                os.fsync(fd)
            finally:
                os.close(fd)
            folder.rename(temp, name, replace=True)
        finally:
            folder.close()
        self.last, self.written = key, now
        return True
