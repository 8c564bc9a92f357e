"""The HNS operations the plugins call, each with as few raw calls as HNS allows: ``HcnClient``
for HCN (computenetwork.dll, "V2") and ``HnsCallClient`` for HNSCall and HCS (vmcompute.dll,
"V1"), two classes over one ``RawHns`` stack.

Every pod ADD/DEL pays for each raw call (an RPC into HNS on Windows, a file read or a locked
write on the simulator), so lookups go through filtered queries — never enumerate-all then
filter — and nothing is re-queried that the caller does not need. Handles are always closed
(try/finally). "Not found" on a getter is None; every other failure is a ``libhns.errors``
exception. The client never knows which backend it talks to.
"""

from __future__ import annotations

from basics import jsontext
from libhns import errors, guid
from libhns.objects import (
    HNSEndpoint,
    HNSNetwork,
    HnsObject,
    HostComputeEndpoint,
    HostComputeLoadBalancer,
    HostComputeNamespace,
    HostComputeNetwork,
    same_id,
)
from libhns.raw import RawHns

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Mapping, TypeVar

    T = TypeVar("T", bound=HnsObject)

SCHEMA_V2 = {"Major": 2, "Minor": 0}
#: HostComputeQuery asking for V2 documents, without a filter.
QUERY_V2 = jsontext.dumps({"SchemaVersion": SCHEMA_V2}, separators=(",", ":"))
_COMPACT = (",", ":")


def host_compute_query(filter: Mapping[str, Any] | None = None) -> str:
    """A HostComputeQuery; ``Filter`` is JSON *inside a string*, keys are V1 field names."""
    q: dict[str, Any] = {"SchemaVersion": SCHEMA_V2}
    if filter:
        q["Filter"] = jsontext.dumps(dict(filter), separators=_COMPACT)
    return jsontext.dumps(q, separators=_COMPACT)


def _in(version: tuple[int, int], lo: tuple[int, int], hi: tuple[int, int] | None = None) -> bool:
    return version >= lo and (hi is None or version <= hi)


class _NoDeadline:
    """``undo_window`` over a backend without a deadline: nothing to change."""

    __slots__ = ()

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type | None, exc: BaseException | None, tb: object) -> bool:
        return False


class Features:
    """HNS capabilities by version range (hcsshim's hcn/hcnsupport.go: https://github.com/microsoft/hcsshim/blob/main/hcn/hcnsupport.go). Gate on these, never the OS build."""

    __slots__ = (
        "api_v1",
        "v2_api",
        "acl",
        "remote_subnet",
        "host_route",
        "dsr",
        "slash32_endpoint_prefixes",
        "acl_protocol_252",
        "vxlan_port",
        "dual_stack",
        "l4_proxy",
        "session_affinity",
        "set_policy",
        "l4_wfp_proxy",
        "tier_acl",
        "network_acl",
        "nested_ipset",
        "disable_host_port",
        "modify_loadbalancer",
        "accelnet",
    )

    def __init__(self, **flags: bool) -> None:
        for name in self.__slots__:
            setattr(self, name, flags.pop(name))
        if flags:
            raise TypeError(f"Features has no {', '.join(sorted(flags))}")

    def __eq__(self, other: object) -> bool:
        return type(other) is Features and self.as_dict() == other.as_dict()  # type: ignore[union-attr]

    def __hash__(self) -> int:
        return hash(tuple(self.as_dict().items()))

    def __repr__(self) -> str:
        return f"Features({', '.join(n for n in self.__slots__ if getattr(self, n))})"

    @classmethod
    def for_version(cls, version: tuple[int, int]) -> "Features":
        v = version
        x = 1 << 31  # "to MaxInt" upper bound for a major version's minors
        return cls(
            api_v1=True,
            v2_api=_in(v, (9, 2)),
            acl=_in(v, (7, 2)),
            remote_subnet=_in(v, (9, 2)),
            host_route=_in(v, (9, 2)),
            dsr=_in(v, (9, 3), (9, x)) or _in(v, (10, 2)),
            slash32_endpoint_prefixes=_in(v, (9, 3), (9, x)) or _in(v, (10, 4)),
            acl_protocol_252=_in(v, (11, 0)),
            vxlan_port=_in(v, (10, 3)),
            dual_stack=_in(v, (11, 10)),
            l4_proxy=(
                _in(v, (9, 5), (9, x))
                or _in(v, (10, 5), (10, x))
                or _in(v, (11, 11), (11, x))
                or _in(v, (12, 1), (12, x))
                or _in(v, (13, 1))
            ),
            session_affinity=_in(v, (12, 0)),
            set_policy=_in(v, (13, 0)),
            l4_wfp_proxy=_in(v, (13, 2)),
            tier_acl=_in(v, (14, 0)),
            network_acl=_in(v, (15, 0)),
            nested_ipset=_in(v, (15, 0)),
            disable_host_port=_in(v, (15, 1)),
            modify_loadbalancer=_in(v, (15, 4)),
            accelnet=_in(v, (15, 4)),
        )

    def as_dict(self) -> dict[str, bool]:
        return {name: getattr(self, name) for name in self.__slots__}


