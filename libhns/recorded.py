"""A read-only raw backend answering from HNS documents recorded on a node (``wincni bundle``).

``wincni doctor --replay`` runs the same clients and the same readers over it as over live HNS,
so a check replayed from a bundle reads what it read on the node. What was recorded is the
documents each API lists (``HcnQuery<Kind>Properties`` of every object, ``GET /<collection>/``),
HNS's version, and which of the containers the endpoints name HCS could open. A kind the
recording lacks is an error naming it, never an empty list (an empty list would read as "HNS has
none"); every call that would change HNS is refused.
"""

from __future__ import annotations

from basics import jsontext
from basics.jsonci import get_ci
from libhns import errors, guid

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Mapping

_COMPACT = (",", ":")
#: V1 collections the recording may hold, and what HNSCall serves under ``/<collection>/``.
V1_COLLECTIONS = ("networks", "endpoints", "namespaces", "policylists")


class Recording:
    """What a bundle recorded of HNS: ``version`` ({"Major", "Minor"}), ``v2`` (HCN kind -> its
    documents), ``v1`` (collection -> documents) and ``compute_systems`` (the container IDs HCS
    opened). A kind left out was not recorded."""

    def __init__(
        self,
        version: Mapping[str, Any] | None,
        v2: Mapping[str, list],
        v1: Mapping[str, list],
        compute_systems: list[str] | None,
    ) -> None:
        self.version, self.v2, self.v1, self.compute_systems = version, v2, v1, compute_systems


class _Handle:
    __slots__ = ("kind", "doc")

    def __init__(self, kind: str, doc: dict) -> None:
        self.kind, self.doc = kind, doc


def _missing(call: str, what: str) -> errors.HnsError:
    return errors.HnsError(call, None, "not recorded", f"the bundle holds no {what}")


def matches(kind: str, doc: Mapping[str, Any], key: str, want: Any) -> bool:
    """A HostComputeQuery filter entry (V1 field names) against a V2 document, as HNS reads it:
    an endpoint's ``VirtualNetwork`` is its ``HostComputeNetwork``; IDs compare as GUIDs."""
    low = key.casefold()
    if kind == "Endpoint" and low == "virtualnetwork":
        key, low = "HostComputeNetwork", "hostcomputenetwork"
    value = get_ci(doc, key)
    if low in ("id", "hostcomputenetwork") and isinstance(value, str) and isinstance(want, str):
        return guid.is_guid(value) and guid.is_guid(want) and guid.normalize(value) == guid.normalize(want)
    return value == want


class RecordedHns:
    """``libhns.raw.RawHns`` over a ``Recording``: reads answered, changes refused."""

    def __init__(self, recording: Recording) -> None:
        self.rec = recording
        self._ids: dict[tuple[str, str], dict[str, dict]] = {}

    def _by_id(self, api: str, name: str, docs: list, id_: str) -> dict | None:
        """The first of ``docs`` whose ID is the GUID ``id_`` (``matches``' rule), from an index of
        them built on first use: a bundle of a big node holds thousands of each kind."""
        index = self._ids.get((api, name))
        if index is None:
            index = self._ids[(api, name)] = {}
            for d in docs:
                found = guid.parse(get_ci(d, "ID")) if isinstance(d, dict) else None
                if found is not None:
                    index.setdefault(found, d)
        wanted = guid.parse(id_)
        return index.get(wanted) if wanted is not None else None

    def _docs(self, kind: str) -> list:
        docs = self.rec.v2.get(kind)
        if docs is None:
            raise _missing(f"HcnEnumerate{kind}s", f"V2 {kind} documents")
        return docs

    def hcn_enumerate(self, kind: str, query: str) -> str:
        q = jsontext.loads(query) if query.strip() else {}
        filt = get_ci(q, "Filter") if isinstance(q, dict) else None
        filt = jsontext.loads(filt) if isinstance(filt, str) and filt.strip() else {}
        ids = [
            str(get_ci(d, "ID"))
            for d in self._docs(kind)
            if isinstance(d, dict) and all(matches(kind, d, k, v) for k, v in dict(filt).items())
        ]
        return jsontext.dumps(ids, separators=_COMPACT)

    def hcn_open(self, kind: str, id: str) -> _Handle:
        found = self._by_id("v2", kind, self._docs(kind), str(id))
        if found is None:
            raise errors.from_hresult(f"HcnOpen{kind}", errors.ERROR_NOT_FOUND)
        return _Handle(kind, found)

    def hcn_query(self, kind: str, handle: _Handle, query: str) -> str:
        return jsontext.dumps(handle.doc, separators=_COMPACT)

    def hcn_close(self, kind: str, handle: Any) -> None:
        return None

    def hns_call(self, method: str, path: str, request: str) -> str:
        parts = [p for p in path.split("?")[0].split("/") if p]
        call = f"HNSCall {method} {path}"
        if method.upper() != "GET" or not parts:
            raise _refused(call)
        if parts == ["globals", "version"]:
            if self.rec.version is None:
                raise _missing(call, "HNS version")
            return _envelope(self.rec.version)
        coll = parts[0].casefold()
        docs = self.rec.v1.get(coll) if coll in V1_COLLECTIONS else None
        if docs is None or len(parts) > 2:
            raise _missing(call, f"V1 {coll} documents")
        if len(parts) == 1:
            return _envelope(docs)
        found = self._by_id("v1", coll, docs, parts[1])
        if found is None:
            return jsontext.dumps({"Success": False, "Error": "Element not found."}, separators=_COMPACT)
        return _envelope(found)

    def hcs_open_compute_system(self, id: str) -> str:
        if self.rec.compute_systems is None:
            raise _missing("HcsOpenComputeSystem", "compute systems")
        if id.casefold() not in {c.casefold() for c in self.rec.compute_systems}:
            raise errors.from_hresult("HcsOpenComputeSystem", errors.HCS_E_SYSTEM_NOT_FOUND)
        return id

    def hcs_close_compute_system(self, handle: Any) -> None:
        return None

    def hcn_create(self, kind: str, id: str | None, settings: str, network: Any = None) -> Any:
        raise _refused(f"HcnCreate{kind}")

    def hcn_modify(self, kind: str, handle: Any, settings: str) -> None:
        raise _refused(f"HcnModify{kind}")

    def hcn_delete(self, kind: str, id: str) -> None:
        raise _refused(f"HcnDelete{kind}")

    def hcs_modify_compute_system(self, handle: Any, configuration: str) -> None:
        raise _refused("HcsModifyComputeSystem")


def _envelope(output: Any) -> str:
    return jsontext.dumps({"Success": True, "Output": output}, separators=_COMPACT)


def _refused(call: str) -> errors.HnsError:
    return errors.from_hresult(call, errors.E_ACCESSDENIED, '{"Error":"a bundle is read-only"}')
