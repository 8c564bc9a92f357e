"""A simulated HNS namespace (a pod's network compartment): its stored record and HNS's rules for
it (the default namespace is unique, endpoints and containers as resources, the V1 view and V1
requests)."""

from __future__ import annotations

from libhns import policies as P
from libhns.errors import (
    E_INVALIDARG,
    GCN_E_DEFAULTNAMESPACE_EXISTS,
    HCN_E_ENDPOINT_ALREADY_ATTACHED,
    HCN_E_ENDPOINT_NOT_ATTACHED,
    HCN_E_REQUEST_UNSUPPORTED,
)
from libhns.sim.endpoint import DETACHED
from libhns.sim.record import StoredObject, requested_id
from libhns.sim.validate import Reject

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Mapping

    from libhns.sim.endpoint import Endpoint
    from libhns.sim.state import HnsState

_TYPES = ("Host", "HostDefault", "Guest", "GuestDefault")


def _is_endpoint(resource: Mapping[str, Any], ep_id: str) -> bool:
    data = resource.get("Data") or {}
    return (resource.get("Type") or "").casefold() == "endpoint" and str(
        P.get_ci(data, "Id") or ""
    ).upper() == ep_id.upper()


class Namespace(StoredObject):
    """``doc["Resources"]`` lists the attached endpoints and containers, as HNS shows them."""

    __slots__ = ()
    KIND, TABLE = "Namespace", "namespaces"
    V1_COLLECTION = "namespaces"
    V1_ACTIONS = ("addresource", "removeresource")
    V1_CREATE_MAY_BE_EMPTY = True

    @property
    def is_default(self) -> bool:
        return self.doc.get("Type") == "HostDefault"

    @classmethod
    def create(
        cls, st: HnsState, doc: Mapping[str, Any], id_: str | None = None, *, is_default: bool = False
    ) -> Namespace:
        """A namespace of the requested type; its compartment is the host's (1) for the one
        HostDefault namespace, else the next free one."""
        id_ = cls.fresh_id(st, id_ or requested_id(doc))
        ntype = P.get_ci(doc, "Type") or ("HostDefault" if is_default else "Host")
        canon = next((t for t in _TYPES if t.casefold() == str(ntype).casefold()), None)
        if canon is None:
            raise Reject(E_INVALIDARG, f"Invalid namespace type {ntype!r}.")
        if canon == "HostDefault":
            if any(ns.is_default for ns in st.table("Namespace").values()):
                raise Reject(GCN_E_DEFAULTNAMESPACE_EXISTS)
            compartment = 1
        else:
            compartment = st.next("compartment") + 1  # 1 is the host's default compartment
        return st.add(
            cls(
                {
                    "ID": id_,
                    "NamespaceId": compartment,
                    "Type": canon,
                    "Resources": [],
                    "SchemaVersion": P.get_ci(doc, "SchemaVersion") or {"Major": 2, "Minor": 0},
                }
            )
        )

    @classmethod
    def hcn_create(cls, st: HnsState, doc: dict[str, Any], id_: str | None, parent: str | None) -> Namespace:
        return cls.create(st, doc, id_)

    def modify(self, st: HnsState, request: Mapping[str, Any]) -> None:
        """Endpoint (``{"EndpointId"}``) or Container (``{"ContainerId"}``) resources, Add/Remove."""
        rtype = str(P.get_ci(request, "ResourceType") or "").casefold()
        action = str(P.get_ci(request, "RequestType") or "").casefold()
        settings = P.get_ci(request, "Settings")
        if not isinstance(settings, dict) or action not in ("add", "remove"):
            raise Reject(E_INVALIDARG, "Namespace requests need RequestType Add/Remove and Settings.")
        if rtype == "endpoint":
            ep = st.get("Endpoint", P.get_ci(settings, "EndpointId") or "")
            if action == "add":
                self.add_endpoint(ep)
            else:
                self.remove_endpoint(ep)
        elif rtype == "container":
            cid = str(P.get_ci(settings, "ContainerId") or "")
            res = self.doc.setdefault("Resources", [])
            if action == "add":
                res.append({"Type": "Container", "Data": {"Id": cid}})
            else:
                self.doc["Resources"] = [
                    r for r in res if not (r.get("Type") == "Container" and r.get("Data", {}).get("Id") == cid)
                ]
        else:
            raise Reject(HCN_E_REQUEST_UNSUPPORTED, f"Unsupported namespace ResourceType {rtype!r}.")

    def add_endpoint(self, ep: Endpoint) -> None:
        if ep.namespace_id:
            raise Reject(HCN_E_ENDPOINT_ALREADY_ATTACHED)
        ep.doc["HostComputeNamespace"] = self.id
        self.doc.setdefault("Resources", []).append({"Type": "Endpoint", "Data": {"Id": ep.id}})

    def remove_endpoint(self, ep: Endpoint) -> None:
        if not any(_is_endpoint(r, ep.id) for r in self.doc.get("Resources") or ()):
            raise Reject(HCN_E_ENDPOINT_NOT_ATTACHED)
        self.drop_endpoint(ep.id)
        ep.doc.pop("HostComputeNamespace", None)
        ep.base_state = DETACHED

    def drop_endpoint(self, ep_id: str) -> None:
        """Forget an endpoint among the resources (it is being deleted)."""
        self.doc["Resources"] = [r for r in self.doc.get("Resources") or () if not _is_endpoint(r, ep_id)]

    def delete(self, st: HnsState) -> None:
        """The namespace's endpoints stay, detached."""
        for r in self.doc.get("Resources") or ():
            if (r.get("Type") or "").casefold() == "endpoint":
                ep = st.find("Endpoint", str(P.get_ci(r.get("Data") or {}, "Id")))
                if ep is not None:
                    ep.doc.pop("HostComputeNamespace", None)
                    ep.base_state = DETACHED

    def v1(self, st: HnsState) -> dict[str, Any]:
        return {
            "ID": self.id,
            "IsDefault": self.is_default,
            "ResourceList": [dict(r) for r in self.doc.get("Resources") or ()],
            "CompartmentId": self.doc.get("NamespaceId"),
        }

    # --- HNSCall (V1) ----------------------------------------------------------------------------
    @classmethod
    def v1_create(cls, st: HnsState, doc: dict[str, Any]) -> Namespace:
        return cls.create(st, {}, is_default=bool(P.get_ci(doc, "IsDefault")))

    def v1_action(self, st: HnsState, action: str, doc: Mapping[str, Any]) -> dict[str, Any]:
        """``addresource`` / ``removeresource`` of an Endpoint (``{"Type", "Data": {"Id"}}``)."""
        if str(P.get_ci(doc, "Type") or "").casefold() != "endpoint":
            raise Reject(E_INVALIDARG, "Only Endpoint resources are simulated.")
        ep = st.get("Endpoint", str(P.get_ci(P.get_ci(doc, "Data") or {}, "Id") or ""))
        if action == "addresource":
            self.add_endpoint(ep)
        else:
            self.remove_endpoint(ep)
        return self.v1(st)