def _guid(value: str) -> str:
    found = guid.parse(value)
    if found is None:
        raise errors.from_hresult(
            "HnsClient",
            errors.E_INVALIDARG,  # the call name errors have always shown
            errors.error_record(errors.E_INVALIDARG, f"{value!r} is not a GUID."),
        )
    return found


def _parse(text: str) -> Any:
    return jsontext.loads(text) if text and text.strip() else None


def _deleted(delete: Any, missing_ok: bool) -> bool:
    """Run ``delete``: True, or False when the object was already gone and ``missing_ok``."""
    try:
        delete()
        return True
    except errors.NotFound:
        if missing_ok:
            return False
        raise


def open_clients(
    env: Mapping[str, str], limits: Any = None, timeouts: Any = None, cap: float | None = None
) -> tuple[HcnClient, HnsCallClient]:
    """Both API clients over one raw stack: the backend ``LIBHNS_BACKEND`` selects (imported
    lazily: the simulator is not cheap), every call bounded by ``limits`` (a
    ``libhns.deadline.Limits``; default: from ``env`` and a config's ``timeouts``, as
    ``Limits.resolve`` reads them), none above ``cap`` seconds when given."""
    from libhns.backend import open_backend
    from libhns.deadline import DeadlineBackend, Limits

    limits = limits or Limits.resolve(env, timeouts)
    raw = DeadlineBackend(open_backend(env), limits if cap is None else limits.capped(cap))
    return HcnClient(raw), HnsCallClient(raw)


class _Client:
    """What both API clients share: the raw stack below them (backend, journal, deadline)."""

    def __init__(self, raw: RawHns) -> None:
        self.raw = raw

    def undo_window(self) -> Any:
        """A context with a fresh, short deadline for undoing a failed command's completed steps
        (``DeadlineBackend.grace``); a no-op over a backend without a deadline."""
        grace = getattr(self.raw, "grace", None)
        return _NoDeadline() if grace is None else grace()


