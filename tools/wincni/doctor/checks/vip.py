"""Checks of kube-proxy's source VIP."""

from __future__ import annotations

from tools.wincni.doctor.checks import proxy as proxychecks
from tools.wincni.doctor.checks.common import command, no_config, not_checked
from tools.wincni.doctor.facts import NodeFacts
from tools.wincni.judge import addresses
from tools.wincni.judge.verdict import FAIL, OK, WARN, Check


def _sourcevip(f: NodeFacts, status: str, problem: str) -> Check:
    """What ``wincni sourcevip`` mends: it reserves an address of the current subnet in host-local's
    store for the node and writes the file kube-proxy's start reads (kube-proxy only reads it at start)."""
    return Check(
        "source-vip",
        status,
        problem,
        f"then restart kube-proxy so it starts with the address {f.source_vip_path} holds",
        command(f, "wincni", "sourcevip", "--cni-conf", f.conf_path, "--out", f.source_vip_path),
    )


def source_vip(f: NodeFacts) -> Check:
    if f.source_vip_problem:
        return _sourcevip(f, FAIL, f.source_vip_problem.message)
    if f.source_vip is None:
        if skipped := no_config(f, "source-vip"):
            return skipped
        if f.delegate_type == "win-overlay":
            return _sourcevip(f, WARN, f"{f.source_vip_path} not found; kube-proxy (overlay) needs a source VIP")
        return Check("source-vip", OK, f"{f.source_vip_path} not present (only overlay kube-proxy uses it)")
    if f.lease is None or f.lease.subnet is None:
        return not_checked("source-vip", "no FLANNEL_SUBNET")
    subnet = addresses.AddressSet([str(f.lease.subnet)])
    outside = [a for a in f.source_vip if (ip := addresses.address(a)) is None or ip not in subnet]
    if outside or not f.source_vip:
        return _sourcevip(
            f,
            FAIL,
            f"{f.source_vip_path} holds {', '.join(outside) or 'no address'}, outside "
            f"FLANNEL_SUBNET {f.lease.subnet} (left from an earlier pod subnet)",
        )
    inside = f"source VIP {', '.join(f.source_vip)} lies inside {f.lease.subnet}"
    found = _source_vip_reserved(f, inside)
    if found is not None and found.status != OK:
        return found
    in_hns = next(filter(None, (proxychecks.source_vip_in_hns(f, vip) for vip in f.source_vip)), None)
    return in_hns or found or Check("source-vip", OK, inside)


def _source_vip_reserved(f: NodeFacts, inside: str) -> Check | None:
    """What ``wincni sourcevip`` guarantees: host-local holds the address for the node, so no pod
    gets it and GC keeps it, and no HNS endpoint but kube-proxy's own (unnamed: it makes it at start)
    holds it. None when that holds or the store was not read."""
    from plugins.cni import ownership

    for vip in f.source_vip:
        user = next(
            (name for name, ips in f.endpoints if vip in ips and not ownership.source_vip_endpoint(name, False)), None
        )
        if user is not None:
            return _sourcevip(f, FAIL, f"source VIP {vip} is also HNS endpoint {user}'s address")
    if f.reservations is None or not f.ipam_dir or f.delegate_type != "win-overlay":
        return None  # on L2Bridge kube-proxy uses no source VIP
    holders = dict(f.reservations)
    pods = {ownership.pod_of(name, f.name) for name, _ in f.endpoints} - {None}
    for vip in f.source_vip:
        holder = holders.get(vip)
        if holder in pods:
            return _sourcevip(f, FAIL, f"source VIP {vip} is also pod {holder}'s address")
        if holder is None:
            return _sourcevip(
                f, WARN, f"{inside}, but {f.ipam_dir} does not reserve it: host-local can give it to a pod"
            )
        if not ownership.pinned(holder):
            return _sourcevip(
                f, WARN, f"{inside}, reserved for {holder!r}, which host-local's GC releases (no runtime lists it)"
            )
    return Check("source-vip", OK, f"{inside}, reserved in {f.ipam_dir} for the node")
