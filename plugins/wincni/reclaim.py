"""``wincni reclaim``: give back host-local reservations whose pod has no HNS endpoint any more.

After a reboot or an HNS restart a non-persistent network is gone with its endpoints, but
host-local's files still reserve the pods' addresses. The runtime's CNI GC releases them; a
runtime that never sends GC (containerd before 2.0, dockershim) leaves them until the range runs
dry. This command does what GC would, judging from HNS's view of what is alive instead of the
runtime's: a reservation is released when no endpoint ``<container>_<network>`` exists and it is
older than ``--min-age`` (an ADD in flight reserves its address before it creates the endpoint;
the default, 300 s, is well past the longest ADD the deadline allows, 100 s + 10 s of undo).
"""
from __future__ import annotations

import os
import time
from typing import Any, TextIO

DEFAULT_MIN_AGE = 300.0


def reclaimable(facts: Any, allocations: list[tuple[Any, Any]], age_of: Any, min_age: float) -> list[tuple[str, str]]:
    """(IP, container ID) of the reservations to release (pure: the caller reads the store)."""
    suffix = f"_{facts.name}"
    pods = {name[: -len(suffix)] for name, _ in facts.endpoints if name.endswith(suffix)}
    return [(str(ip), owner.container_id if owner else "") for ip, owner in allocations
            if (owner is None or owner.container_id not in pods) and age_of(ip) >= min_age]


def run(facts: Any, platform: str, min_age: float, dry_run: bool, out: TextIO, err: TextIO,
        output: str = "table") -> int:
    """0: done (or nothing to do); 1: HNS or the store could not be read, nothing released."""
    doc: dict[str, Any] = {"network": facts.name, "store": facts.ipam_dir, "dryRun": dry_run, "released": []}
    if facts.conf_problem or facts.hns_problem:
        problem = facts.conf_problem or facts.hns_problem
        if output == "json":
            _json(out, {**doc, "error": problem.message, "fix": problem.fix})
        else:
            err.write(f"wincni reclaim: {problem.message}\n  fix: {problem.fix}\n")
        return 1
    released: list[tuple[str, str]] = []
    if facts.ipam_dir and os.path.isdir(facts.ipam_dir):
        from plugins.ipam_host_local.store import open_store
        now = time.time()
        with open_store(facts.ipam_dir, platform) as store:
            store.rescan()
            released = reclaimable(facts, store.allocations(), lambda ip: now - store.reserved_at(ip), min_age)
            if not dry_run:
                for ip, _ in released:
                    store.release(ip)
    elif output == "table":
        out.write(f"no host-local store for network {facts.name}: nothing to reclaim\n")
        return 0
    if output == "json":
        _json(out, {**doc, "released": [{"ip": ip, "containerID": cid} for ip, cid in released]})
        return 0
    for ip, cid in released:
        out.write(f"{'would release' if dry_run else 'released'} {ip} "
                  f"(reserved for {cid or 'no container'}, which has no HNS endpoint on {facts.name})\n")
    out.write(f"{len(released)} reservation(s) {'would be released' if dry_run else 'released'} in {facts.ipam_dir}\n")
    return 0


def _json(out: TextIO, doc: dict[str, Any]) -> None:
    import json
    json.dump(doc, out, indent=2)
    out.write("\n")
