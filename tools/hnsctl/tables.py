"""The table row of each kind of HNS object, shared by its own ``list`` command and ``dump``."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from basics.jsonci import get_ci
from libhns.objects import HnsObject

#: IANA protocol numbers, as load balancers' PortMappings carry them.
PROTOCOLS = {"tcp": 6, "udp": 17}

NETWORK_HEADERS = ["ID", "NAME", "TYPE", "SUBNETS", "MANAGEMENT-IP"]
ENDPOINT_HEADERS = ["ID", "NAME", "NETWORK", "IP", "MAC", "NAMESPACE", "REMOTE"]
NAMESPACE_HEADERS = ["ID", "COMPARTMENT", "TYPE", "ENDPOINTS"]
LB_HEADERS = ["ID", "FRONTEND", "PORTS", "SOURCE-VIP", "BACKENDS"]
POLICY_LIST_HEADERS = ["ID", "POLICIES"]


def network_rows(nets: Sequence[Any]) -> list[list[Any]]:
    return [[n.id, n.name, n.network_type, ",".join(s.prefix for s in n.subnets), n.management_ip or ""] for n in nets]


def endpoint_rows(eps: Sequence[Any], nets: Sequence[Any] | None = None) -> list[list[Any]]:
    """Each endpoint with its network's name where ``nets`` has it (else the network's ID)."""
    names = {(n.id or "").upper(): n.name for n in nets or ()}
    return [
        [
            e.id,
            e.name,
            names.get((e.network_id or "").upper(), e.network_id),
            ",".join(e.ip_addresses),
            e.mac or "",
            e.namespace_id or "",
            "remote" if e.is_remote else "",
        ]
        for e in eps
    ]


def namespace_rows(nss: Sequence[Any]) -> list[list[Any]]:
    """HCN namespaces are objects; HNSCall's are documents, their endpoints in a ResourceList."""
    rows = []
    for n in nss:
        if isinstance(n, HnsObject):
            rows.append([n.id, n.compartment_id, n.type, ",".join(n.endpoint_ids)])
        else:
            rows.append(
                [
                    n.get("ID"),
                    n.get("CompartmentId"),
                    "",
                    ",".join(str((r.get("Data") or {}).get("Id", "")) for r in n.get("ResourceList") or ()),
                ]
            )
    return rows


def load_balancer_rows(lbs: Sequence[Any]) -> list[list[Any]]:
    names = {n: p for p, n in PROTOCOLS.items()}
    return [
        [
            lb.id,
            ",".join(lb.frontend_vips or ()) or "-",
            ",".join(
                f"{get_ci(m, 'ExternalPort')}->{get_ci(m, 'InternalPort')}/"
                f"{names.get(get_ci(m, 'Protocol'), get_ci(m, 'Protocol'))}"
                for m in lb.port_mappings or ()
                if isinstance(m, dict)
            ),
            lb.source_vip or "",
            ",".join(lb.host_compute_endpoints or ()),
        ]
        for lb in lbs
    ]


def policy_list_rows(lists: Sequence[Mapping[str, Any]]) -> list[list[Any]]:
    return [[p.get("ID"), len(p.get("Policies") or ())] for p in lists]
