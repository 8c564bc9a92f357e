"""A simulated HNS load balancer: stored as sent, not interpreted (kube-proxy's kind; the plugins
never create one), but its endpoints must exist."""

from __future__ import annotations

from basics.jsonci import get_ci
from libhns.sim.record import Record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from libhns.sim.state import HnsState


class LoadBalancer(Record):
    __slots__ = ()
    KIND, TABLE = "LoadBalancer", "loadbalancers"

    @classmethod
    def hcn_create(cls, st: HnsState, doc: dict[str, Any], id_: str | None, parent: str | None) -> Record:
        for ep in get_ci(doc, "HostComputeEndpoints") or ():
            st.get("Endpoint", ep)
        return super().hcn_create(st, doc, id_, parent)
