"""A simulated compute system (HCS): a running container a V1 endpoint is hot-attached to.

HNS has no such object; the simulator keeps one per ``register_container`` so that
``HcsOpenComputeSystem`` finds it and ``remove_container`` can detach what it shared.
"""

from __future__ import annotations

from libhns.errors import HCS_E_SYSTEM_ALREADY_EXISTS, HCS_E_SYSTEM_NOT_FOUND
from libhns.sim.record import StoredObject
from libhns.sim.validate import Reject

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from libhns.sim.state import HnsState


class ComputeSystem(StoredObject):
    """``doc``: ``{"ID", "State"}``; ``endpoints``: the IDs of the endpoints it shares. Keyed by
    its ID case-folded (a container ID, not a GUID)."""

    __slots__ = ("endpoints",)
    KIND, TABLE, NOT_FOUND = "ComputeSystem", "containers", HCS_E_SYSTEM_NOT_FOUND
    FIELDS = __slots__

    def __init__(self, doc: dict[str, Any], endpoints: list[str] | None = None) -> None:
        self.doc, self.endpoints = doc, endpoints or []

    @staticmethod
    def key(id_: str) -> str:
        return str(id_).casefold()

    @classmethod
    def register(cls, st: HnsState, container_id: str) -> ComputeSystem:
        if st.find(cls.KIND, container_id) is not None:
            raise Reject(HCS_E_SYSTEM_ALREADY_EXISTS)
        return st.add(cls({"ID": container_id, "State": "Running"}))

    def delete(self, st: HnsState) -> None:
        """Stopping it takes it out of its endpoints' SharedContainers; an endpoint it held is
        then Detached (V1 State 4), as one a container left, not Created again."""
        from libhns.sim.endpoint import DETACHED

        for ep_id in self.endpoints:
            ep = st.find("Endpoint", ep_id)
            if ep is not None:
                ep.shared, ep.base_state = [c for c in ep.shared if c.casefold() != self.id.casefold()], DETACHED

    def properties(self) -> dict[str, Any]:
        """What HcsGetComputeSystemProperties answers (HCS schema 1 ``ContainerProperties``): a
        process-isolated Windows container, which is what hcsshim checks before a hot-attach."""
        return {"Id": self.id, "SystemType": "Container", "RuntimeOsType": "windows", "State": self.doc.get("State")}

    def v1(self, st: HnsState) -> dict[str, Any]:
        return {"Id": self.id, "State": self.doc.get("State"), "Endpoints": list(self.endpoints)}
