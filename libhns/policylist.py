"""A V1 policy list (``GET /policylists/``: a load balancer as HNSCall shows it) read as the V2
load balancer it is. HNS keeps one object behind both APIs: each port mapping is an ``ELB``
policy repeating the frontend (``SourceVIP``, ``VIPs``, ``IsDSR``), and the backends are
``References`` (``/endpoints/<id>``, lowercase). One list answers for every load balancer of the
node in one HNSCall, where HCN costs an open, a query and a close each. The simulator's
``POST /policylists/`` reads its request through ``document`` too, after checking what HNS refuses.
"""

from __future__ import annotations

from libhns import guid
from libhns import policies as P
from libhns.objects import LB_DSR, PORT_MAPPING_ILB

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Mapping

REFERENCE = "/endpoints/"


def elbs(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The list's ``ELB`` policies; none when it holds anything else (hnslib's routes)."""
    found = [p for p in P.get_ci(doc, "Policies") or () if isinstance(p, dict)]
    return found if found and all(str(P.get_ci(p, "Type") or "").upper() == "ELB" for p in found) else []


def endpoint_id(reference: Any) -> str | None:
    """The endpoint ID of a ``/endpoints/<id>`` reference, as HCN spells it (uppercase); None
    for anything else."""
    text = str(reference)
    return guid.normalize(text[len(REFERENCE) :]) if text.casefold().startswith(REFERENCE) else None


def _protocol(value: Any) -> Any:
    try:
        return P.protocol_number(value or 0)
    except ValueError:
        return value  # shown as HNS wrote it, never raised on


def document(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The V2 load balancer document of the policy list ``doc`` (its first ELB's frontend: HNS
    writes the same in each), with its ``ID`` and ``HostComputeNetwork`` when it names them."""
    g = P.get_ci
    policies = elbs(doc)
    first = policies[0] if policies else {}
    v2: dict[str, Any] = {"ID": g(doc, "ID")} if g(doc, "ID") else {}
    if g(doc, "HostComputeNetwork"):
        v2["HostComputeNetwork"] = g(doc, "HostComputeNetwork")
    v2["HostComputeEndpoints"] = [i for i in map(endpoint_id, g(doc, "References") or ()) if i is not None]
    if g(first, "SourceVIP"):
        v2["SourceVIP"] = g(first, "SourceVIP")
    mappings = []
    for p in policies:
        mapping = {"Protocol": _protocol(g(p, "Protocol")), "InternalPort": g(p, "InternalPort") or 0}
        mapping.update({"ExternalPort": g(p, "ExternalPort") or 0, "Flags": PORT_MAPPING_ILB if g(p, "ILB") else 0})
        mappings.append(mapping)
    v2.update({"FrontendVIPs": list(g(first, "VIPs") or ()), "PortMappings": mappings})
    v2.update({"Flags": LB_DSR if g(first, "IsDSR") else 0, "SchemaVersion": {"Major": 2, "Minor": 0}})
    return v2
