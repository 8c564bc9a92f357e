"""Checks of host-local's store."""

from __future__ import annotations

from tools.wincni.doctor.checks.common import command, failed, minutes, not_checked
from tools.wincni.doctor.facts import NodeFacts
from tools.wincni.judge.verdict import OK, WARN, Check


def ipam_store(f: NodeFacts) -> Check:
    if f.store_problem:
        return failed("ipam-store", f.store_problem)
    if f.reservations is None or f.network is None:
        return not_checked("ipam-store", "no host-local store or HNS network")
    from plugins.cni import ownership

    suffix = f"_{f.name}"
    pods = {pod: ips for name, ips in f.endpoints if (pod := ownership.pod_of(name, f.name))}
    held = {cid for _, cid in f.reservations}
    owner = dict(f.reservations)
    orphans = [f"{ip} reserved for {cid or '?'} which has no endpoint" for ip, cid in orphan_reservations(f)]
    bad = [cid for cid, ips in pods.items() if cid not in held or any(owner.get(ip) != cid for ip in ips)]
    stale = [
        f"endpoint {cid}{suffix} ({', '.join(ips)}) has no reservation" for cid, ips in pods.items() if cid not in held
    ]
    stale += [
        f"endpoint {cid}{suffix} holds {ip}, which host-local reserves for {owner[ip] or '?'}"
        if ip in owner
        else f"endpoint {cid}{suffix} holds {ip}, which host-local has not reserved (it may hand it to another pod)"
        for cid, ips in pods.items()
        if cid in held
        for ip in ips
        if owner.get(ip) != cid
    ]
    said = set(stale)
    stale += [c for c in ownership.conflicts(list(f.reservations), list(f.endpoints), f.name) if c not in said]
    if stale:
        return Check(
            "ipam-store",
            WARN,
            "; ".join(orphans + stale),
            "an endpoint whose pod is gone is the stale-endpoints check's to remove; for a live pod, remove "
            f"its pod sandbox ({', '.join(bad)}; crictl rmp): the kubelet starts it again with an address "
            "host-local reserves"
            + (f"; then the reservations go with wincni reclaim --cni-conf {f.conf_path}" if orphans else ""),
        )
    if orphans:
        return Check(
            "ipam-store",
            WARN,
            "; ".join(orphans),
            "the node's sweep (the DaemonSet's sweep container: no Windows runtime sends CNI GC) releases them; "
            "this releases now every reservation older than "
            f"{minutes()} whose pod has no HNS endpoint",
            command(f, "wincni", "reclaim", "--cni-conf", f.conf_path),
        )
    own = sum(ownership.pinned(cid) for _, cid in f.reservations)
    unheld = [cid for _, cid in f.reservations if cid not in pods and not ownership.pinned(cid)]
    running = running_sandboxes(f)
    lost = sum(cid in running for cid in unheld)
    waiting = len(unheld) - lost
    return Check(
        "ipam-store",
        OK,
        f"{len(f.reservations) - own - len(unheld)} reservation(s) in {f.ipam_dir} match the "
        "HNS endpoints"
        + (f", and {own} of the node's own (kube-proxy's source VIP)" if own else "")
        + (f"; {lost} kept for pods that run without their endpoint (see pod-endpoints)" if lost else "")
        + (
            f"; {waiting} younger than {minutes()} have no endpoint yet (an ADD in flight, or stale once older)"
            if waiting
            else ""
        ),
    )


def orphan_reservations(f: NodeFacts) -> list[tuple[str, str]]:
    """host-local's reservations (IP, container) whose pod has no endpoint, by reclaim's rule
    (``ownership.reservation_kept``): a young one may be an ADD still creating its endpoint; pinned
    ones are the node's own; one whose recorded sandbox still exists is a pod without its network
    (the pod-endpoints check's)."""
    from plugins.cni import ownership

    pods = {ownership.pod_of(name, f.name) for name, _ in f.endpoints} - {None}
    running = running_sandboxes(f)
    window = ownership.IN_FLIGHT_SECONDS
    return [
        (ip, cid)
        for ip, cid in f.reservations or ()
        if not ownership.reservation_kept(cid, pods, 0.0 if ip in f.young else window, window, cid in running)
    ]


def running_sandboxes(f: NodeFacts) -> set[str]:
    """The containers whose sandbox, as host-local recorded it at their ADD, exists now."""
    return {p.container for p in f.sandboxes or () if p.exists}
