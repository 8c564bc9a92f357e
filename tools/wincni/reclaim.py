"""``wincni reclaim``: give back host-local reservations whose pod has no HNS endpoint any more.

After a reboot or an HNS restart a non-persistent network is gone with its endpoints, but
host-local's files still reserve the pods' addresses. The runtime's CNI GC releases them; a
runtime that never sends GC (containerd before 2.0, dockershim) leaves them until the range runs
dry. This command does what GC would, judging from HNS's view of what is alive instead of the
runtime's, by the node's one ownership rule (``plugins.cni.ownership``): a reservation stays while
its pod has an endpoint ``<container>_<network>``, while it is younger than ``--min-age`` (an ADD
in flight, or a retried one, which renews the reservation it reuses), and always when the node
owns it (``_wincni-``: kube-proxy's source VIP). Each candidate is checked again under the
store's lock just before it is released: its owner and age on disk, and HNS for its endpoint.
A ``--min-age`` below the rule's in-flight age takes ``--force`` (``__main__``: a usage error
without it, a warning with it).
"""

from __future__ import annotations

import os
import time
from typing import Any, Callable, Mapping, TextIO

from plugins.cni.ownership import reservation_kept


def live_pods(facts: Any) -> set[str]:
    from plugins.cni.ownership import pod_of

    return {pod for pod in (pod_of(name, facts.name) for name, _ in facts.endpoints) if pod}


def reclaimable(facts: Any, allocations: list[tuple[Any, Any]], age_of: Any, min_age: float) -> list[tuple[str, str]]:
    """(IP, container ID) of the reservations the rule lets reclaim release (pure: the caller
    reads the store)."""
    pods = live_pods(facts)
    return [
        (str(ip), owner.container_id if owner else "")
        for ip, owner in allocations
        if not reservation_kept(owner.container_id if owner else "", pods, age_of(ip), min_age)
    ]


def endpoint_exists(env: Mapping[str, str], network: str) -> Callable[[str], bool]:
    """Whether HNS holds ``<container>_<network>`` now (the re-check before each release). HNS is
    opened at the first question: a run with no candidate opens it only once, for the facts."""
    from libhns.client import open_clients

    clients: list[Any] = []

    def alive(cid: str) -> bool:
        if not cid:
            return False
        if not clients:
            clients.append(open_clients(env)[0])
        return clients[0].get_endpoint_by_name(f"{cid}_{network}") is not None

    return alive


def run(
    facts: Any,
    platform: str,
    min_age: float,
    dry_run: bool,
    out: TextIO,
    err: TextIO,
    env: Mapping[str, str] | None = None,
    output: str = "table",
    clock: Callable[[], float] = time.time,
) -> int:
    """0: done (or nothing to do); 1: HNS or the store could not be read, nothing (more) released."""
    doc: dict[str, Any] = {"network": facts.name, "store": facts.ipam_dir, "dryRun": dry_run, "released": []}
    if facts.conf_problem or facts.hns_problem:
        problem = facts.conf_problem or facts.hns_problem
        _fail(problem.message, problem.fix, doc, output, out, err)
        return 1
    if not facts.ipam_dir or not os.path.isdir(facts.ipam_dir):
        if output == "json":
            _json(out, doc)
        else:
            out.write(f"no host-local store for network {facts.name}: nothing to reclaim\n")
        return 0
    from libhns.errors import EnvError, HnsError
    from plugins.ipam_host_local.store import open_store

    alive = endpoint_exists(env or {}, facts.name)
    released: list[tuple[str, str, float]] = []
    kept: list[tuple[str, str]] = []
    try:
        with open_store(facts.ipam_dir, platform) as store:
            store.rescan()
            now = clock()
            for ip, cid in reclaimable(facts, store.allocations(), lambda ip: now - store.reserved_at(ip), min_age):
                # Again, under the lock, just before releasing: an ADD may have renewed or
                # re-reserved it, or created its endpoint, since the facts were read.
                owner, at = store.owner_of(ip), store.reserved_at(ip)
                why = (
                    "its owner changed"
                    if (owner.container_id if owner else "") != cid or not at
                    else reservation_kept(cid, {cid} if alive(cid) else set(), clock() - at, min_age)
                )
                if why:
                    kept.append((ip, why))
                    continue
                if not dry_run:
                    store.release(ip)
                released.append((ip, cid, clock() - at))
    except (EnvError, HnsError, OSError) as exc:
        _report(released, kept, facts, dry_run, doc, output, out)
        _fail(f"stopped: {exc}", "run it again once HNS answers", doc, output, out, err)
        return 1
    _report(released, kept, facts, dry_run, doc, output, out)
    if output == "json":
        _json(out, doc)
    return 0


def _report(
    released: list[tuple[str, str, float]],
    kept: list[tuple[str, str]],
    facts: Any,
    dry_run: bool,
    doc: dict[str, Any],
    output: str,
    out: TextIO,
) -> None:
    """Into ``doc`` (``-o json``, printed by the caller) or as table lines."""
    if output == "json":
        doc["released"] = [{"ip": ip, "containerID": cid} for ip, cid, _ in released]
        if kept:
            doc["kept"] = [{"ip": ip, "why": why} for ip, why in kept]
        return
    for ip, cid, age in released:
        out.write(
            f"{'would release' if dry_run else 'released'} {ip} "
            f"(reserved {age:.0f} s ago for {cid or 'no container'}, which has no HNS endpoint on {facts.name})\n"
        )
    for ip, why in kept:
        out.write(f"kept {ip}: {why} (checked again just before release)\n")
    out.write(f"{len(released)} reservation(s) {'would be released' if dry_run else 'released'} in {facts.ipam_dir}\n")


def _fail(message: str, fix: str, doc: dict[str, Any], output: str, out: TextIO, err: TextIO) -> None:
    if output == "json":
        _json(out, {**doc, "error": message, "fix": fix})
    else:
        err.write(f"wincni reclaim: {message}\n  fix: {fix}\n")


def _json(out: TextIO, doc: dict[str, Any]) -> None:
    import json

    json.dump(doc, out, indent=2)
    out.write("\n")
