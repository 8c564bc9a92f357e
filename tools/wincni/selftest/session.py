"""What a scenario calls HNS through: raw calls made the way hcsshim makes them, every object
created remembered, and removed again whatever happens.

The rule that keeps a real node safe lives here: the suite deletes only what this run created
(by the ID HNS gave it), names everything it creates with ``options.PREFIX``, and the leftover
check (``leftovers``) reads HNS for that prefix and for the IDs it made, before and after a run.
"""

from __future__ import annotations

from typing import Any, Callable

from basics import jsontext
from libhns.client import QUERY_V2, host_compute_query
from libhns.errors import HnsError
from libhns.raw import RawHns

#: A HostComputeQuery asking for the V1-shaped document (hns.v2.psm1 queries so after a create).
QUERY_V1 = jsontext.dumps({"SchemaVersion": {"Major": 1, "Minor": 0}}, separators=(",", ":"))
SCHEMA = {"Major": 2, "Minor": 0}
#: The V1 collection of each kind, for deleting what HNSCall created through HNSCall again.
_V1_COLLECTIONS = {
    "Network": "networks",
    "Endpoint": "endpoints",
    "Namespace": "namespaces",
    "LoadBalancer": "policylists",
}


def dumps(doc: Any) -> str:
    return jsontext.dumps(doc, separators=(",", ":"))


