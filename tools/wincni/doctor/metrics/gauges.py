"""The doctor's findings and HNS's counts as Prometheus gauges, in the text exposition format (pure)."""

from __future__ import annotations

from typing import Any

from tools.wincni.judge.verdict import FAIL, OK, SKIP, WARN

#: (name, help) of every family, in the order they are written.
FAMILIES = {
    "wincni_hns_up": "1 when HNS answered the doctor's queries.",
    "wincni_hns_networks": "HNS networks on the node.",
    "wincni_hns_endpoints": "HNS endpoints on the node, local and remote.",
    "wincni_hns_remote_endpoints": "HNS remote endpoints (other nodes' pods, made by kube-proxy).",
    "wincni_hns_load_balancers": "HNS load balancers (kube-proxy's Services).",
    "wincni_check": "1 for the status (ok, warn, fail) a wincni doctor check ended in, else 0.",
    "wincni_check_not_checked": "1 when a wincni doctor check could not run (what it reads was not read).",
    "wincni_orphans": "Objects nothing uses any more, by kind (what the doctor's fixes remove).",
    "wincni_pod_addresses": "Addresses host-local can hand out in the pods' range, by IP family.",
    "wincni_pod_addresses_free": "Addresses in the pods' range no pod holds, by IP family.",
    "wincni_netpol_up": "1 when the NetworkPolicy agent wrote its state within the last three minutes.",
    "wincni_netpol_heartbeat_age_seconds": "Seconds since the NetworkPolicy agent last wrote its state.",
    "wincni_netpol_sync_seconds": "How long the NetworkPolicy agent's last sync took.",
    "wincni_netpol_endpoint_rules": "NetworkPolicy ACL rules the agent wants on each endpoint it keeps, by pod.",
    "wincni_netpol_failed_applies": "Endpoint ACL applies that failed in the agent's last sync.",
    "wincni_netpol_refused_objects": "API objects the agent's policy model refused in its last sync.",
    "wincni_netpol_watch_errors": "API server errors the agent's list+watch met since it started.",
    "wincni_netpol_drifted_endpoints": "Endpoints whose ACLs differ from what the NetworkPolicy agent wants.",
}


Sample = tuple  # (family, labels as ((name, value), ...), value)


def gauges(f: Any, results: list) -> list[Sample]:
    """Every sample for the facts ``f`` and the doctor's ``results`` on them."""
    from tools.wincni.doctor.checks.store import orphan_reservations

    out: list[Sample] = [("wincni_hns_up", (), 0 if f.hns_problem else 1)]
    inv = f.inventory
    if inv is not None:
        out += [
            ("wincni_hns_networks", (), len(inv.networks)),
            ("wincni_hns_endpoints", (), len(inv.endpoints)),
            ("wincni_hns_remote_endpoints", (), len(inv.remote_endpoints)),
            ("wincni_hns_load_balancers", (), len(inv.load_balancers)),
        ]
    for c in results:
        out += [("wincni_check", (("check", c.id), ("status", s)), int(c.status == s)) for s in (OK, WARN, FAIL)]
        out.append(("wincni_check_not_checked", (("check", c.id),), int(c.status == SKIP)))
    if f.network is not None and not f.hns_problem:
        out.append(("wincni_orphans", (("kind", "endpoint"),), len(f.stale_endpoints)))
    if inv is not None:
        out.append(("wincni_orphans", (("kind", "remote-endpoint"),), len(inv.unreferenced_remote_endpoints)))
    if f.reservations is not None and f.network is not None:
        out.append(("wincni_orphans", (("kind", "reservation"),), len(orphan_reservations(f))))
    for family, size, free in pod_addresses(f):
        out.append(("wincni_pod_addresses", (("family", family),), size))
        out.append(("wincni_pod_addresses_free", (("family", family),), free))
    return out + netpol(f)


def netpol(f: Any) -> list[Sample]:
    """The NetworkPolicy agent's gauges from its state's status; none while it is off."""
    from tools.wincni.doctor.checks.netpol import STALE, agent_state, drifted

    st = agent_state(f)
    alive = st.status.get("alive")
    if not isinstance(alive, (int, float)):
        return []
    out: list[Sample] = [
        ("wincni_netpol_up", (), int(f.now - alive <= STALE)),
        ("wincni_netpol_heartbeat_age_seconds", (), round(max(0.0, f.now - alive), 3)),
        ("wincni_netpol_sync_seconds", (), float(st.status.get("seconds") or 0)),
        ("wincni_netpol_failed_applies", (), int(st.status.get("failed") or 0)),
        ("wincni_netpol_refused_objects", (), int(st.status.get("refused") or 0)),
        ("wincni_netpol_watch_errors", (), int(st.status.get("watchErrors") or 0)),
    ]
    for ip, want in sorted(st.endpoints.items()):
        if isinstance(want, dict):
            labels = (("pod", str(want.get("pod", ""))), ("address", ip))
            out.append(("wincni_netpol_endpoint_rules", labels, int(want.get("rules") or 0)))
    found = drifted(f)
    if found is not None:
        out.append(("wincni_netpol_drifted_endpoints", (), len(found)))
    return out


def pod_addresses(f: Any) -> list[tuple[str, int, int]]:
    """(IP family, addresses host-local can hand out, how many no reservation holds) for each
    range set of the config's IPAM; none when the config or the store was not read."""
    if f.netconf is None or f.reservations is None or not isinstance(f.netconf.ipam, dict):
        return []
    from plugins.cni.errors import CniError
    from plugins.ipam_host_local import config
    from plugins.ipam_host_local.ranges import parse_ip

    try:
        ipam = config.load(
            {"name": f.name, "ipam": f.netconf.ipam}, {}, f.cni_version or "1.0.0", "win32" if f.windows else "linux"
        )
    except CniError:
        return []
    held = [parse_ip(ip) for ip, _ in f.reservations]
    return [(f"ipv{rs.version}", rs.size(), rs.size() - sum(rs.contains(ip) for ip in held)) for rs in ipam.range_sets]


def exposition(samples: list[Sample]) -> str:
    """The Prometheus text format: each family once, HELP and TYPE before its samples."""
    lines = []
    for family, text in FAMILIES.items():
        rows = [(labels, value) for name, labels, value in samples if name == family]
        if not rows:
            continue
        lines += [f"# HELP {family} {_escape(text, quote=False)}", f"# TYPE {family} gauge"]
        for labels, value in rows:
            shown = ",".join(f'{k}="{_escape(str(v), quote=True)}"' for k, v in labels)
            lines.append(f"{family}{{{shown}}} {value}" if shown else f"{family} {value}")
    return "\n".join(lines) + "\n"


def _escape(text: str, quote: bool) -> str:
    text = text.replace("\\", "\\\\").replace("\n", "\\n")
    return text.replace('"', '\\"') if quote else text