class HcnClient(_Client):
    """HCN (computenetwork.dll): networks, endpoints and namespaces as V2 documents."""

    def __init__(self, raw: RawHns) -> None:
        super().__init__(raw)
        # The last network found by name stays open (id, handle) for create_endpoint: a V2 ADD
        # then opens its network once. create_endpoint or close() closes it.
        self._kept: tuple[str, Any] | None = None

    def close(self) -> None:
        """Close the network handle kept open by get_network_by_name, if any."""
        kept, self._kept = self._kept, None
        if kept is not None:
            self.raw.hcn_close("Network", kept[1])

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - a handle HNS already dropped, or interpreter shutdown
            pass

    # --- V2 plumbing -------------------------------------------------------------------------
    def _enumerate(self, kind: str, filter: Mapping[str, Any] | None = None) -> list[str]:
        ids = _parse(self.raw.hcn_enumerate(kind, host_compute_query(filter)))
        return [str(i) for i in ids or ()]

    def _query(self, kind: str, id_: str, cls: type[T], query: str = QUERY_V2) -> T | None:
        """Open + Query + Close; None when the object does not exist (any not-found code)."""
        try:
            handle = self.raw.hcn_open(kind, _guid(id_))
        except errors.NotFound:
            return None
        try:
            return cls.from_json(self.raw.hcn_query(kind, handle, query))
        except errors.NotFound:
            return None
        finally:
            self.raw.hcn_close(kind, handle)

    def _by_filter(self, kind: str, filter: Mapping[str, Any], cls: type[T]) -> T | None:
        for id_ in self._enumerate(kind, filter):
            found = self._query(kind, id_, cls)
            if found is not None:
                return found
        return None

    def _list(self, kind: str, cls: type[T], filter: Mapping[str, Any] | None = None) -> list[T]:
        out = []
        for id_ in self._enumerate(kind, filter):
            found = self._query(kind, id_, cls)
            if found is not None:  # deleted between enumerate and open
                out.append(found)
        return out

    def _create(self, kind: str, settings: Mapping[str, Any], cls: type[T]) -> T:
        """Create (GUID_NULL: HNS assigns the ID) + Query + Close."""
        handle = self.raw.hcn_create(kind, None, jsontext.dumps(dict(settings), separators=_COMPACT))
        try:
            return cls.from_json(self.raw.hcn_query(kind, handle, QUERY_V2))
        finally:
            self.raw.hcn_close(kind, handle)

    def _delete(self, kind: str, id_: str, missing_ok: bool) -> bool:
        return _deleted(lambda: self.raw.hcn_delete(kind, _guid(id_)), missing_ok)

    def _modify(self, kind: str, id_: str, request: Mapping[str, Any]) -> None:
        handle = self.raw.hcn_open(kind, _guid(id_))
        try:
            self.raw.hcn_modify(kind, handle, jsontext.dumps(dict(request), separators=_COMPACT))
        finally:
            self.raw.hcn_close(kind, handle)

    # --- V2 networks -------------------------------------------------------------------------
    def get_network_by_name(self, name: str) -> HostComputeNetwork | None:
        """HcnEnumerateNetworks{Name} then Open+Query of the match, whose handle is kept for
        create_endpoint (see ``close``)."""
        for id_ in self._enumerate("Network", {"Name": name}):
            try:
                handle = self.raw.hcn_open("Network", _guid(id_))
            except errors.NotFound:
                continue
            try:
                found = HostComputeNetwork.from_json(self.raw.hcn_query("Network", handle, QUERY_V2))
            except BaseException as exc:
                self.raw.hcn_close("Network", handle)
                if isinstance(exc, errors.NotFound):
                    continue
                raise
            self.close()
            self._kept = (found.id.upper(), handle)
            return found
        return None

    def get_network(self, id_: str) -> HostComputeNetwork | None:
        return self._query("Network", id_, HostComputeNetwork)

    def list_networks(self) -> list[HostComputeNetwork]:
        return self._list("Network", HostComputeNetwork)

    def create_network(self, settings: Mapping[str, Any]) -> HostComputeNetwork:
        doc = {"SchemaVersion": SCHEMA_V2, **settings}
        return self._create("Network", doc, HostComputeNetwork)

    def delete_network(self, id_: str, *, missing_ok: bool = False) -> bool:
        return self._delete("Network", id_, missing_ok)

    def modify_network(self, id_: str, request: Mapping[str, Any]) -> None:
        """Open + Modify + Close (e.g. add a HostRoute or RemoteSubnetRoute policy)."""
        self._modify("Network", id_, request)

    # --- V2 endpoints ------------------------------------------------------------------------
    def get_endpoint_by_name(self, name: str) -> HostComputeEndpoint | None:
        return self._by_filter("Endpoint", {"Name": name}, HostComputeEndpoint)

    def get_endpoint(self, id_: str) -> HostComputeEndpoint | None:
        return self._query("Endpoint", id_, HostComputeEndpoint)

    def endpoint_ids_by_name(self, name: str) -> list[str]:
        """HcnEnumerateEndpoints{Name} alone: the IDs, for a caller that needs nothing more."""
        return self._enumerate("Endpoint", {"Name": name})

    def list_endpoints(self, network_id: str | None = None) -> list[HostComputeEndpoint]:
        """Endpoints, of one network through the ``VirtualNetwork`` filter when given."""
        filt = {"VirtualNetwork": guid.normalize(network_id)} if network_id else None
        return self._list("Endpoint", HostComputeEndpoint, filt)

    def create_endpoint(self, network_id: str, settings: Mapping[str, Any]) -> HostComputeEndpoint:
        """OpenNetwork, CreateEndpoint, QueryEndpointProperties, close both.

        ``HostComputeNetwork`` and ``SchemaVersion`` are filled in when the settings lack them.
        """
        doc = {"SchemaVersion": SCHEMA_V2, "HostComputeNetwork": guid.normalize(network_id), **settings}
        kept, self._kept = self._kept, None
        if kept is not None and kept[0] != guid.normalize(network_id):
            self.raw.hcn_close("Network", kept[1])
            kept = None
        net = kept[1] if kept is not None else self.raw.hcn_open("Network", _guid(network_id))
        try:
            ep = self.raw.hcn_create("Endpoint", None, jsontext.dumps(doc, separators=_COMPACT), network=net)
            try:
                return HostComputeEndpoint.from_json(self.raw.hcn_query("Endpoint", ep, QUERY_V2))
            finally:
                self.raw.hcn_close("Endpoint", ep)
        finally:
            self.raw.hcn_close("Network", net)

    def delete_endpoint(self, id_: str, *, missing_ok: bool = False) -> bool:
        """HcnDeleteEndpoint; False when already gone and ``missing_ok``."""
        return self._delete("Endpoint", id_, missing_ok)

    def modify_endpoint(self, id_: str, request: Mapping[str, Any]) -> None:
        """HcnModifyEndpoint (open, modify, close): a ``ResourceType`` Policy or Port request,
        e.g. ``policy_request("Update", [...])``."""
        self._modify("Endpoint", id_, request)

    # --- V2 load balancers (kube-proxy's; hnsctl and the doctor read them) ---------------------
    def get_load_balancer(self, id_: str) -> HostComputeLoadBalancer | None:
        return self._query("LoadBalancer", id_, HostComputeLoadBalancer)

    def list_load_balancers(self) -> list[HostComputeLoadBalancer]:
        return self._list("LoadBalancer", HostComputeLoadBalancer)

    def create_load_balancer(self, settings: Mapping[str, Any]) -> HostComputeLoadBalancer:
        return self._create("LoadBalancer", {"SchemaVersion": SCHEMA_V2, **settings}, HostComputeLoadBalancer)

    def delete_load_balancer(self, id_: str, *, missing_ok: bool = False) -> bool:
        return self._delete("LoadBalancer", id_, missing_ok)

    # --- V2 namespaces -----------------------------------------------------------------------
    def get_namespace(self, id_: str) -> HostComputeNamespace | None:
        return self._query("Namespace", id_, HostComputeNamespace)

    def list_namespaces(self) -> list[HostComputeNamespace]:
        return self._list("Namespace", HostComputeNamespace)

    def namespace_ids(self) -> set[str]:
        """HcnEnumerateNamespaces alone: every namespace's ID (normalized), all a question of
        which sandboxes exist needs, in one call whatever their number."""
        return {guid.normalize(i) for i in self._enumerate("Namespace")}

    def create_namespace(self, settings: Mapping[str, Any] | None = None) -> HostComputeNamespace:
        return self._create("Namespace", {"SchemaVersion": SCHEMA_V2, **(settings or {})}, HostComputeNamespace)

    def delete_namespace(self, id_: str, *, missing_ok: bool = False) -> bool:
        return self._delete("Namespace", id_, missing_ok)

    def namespace_add_endpoint(self, namespace_id: str, endpoint_id: str) -> None:
        """Open + Modify{Endpoint, Add} + Close; no re-query."""
        self._modify("Namespace", namespace_id, _namespace_request("Add", endpoint_id))

    def namespace_remove_endpoint(self, namespace_id: str, endpoint_id: str) -> None:
        """Open + Modify{Endpoint, Remove} + Close; no re-query."""
        self._modify("Namespace", namespace_id, _namespace_request("Remove", endpoint_id))


