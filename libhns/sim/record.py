"""What every simulated HNS object shares: the stored record and its ID rules. The HRESULTs the
kinds answer with (missing, already there, attached or not) are libhns.errors' named codes.

A kind (``network.py``, ``endpoint.py``, ``namespace.py``, ``loadbalancer.py``,
``container.py``) is a ``StoredObject`` subclass holding HNS's rules for that object: how it is
created, changed, deleted, matched by a query and seen through each API. The state on disk keeps
one table per kind of ``{"doc": <V2 document>, <field>: …}``, ``FIELDS`` naming the rest.
"""

from __future__ import annotations

import os

from basics.jsonci import get_ci
from libhns import guid
from libhns.errors import E_INVALIDARG, ERROR_ALREADY_EXISTS, ERROR_NOT_FOUND, HCN_E_REQUEST_UNSUPPORTED
from libhns.sim.validate import Reject

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Mapping

    from libhns.sim.state import HnsState

GUID_NULL = "00000000-0000-0000-0000-000000000000"


def norm_id(value: Any) -> str:
    """Uppercase brace-less GUID, as HNS answers; anything that is not a GUID is E_INVALIDARG."""
    found = guid.parse(str(value))
    if found is None:
        raise Reject(E_INVALIDARG, f"{value!r} is not a GUID.")
    return found


def new_id() -> str:
    """A version-4 GUID, as HNS makes (os.urandom: no uuid module on the pod path)."""
    raw = bytearray(os.urandom(16))
    raw[6], raw[8] = (raw[6] & 0x0F) | 0x40, (raw[8] & 0x3F) | 0x80
    h = raw.hex().upper()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def requested_id(doc: Mapping[str, Any]) -> str | None:
    """The ID a create document asks for; none (HNS assigns one) when absent or GUID_NULL."""
    value = get_ci(doc, "ID")
    return None if not value or norm_id(value) == GUID_NULL else value


def without(doc: Mapping[str, Any], *keys: str) -> dict[str, Any]:
    """``doc`` less ``keys`` (lowercase), compared case-insensitively as HNS reads keys."""
    return {k: v for k, v in doc.items() if k.casefold() not in keys}


class StoredObject:
    """One stored HNS object: its V2 document (``doc``) and what HNS keeps beside it.

    Subclasses set ``KIND`` (the HCN name), ``TABLE`` (its table in the store), ``NOT_FOUND``
    (the HRESULT for a missing one) and ``FIELDS`` (the slots stored beside ``doc``, each also a
    keyword of ``__init__``). The defaults below are HNS's for a kind that keeps nothing beside
    its document (a load balancer: its rules are in its own methods).
    """

    __slots__ = ("doc",)
    KIND = ""
    TABLE = ""
    NOT_FOUND = ERROR_NOT_FOUND
    FIELDS: tuple[str, ...] = ()
    #: the kind whose open handle HcnCreate needs (an endpoint is created on a network)
    PARENT: str | None = None

    def __init__(self, doc: dict[str, Any]) -> None:
        self.doc = doc

    @property
    def id(self) -> str:
        return self.doc["ID"]

    #: the table key of an ID (HNS IDs are GUIDs, stored uppercase without braces)
    key = staticmethod(norm_id)

    @classmethod
    def load(cls, stored: Mapping[str, Any]) -> StoredObject:
        return cls(stored["doc"], **{name: stored[name] for name in cls.FIELDS if name in stored})

    def dump(self) -> dict[str, Any]:
        out = {"doc": self.doc}
        for name in self.FIELDS:
            out[name] = getattr(self, name)
        return out

    @classmethod
    def fresh_id(cls, st: HnsState, requested: str | None) -> str:
        """The ID a new object gets: the requested one unless taken (ERROR_ALREADY_EXISTS), else new."""
        if requested is None:
            return new_id()
        key = cls.key(requested)
        if key in st.table(cls.KIND):
            raise Reject(ERROR_ALREADY_EXISTS)
        return key

    # --- HNS's rules; a kind overrides what differs ---------------------------------------------
    @classmethod
    def hcn_create(cls, st: HnsState, doc: dict[str, Any], id_: str | None, parent: str | None) -> StoredObject:
        """``HcnCreate<Kind>``: the stored object, fields HNS assigns filled in."""
        rec = cls({**without(doc, "id"), "ID": cls.fresh_id(st, id_ or requested_id(doc))})
        return st.add(rec)

    def modify(self, st: HnsState, request: Mapping[str, Any]) -> None:
        """``HcnModify<Kind>``."""
        self.doc.update(without(request, "id"))

    def delete(self, st: HnsState) -> None:
        """What else goes with the object when it is deleted (the table entry is dropped after)."""

    def matches(self, st: HnsState, key: str, want: Any) -> bool:
        """Whether a HostComputeQuery filter entry (V1 field names, case-insensitive) holds."""
        if key.casefold() == "id":
            return isinstance(want, str) and self.id.upper() == guid.normalize(want)
        return get_ci(self.doc, key) == want

    def v2(self, st: HnsState) -> dict[str, Any]:
        """What ``HcnQuery<Kind>Properties`` answers."""
        return self.doc

    def v1(self, st: HnsState) -> dict[str, Any]:
        """What HNSCall (and a V1 query) answers."""
        return self.doc

    # --- HNSCall (V1): /<collection>/[<id>[/<action>]] --------------------------------------------
    #: its HNSCall collection (/networks/ …), if V1 serves the kind
    V1_COLLECTION = ""
    #: whether POST /<collection>/ may come without a body
    V1_CREATE_MAY_BE_EMPTY = False
    #: the POST /<collection>/<id>/<action> words the kind answers
    V1_ACTIONS: tuple[str, ...] = ()

    @classmethod
    def v1_create(cls, st: HnsState, doc: dict[str, Any]) -> StoredObject:
        """``POST /<collection>/``."""
        raise Reject(HCN_E_REQUEST_UNSUPPORTED)

    def v1_update(self, st: HnsState, doc: Mapping[str, Any]) -> None:
        """``POST /<collection>/<id>``."""
        raise Reject(HCN_E_REQUEST_UNSUPPORTED)

    def v1_action(self, st: HnsState, action: str, doc: Mapping[str, Any]) -> Any:
        """``POST /<collection>/<id>/<action>`` with ``action`` one of ``V1_ACTIONS``: the Output."""
        raise Reject(HCN_E_REQUEST_UNSUPPORTED)
