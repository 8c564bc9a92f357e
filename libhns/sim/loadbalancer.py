"""A simulated HNS load balancer (kube-proxy's kind; the plugins never create one): HCN's
``HostComputeLoadBalancer`` (hnslib hcn/hcnloadbalancer.go: ``SourceVIP``, ``FrontendVIPs``,
``PortMappings`` of ``Protocol`` / ``InternalPort`` / ``ExternalPort`` / ``DistributionType`` /
``Flags``, ``HostComputeEndpoints``, ``Flags`` DSR 1 / IPv6 2), which HNSCall shows as a policy
list (``policylist.py``). Its rules, each with its source:

- created and modified with its backends existing (``HcnCreateLoadBalancer`` refuses a missing
  endpoint as HNS refuses any reference to one: HCN_E_ENDPOINT_NOT_FOUND);
- one frontend (address family, VIP or none for a node port, protocol, external port) per load
  balancer: another load balancer on it is 0x803B0013 "port already exists" (HNS reserves the
  port: kubernetes/community#8883, hcsshim#1043, kubernetes PR #137530), the same load balancer
  made again is 0x800700B7 "already exists" (kubernetes#139519, after HNS rehydrated it);
- deleting an endpoint leaves the load balancers over it as they are, referencing it
  (kubernetes#113524; networkhealth.ps1 checks for exactly that); an HNS restart keeps them
  (kubernetes#139519: HNS rehydrates them), its non-persistent networks' endpoints going;
- ``HcnModifyLoadBalancer`` takes the whole document (hnslib ``Update``; Microsoft's docs: "JSON
  document specifying the settings of the load balancer"), as far as the HNS version implements
  it (``versions.py``).
"""

from __future__ import annotations

from basics.jsonci import get_ci
from libhns import guid
from libhns.errors import E_NOTIMPL, ERROR_ALREADY_EXISTS, HCN_E_PORT_ALREADY_EXISTS
from libhns.objects import LB_IPV6
from libhns.sim import policylist
from libhns.sim.record import StoredObject, requested_id, without
from libhns.sim.validate import Reject, check_address, check_load_balancer
from libhns.sim.versions import MODIFY_LB_KEEPS_BACKENDS, MODIFY_LB_MIN_VERSION

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Mapping

    from libhns.sim.state import HnsState


def _frontends(doc: Mapping[str, Any]) -> set[tuple[int, str, int, int]]:
    """(address family, VIP or "" for a node port, protocol, external port) of each port
    mapping and VIP: what the load balancer reserves."""
    family = 6 if int(get_ci(doc, "Flags") or 0) & LB_IPV6 else 4
    vips = [str(check_address(v)) for v in get_ci(doc, "FrontendVIPs") or ()] or [""]
    return {
        (family, vip, int(get_ci(m, "Protocol") or 0), int(get_ci(m, "ExternalPort") or 0))
        for m in get_ci(doc, "PortMappings") or ()
        for vip in vips
    }


def _settings(doc: Mapping[str, Any]) -> dict[str, Any]:
    """What makes two load balancers the same one: the document less its ID, backends by ID."""
    out = without(doc, "id", "hostcomputeendpoints")
    out["HostComputeEndpoints"] = sorted(guid.normalize(ep) for ep in get_ci(doc, "HostComputeEndpoints") or ())
    return out


class LoadBalancer(StoredObject):
    __slots__ = ()
    KIND, TABLE = "LoadBalancer", "loadbalancers"
    V1_COLLECTION = "policylists"

    @classmethod
    def create(cls, st: HnsState, doc: Mapping[str, Any], id_: str | None = None) -> LoadBalancer:
        """The stored V2 document: as sent, with its ID."""
        rec = cls(_checked(st, doc))
        rec.doc["ID"] = cls.fresh_id(st, id_ or requested_id(doc))
        rec._reserve(st)
        return st.add(rec)

    @classmethod
    def hcn_create(cls, st: HnsState, doc: dict[str, Any], id_: str | None, parent: str | None) -> StoredObject:
        return cls.create(st, doc, id_)

    def modify(self, st: HnsState, request: Mapping[str, Any]) -> None:
        """The whole document replaced; before HNS 15.4 not implemented, at 15.4 the backends
        stay (``versions.py``)."""
        if st.version < MODIFY_LB_MIN_VERSION:
            raise Reject(E_NOTIMPL, "HcnModifyLoadBalancer is not implemented before HNS 15.4.")
        new = LoadBalancer({**_checked(st, request), "ID": self.id})
        if st.version == MODIFY_LB_KEEPS_BACKENDS:
            new.doc["HostComputeEndpoints"] = get_ci(self.doc, "HostComputeEndpoints") or []
        new._reserve(st)
        self.doc = new.doc

    def _reserve(self, st: HnsState) -> None:
        """Refuse a frontend another load balancer holds (the same load balancer: already exists)."""
        mine = _frontends(self.doc)
        for other in st.table(self.KIND).values():
            if other.id != self.id and mine & _frontends(other.doc):
                same = _settings(other.doc) == _settings(self.doc)
                raise Reject(ERROR_ALREADY_EXISTS if same else HCN_E_PORT_ALREADY_EXISTS)

    def network_id(self, st: HnsState) -> str | None:
        """The network of its first backend that still exists."""
        for ep_id in get_ci(self.doc, "HostComputeEndpoints") or ():
            ep = st.find("Endpoint", ep_id)
            if ep is not None:
                return ep.network_id
        return None

    def v1(self, st: HnsState) -> dict[str, Any]:
        return policylist.policy_list(self.doc, self.network_id(st))

    @classmethod
    def v1_create(cls, st: HnsState, doc: dict[str, Any]) -> LoadBalancer:
        """``POST /policylists/``."""
        return cls.create(st, policylist.load_balancer(doc))


def _checked(st: HnsState, doc: Mapping[str, Any]) -> dict[str, Any]:
    """The document less its ID, its shape valid and its backends there."""
    check_load_balancer(doc)
    for ep in get_ci(doc, "HostComputeEndpoints") or ():
        st.get("Endpoint", ep)
    return without(doc, "id")