class HnsCallClient(_Client):
    """HNSCall (vmcompute.dll, "V1"): HNS's JSON-over-REST API, plus the HCS calls that attach an
    endpoint to a running container; and HNS's version, which only HNSCall tells."""

    def __init__(self, raw: RawHns) -> None:
        super().__init__(raw)
        self._version: tuple[int, int] | None = None

    def version(self) -> tuple[int, int]:
        """(Major, Minor) from ``GET /globals/version`` — HNS's only version source; cached."""
        if self._version is None:
            out = self._call("GET", "/globals/version")
            self._version = (int(out.get("Major", 0)), int(out.get("Minor", 0)))
        return self._version

    def features(self) -> Features:
        return Features.for_version(self.version())

    def _call(self, method: str, path: str, body: Mapping[str, Any] | None = None) -> Any:
        """One HNSCall; ``Success: false`` becomes the matching ``HnsError`` subclass."""
        request = "" if body is None else jsontext.dumps(dict(body), separators=_COMPACT)
        envelope = _parse(self.raw.hns_call(method, path, request)) or {}
        if not isinstance(envelope, dict):
            raise errors.from_v1_error(f"HNSCall {method} {path}", "Malformed response.")
        if not envelope.get("Success", False):
            raise errors.from_v1_error(f"HNSCall {method} {path}", str(envelope.get("Error") or ""))
        return envelope.get("Output")

    def _get(self, path: str, cls: type[T]) -> T | None:
        try:
            out = self._call("GET", path)
        except errors.NotFound:
            return None
        return cls.from_json(out) if out else None

    def list_networks(self) -> list[HNSNetwork]:
        return [HNSNetwork.from_json(n) for n in self._call("GET", "/networks/") or ()]

    def get_network_by_name(self, name: str) -> HNSNetwork | None:
        """One ``GET /networks/`` and pick: V1 has no filter."""
        return next((n for n in self.list_networks() if n.name == name), None)

    def get_network(self, id_: str) -> HNSNetwork | None:
        return self._get(f"/networks/{id_}", HNSNetwork)

    def create_network(self, doc: Mapping[str, Any]) -> HNSNetwork:
        return HNSNetwork.from_json(self._call("POST", "/networks/", doc))

    def delete_network(self, id_: str) -> None:
        self._call("DELETE", f"/networks/{id_}")

    def list_endpoints(self, network_id: str | None = None) -> list[HNSEndpoint]:
        """One ``GET /endpoints/``, filtered here by ``VirtualNetwork`` when given."""
        eps = [HNSEndpoint.from_json(e) for e in self._call("GET", "/endpoints/") or ()]
        return [e for e in eps if network_id is None or same_id(e.virtual_network, network_id)]

    def get_endpoint_by_name(self, name: str) -> HNSEndpoint | None:
        return next((e for e in self.list_endpoints() if e.name == name), None)

    def get_endpoint(self, id_: str) -> HNSEndpoint | None:
        return self._get(f"/endpoints/{id_}", HNSEndpoint)

    def create_endpoint(self, doc: Mapping[str, Any]) -> HNSEndpoint:
        return HNSEndpoint.from_json(self._call("POST", "/endpoints/", doc))

    def delete_endpoint(self, id_: str, *, missing_ok: bool = False) -> bool:
        return _deleted(lambda: self._call("DELETE", f"/endpoints/{id_}"), missing_ok)

    def update_endpoint(self, id_: str, doc: Mapping[str, Any]) -> HNSEndpoint:
        """``POST /endpoints/<id>``: HNS takes the document's ``Policies`` (its ACLs replace the
        endpoint's, as hcsshim's ApplyACLPolicy relies on); the endpoint as HNS then shows it."""
        return HNSEndpoint.from_json(self._call("POST", f"/endpoints/{id_}", doc))

    def host_attach(self, endpoint_id: str, compartment_id: int = 1) -> None:
        """``POST /endpoints/<id>/attach`` as the host (compartment 1 = host default), like cbr0_ep."""
        self._call("POST", f"/endpoints/{endpoint_id}/attach", {"SystemType": "Host", "CompartmentId": compartment_id})

    def container_detach(self, container_id: str, endpoint_id: str) -> None:
        """``POST /endpoints/<id>/detach`` for a container sharing the endpoint."""
        self._call("POST", f"/endpoints/{endpoint_id}/detach", {"ContainerId": container_id, "SystemType": "Container"})

    def hot_attach(self, container_id: str, endpoint_id: str, endpoint: HNSEndpoint | None = None) -> bool:
        """Attach to a running container through HCS; False (no HCS call) when already attached.

        Pass ``endpoint`` when you have it: it saves the ``GET /endpoints/<id>``.
        """
        ep = endpoint if endpoint is not None else self.get_endpoint(endpoint_id)
        if ep is None:
            raise errors.from_v1_error(f"HNSCall GET /endpoints/{endpoint_id}", "Element not found.")
        if ep.has_container(container_id):
            return False
        self._hcs_network_request(container_id, "Add", endpoint_id)
        return True

    def hot_detach(self, container_id: str, endpoint_id: str, endpoint: HNSEndpoint | None = None) -> bool:
        """Detach through HCS. With ``endpoint`` not listing the container: no call, False;
        without it: the HCS call straight away (its not-found / not-attached errors surface)."""
        if endpoint is not None and not endpoint.has_container(container_id):
            return False
        self._hcs_network_request(container_id, "Remove", endpoint_id)
        return True

    def compute_system_exists(self, container_id: str) -> bool:
        """Whether HCS knows a compute system of this ID (open + close; not found is False)."""
        try:
            handle = self.raw.hcs_open_compute_system(container_id)
        except errors.NotFound:
            return False
        self.raw.hcs_close_compute_system(handle)
        return True

    def _hcs_network_request(self, container_id: str, request_type: str, endpoint_id: str) -> None:
        handle = self.raw.hcs_open_compute_system(container_id)
        try:
            self.raw.hcs_modify_compute_system(
                handle,
                jsontext.dumps(
                    {"ResourceType": "Network", "RequestType": request_type, "Settings": guid.normalize(endpoint_id)},
                    separators=_COMPACT,
                ),
            )
        finally:
            self.raw.hcs_close_compute_system(handle)

    def list_namespaces(self) -> list[dict[str, Any]]:
        """V1 namespaces (``GET /namespaces/``) as plain documents."""
        return list(self._call("GET", "/namespaces/") or ())

    def list_policy_lists(self) -> list[dict[str, Any]]:
        """V1 policy lists (``GET /policylists/``: HNS's load balancers as HNSCall shows them) as
        plain documents; an HNS that does not serve them raises ``HnsError``."""
        return list(self._call("GET", "/policylists/") or ())

    def get_policy_list(self, id_: str) -> dict[str, Any] | None:
        """One policy list (``GET /policylists/<id>``); None when HNS has none of that ID."""
        try:
            return self._call("GET", f"/policylists/{id_}") or None
        except errors.NotFound:
            return None

    def delete_policy_list(self, id_: str, *, missing_ok: bool = False) -> bool:
        return _deleted(lambda: self._call("DELETE", f"/policylists/{id_}"), missing_ok)


def policy_request(action: str, policies: list[Mapping[str, Any]]) -> dict[str, Any]:
    """A modify request for an endpoint's (or network's) policies (hcsshim's
    ModifyEndpointSettingRequest with a PolicyEndpointRequest): ``action`` Add, Remove, Update
    (every policy of each type given is replaced) or Refresh."""
    return {"ResourceType": "Policy", "RequestType": action, "Settings": {"Policies": [dict(p) for p in policies]}}


def _namespace_request(action: str, endpoint_id: str) -> dict[str, Any]:
    return {"ResourceType": "Endpoint", "RequestType": action, "Settings": {"EndpointId": guid.normalize(endpoint_id)}}
