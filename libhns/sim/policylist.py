"""A load balancer as HNSCall shows it: a V1 policy list (``/policylists/``), one ``ELB`` policy
per port mapping and its backends as ``References``.

Real HNS keeps one object behind both APIs: ``Get-HnsPolicyList`` (V1 ``GET /policylists/``) on a
node whose load balancers kube-proxy made through HCN lists each of them with its
``HostComputeNetwork``, ``ELB`` policies (``Protocol`` 6, ``InternalPort``, ``ExternalPort``,
``IsDSR``, ``SourceVIP``, ``VIPs``), ``References`` ``/endpoints/<id>`` in lowercase and
``State`` 2 (projectcalico/calico#8465, HNS 15.0). The ELB keys are hnslib's ``ELBPolicy``
(internal/hns/hnspolicylist.go), whose ``HNSListPolicyListRequest`` is kube-proxy's kernel-mode
check. The store keeps the V2 document only: the V1 answer is derived here, and a V1 request
read by ``libhns.policylist``.
"""

from __future__ import annotations

from libhns import policies as P
from libhns.errors import HCN_E_INVALID_JSON_REFERENCE, HCN_E_INVALID_POLICY, HCN_E_REQUEST_UNSUPPORTED
from libhns.objects import LB_DSR, PORT_MAPPING_ILB
from libhns.policylist import REFERENCE, document, endpoint_id
from libhns.sim.validate import Reject, check_v1_policies

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Mapping

#: A policy list's State once applied (networkhealth.ps1 fails any other; calico#8465 shows 2).
APPLIED = 2


def policy_list(doc: Mapping[str, Any], network_id: str | None) -> dict[str, Any]:
    """The V1 policy list of a stored V2 load balancer; ``network_id`` is its backends' network."""
    g = lambda key: P.get_ci(doc, key)  # noqa: E731 - shorthand for the reads that follow
    frontend: dict[str, Any] = {}
    if g("SourceVIP"):
        frontend["SourceVIP"] = g("SourceVIP")
    if g("FrontendVIPs"):
        frontend["VIPs"] = list(g("FrontendVIPs"))
    if int(g("Flags") or 0) & LB_DSR:  # V1 spells it IsDSR
        frontend["IsDSR"] = True
    elbs = []
    for m in g("PortMappings") or ():
        elb = {"Type": "ELB", "Protocol": P.get_ci(m, "Protocol") or 0}
        elb.update({"InternalPort": P.get_ci(m, "InternalPort") or 0, "ExternalPort": P.get_ci(m, "ExternalPort") or 0})
        if int(P.get_ci(m, "Flags") or 0) & PORT_MAPPING_ILB:
            elb["ILB"] = True
        elbs.append({**elb, **frontend})
    out: dict[str, Any] = {"ID": doc["ID"]}
    if network_id:
        out["HostComputeNetwork"] = network_id
    out["Policies"] = elbs
    out["References"] = [REFERENCE + str(ep).lower() for ep in g("HostComputeEndpoints") or ()]
    out["State"] = APPLIED
    return out


def load_balancer(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The V2 load balancer a ``POST /policylists/`` document asks for (hnslib's
    ``AddLoadBalancer``: ``References`` and ``ELB`` policies), read by ``libhns.policylist``.

    One V2 load balancer has one frontend, so every ELB policy must name the same SourceVIP, VIPs
    and IsDSR; a policy list of anything but ELB policies (hnslib's ``AddRoute``) is not
    simulated: both are refused as unsupported requests, saying so."""
    elbs = check_v1_policies(P.get_ci(doc, "Policies"), "policy list")
    if not elbs or any(p["Type"] != "ELB" for p in elbs):
        raise Reject(HCN_E_REQUEST_UNSUPPORTED, "The simulator serves policy lists of ELB policies only.")
    g = P.get_ci
    frontends = {(g(p, "SourceVIP") or "", tuple(g(p, "VIPs") or ()), bool(g(p, "IsDSR"))) for p in elbs}
    if len(frontends) > 1:
        raise Reject(HCN_E_REQUEST_UNSUPPORTED, "ELB policies with different VIPs are more than one load balancer.")
    for p in elbs:
        try:
            P.protocol_number(g(p, "Protocol") or 0)
        except ValueError:
            raise Reject(HCN_E_INVALID_POLICY, f"ELB policy protocol {g(p, 'Protocol')!r}.") from None
    references = list(P.get_ci(doc, "References") or ())
    for r in references:
        if endpoint_id(r) is None:
            raise Reject(HCN_E_INVALID_JSON_REFERENCE, f"{str(r)!r} is not an /endpoints/<id> reference.")
    return document({"Policies": elbs, "References": references})
