"""A simulated HNS load balancer (kube-proxy's kind; the plugins never create one): HCN's
``HostComputeLoadBalancer``, which HNSCall shows as a policy list (``policylist.py``).

Its backends (``HostComputeEndpoints``) must exist when it is created."""

from __future__ import annotations

from basics.jsonci import get_ci
from libhns.sim import policylist
from libhns.sim.record import Record, requested_id, without

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Mapping

    from libhns.sim.state import HnsState


class LoadBalancer(Record):
    __slots__ = ()
    KIND, TABLE = "LoadBalancer", "loadbalancers"
    V1_COLLECTION = "policylists"

    @classmethod
    def create(cls, st: HnsState, doc: Mapping[str, Any], id_: str | None = None) -> LoadBalancer:
        """The stored V2 document: as sent, with its ID."""
        for ep in get_ci(doc, "HostComputeEndpoints") or ():
            st.get("Endpoint", ep)
        return st.add(cls({**without(doc, "id"), "ID": cls.fresh_id(st, id_ or requested_id(doc))}))

    @classmethod
    def hcn_create(cls, st: HnsState, doc: dict[str, Any], id_: str | None, parent: str | None) -> Record:
        return cls.create(st, doc, id_)

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