class Session:
    """One scenario's HNS: ``raw`` (the transcript's recorder), the objects it made (``owned``:
    (api, kind, id) in the order made) and its checks."""

    def __init__(self, raw: RawHns, prefix: str, adapter: str | None) -> None:
        self.raw, self.prefix, self.adapter = raw, prefix, adapter
        self.owned: list[tuple[str, str, str]] = []
        #: (kind, id) of everything made, removed or not: what the leftover check opens again.
        self.made: list[tuple[str, str]] = []
        self.checks: list[dict[str, Any]] = []

    def name(self, suffix: str) -> str:
        return self.prefix + suffix

    def check(self, what: str, ok: bool) -> bool:
        """A fact any HNS must show (a failed one fails the scenario); differences beyond these
        are the parity report's."""
        self.checks.append({"check": what, "ok": bool(ok)})
        return bool(ok)

    # --- HCN ---------------------------------------------------------------------------------
    def create(self, kind: str, doc: dict[str, Any], network: str | None = None) -> dict[str, Any]:
        """HcnCreate<Kind> with GUID_NULL, then its V2 properties (hcsshim's Create); raises HnsError."""
        parent = self.raw.hcn_open("Network", network) if network else None
        try:
            handle = self.raw.hcn_create(kind, None, dumps(doc), parent)
        finally:
            if parent is not None:
                self.raw.hcn_close("Network", parent)
        try:
            props = jsontext.loads(self.raw.hcn_query(kind, handle, QUERY_V2))
        finally:
            self.raw.hcn_close(kind, handle)
        self._own("v2", kind, str(props["ID"]))
        return props

    def query(self, kind: str, id: str, *, v1: bool = False) -> dict[str, Any]:
        handle = self.raw.hcn_open(kind, id)
        try:
            return jsontext.loads(self.raw.hcn_query(kind, handle, QUERY_V1 if v1 else QUERY_V2))
        finally:
            self.raw.hcn_close(kind, handle)

    def settle(self, kind: str, id: str, ready: Callable[[dict[str, Any]], bool], seconds: float = 10.0) -> bool:
        """Wait until the object's V2 document is ``ready`` (HNS sets an Overlay's provider address
        after the create returns: flanneld polls for it), asking HNS past the transcript so that
        both backends' transcripts hold the same calls; whether it got there is a check."""
        import time

        inner = getattr(self.raw, "inner", self.raw)
        deadline = time.monotonic() + seconds
        while True:
            handle = inner.hcn_open(kind, id)
            try:
                doc = jsontext.loads(inner.hcn_query(kind, handle, QUERY_V2))
            finally:
                inner.hcn_close(kind, handle)
            if ready(doc) or time.monotonic() > deadline:
                return self.check(f"the {kind.lower()} settled within {seconds:g} s", ready(doc))
            time.sleep(0.25)

    def modify(self, kind: str, id: str, request: dict[str, Any]) -> None:
        handle = self.raw.hcn_open(kind, id)
        try:
            self.raw.hcn_modify(kind, handle, dumps(request))
        finally:
            self.raw.hcn_close(kind, handle)

    def enumerate(self, kind: str, filter: dict[str, Any] | None = None) -> list[str]:
        text = self.raw.hcn_enumerate(kind, host_compute_query(filter))
        found = jsontext.loads(text) if text.strip() else None
        return [str(i).upper() for i in found or ()]

    def delete(self, kind: str, id: str) -> None:
        self.raw.hcn_delete(kind, id)
        self._forget(id)

    # --- HNSCall -------------------------------------------------------------------------------
    def v1(self, method: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        """HNSCall's envelope, parsed (``Success: false`` is an answer, not an exception)."""
        return jsontext.loads(self.raw.hns_call(method, path, "" if body is None else dumps(body)))

    def v1_create(self, kind: str, body: dict[str, Any]) -> dict[str, Any]:
        """``POST /<collection>/``; what it made is owned."""
        answer = self.v1("POST", f"/{_V1_COLLECTIONS[kind]}/", body)
        output = answer.get("Output")
        if answer.get("Success") and isinstance(output, dict) and output.get("ID"):
            self._own("v1", kind, str(output["ID"]))
        return answer

    def v1_delete(self, kind: str, id: str) -> dict[str, Any]:
        answer = self.v1("DELETE", f"/{_V1_COLLECTIONS[kind]}/{id}")
        if answer.get("Success"):
            self._forget(id)
        return answer

    # --- outcomes and cleanup ------------------------------------------------------------------
    def attempt(self, call: Callable[[], Any]) -> HnsError | None:
        """The call's refusal, or None when HNS took it."""
        try:
            call()
        except HnsError as e:
            return e
        return None

    def _own(self, api: str, kind: str, id: str) -> None:
        self.owned.append((api, kind, id.upper()))
        self.made.append((kind, id.upper()))

    def _forget(self, id: str) -> None:
        self.owned = [o for o in self.owned if o[2] != id.upper()]

    def cleanup(self) -> list[str]:
        """Remove what this scenario made and still owns, newest first, through the API that made
        it; what could not be removed, one line each (the leftover check looks again)."""
        problems = []
        for api, kind, id in reversed(list(self.owned)):
            try:
                if api == "v1":
                    answer = self.v1_delete(kind, id)
                    if not answer.get("Success") and "not found" not in str(answer.get("Error", "")).lower():
                        problems.append(f"{kind} {id}: {answer.get('Error')}")
                else:
                    self.delete(kind, id)
            except HnsError as e:
                if not _gone(e):
                    problems.append(f"{kind} {id}: {e}")
            self._forget(id)
        return problems


def _gone(error: HnsError) -> bool:
    from libhns.errors import NotFound

    return isinstance(error, NotFound)


def leftovers(raw: RawHns, prefix: str, made: list[tuple[str, str]]) -> list[str]:
    """What HNS still holds of this suite: networks and endpoints whose name has ``prefix``
    (HNSCall lists each kind whole in one call), and each namespace or load balancer of ``made``
    ((kind, id): they have no name) that can still be opened. Reads only."""
    found = []
    for collection, kind in (("networks", "network"), ("endpoints", "endpoint")):
        answer = jsontext.loads(raw.hns_call("GET", f"/{collection}/", ""))
        for obj in answer.get("Output") or ():
            if str(obj.get("Name") or "").startswith(prefix):
                found.append(f"{kind} {obj.get('Name')} ({obj.get('ID')})")
    for kind, id in made:
        if kind not in ("Namespace", "LoadBalancer"):
            continue
        try:
            raw.hcn_close(kind, raw.hcn_open(kind, id))
        except HnsError:
            continue
        found.append(f"{kind.lower()} {id}")
    return found
