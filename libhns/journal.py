"""A RawHns wrapper that appends one JSON line per raw call to a file (``LIBHNS_JOURNAL``).

The journal is how a run on real HNS and a run on the simulator are compared call by call, so it
sits at the raw surface and records documents as sent and received (parsed when they are JSON).
Each line is written with one ``os.write`` on an ``O_APPEND`` descriptor, so concurrent plugin
processes add whole lines. A journal that cannot be written (or is refused by ``safefs``: a link,
another user's file) is logged, never raised: the HNS call has already happened and failing it
now would leak what it created. ``_write`` is the one place a line goes: the self-test's
transcript recorder (``tools/wincni/selftest/transcript.py``) keeps the lines in memory instead.
"""

from __future__ import annotations

import logging
import os
import time
from datetime import datetime, timezone
from typing import Any, Callable, TypeVar

from basics import jsontext
from libhns import guid
from libhns.raw import Handle, RawHns, hcn_function

T = TypeVar("T")
_log = logging.getLogger(__name__)


def _document(text: str | None) -> Any:
    """JSON text as the object it encodes; other text as is; None or "" is null."""
    if not text:
        return None
    try:
        return jsontext.loads(text)
    except ValueError:
        return text


def _key(kind: str, handle: Handle) -> tuple[str, Any]:
    """A dict key for a handle of any backend (ctypes ints, simulator objects)."""
    try:
        hash(handle)
    except TypeError:
        return kind, id(handle)
    return kind, handle


def _guid(id: str | None) -> str | None:
    return None if id is None else str(id).upper()


class JournalBackend:
    """RawHns that forwards to ``inner`` and journals every call to ``path``."""

    def __init__(self, inner: RawHns, path: str | os.PathLike[str]) -> None:
        self.inner = inner
        self.path = os.fspath(path)
        # Handle -> object id, so calls made through a handle still name their object.
        self._ids: dict[tuple[str, Any], str] = {}

    # --- writing -------------------------------------------------------------------------------
    def _write(self, entry: dict[str, Any]) -> None:
        from basics.safefs import open_append

        line = (jsontext.dumps(entry, ensure_ascii=False, default=str) + "\n").encode("utf-8")
        try:
            fd = open_append(self.path)  # no link followed, another user's file refused, created 0600
            try:
                os.write(fd, line)
            finally:
                os.close(fd)
        except OSError as e:
            _log.warning("cannot append to HNS journal %s: %s", self.path, e)

    def _run(
        self,
        api: str,
        op: str,
        fn: Callable[[], T],
        *,
        id: str | None = None,
        request: str | None = None,
        method: str | None = None,
        path: str | None = None,
        response: Callable[[T], str | None] = lambda _: None,
    ) -> T:
        """Call ``fn``, journal it (also when it raises), and return its result."""
        entry: dict[str, Any] = {
            "ts": datetime.now(timezone.utc).isoformat(timespec="milliseconds"),
            "api": api,
            "op": op,
            "method": method,
            "path": path,
            "id": id,
            "request": _document(request),
            "hresult": None,
            "response": None,
            "ms": None,
        }
        start = time.perf_counter()
        try:
            result = fn()
        except BaseException as e:
            entry["ms"] = round((time.perf_counter() - start) * 1000, 3)
            hresult = getattr(e, "hresult", None)
            entry["hresult"] = None if hresult is None else f"0x{hresult:08X}"
            entry["error"] = str(e) or type(e).__name__
            self._write(entry)
            raise
        entry["ms"] = round((time.perf_counter() - start) * 1000, 3)
        entry["hresult"] = "0x00000000"
        entry["response"] = _document(response(result))
        self._write(entry)
        return result

    def _remember(self, kind: str, handle: Handle, id: str | None) -> None:
        if handle is not None and id:
            self._ids[_key(kind, handle)] = id

    def _learn(self, kind: str, handle: Handle, properties: str) -> str:
        """Take the object's ID from its properties (a create with GUID_NULL learns it here)."""
        doc = _document(properties)
        if isinstance(doc, dict):
            found = next((v for k, v in doc.items() if k.lower() == "id" and isinstance(v, str)), None)
            self._remember(kind, handle, found.upper() if found else None)
        return properties

    # --- HCN -----------------------------------------------------------------------------------
    def hcn_enumerate(self, kind: str, query: str) -> str:
        return self._run(
            "v2",
            hcn_function("Enumerate", kind),
            lambda: self.inner.hcn_enumerate(kind, query),
            request=query,
            response=lambda r: r,
        )

    def hcn_create(self, kind: str, id: str | None, settings: str, network: Handle | None = None) -> Handle:
        handle = self._run(
            "v2",
            hcn_function("Create", kind),
            lambda: self.inner.hcn_create(kind, id, settings, network),
            id=_guid(id),
            request=settings,
        )
        self._remember(kind, handle, _guid(id))
        return handle

    def hcn_open(self, kind: str, id: str) -> Handle:
        handle = self._run("v2", hcn_function("Open", kind), lambda: self.inner.hcn_open(kind, id), id=_guid(id))
        self._remember(kind, handle, _guid(id))
        return handle

    def hcn_modify(self, kind: str, handle: Handle, settings: str) -> None:
        self._run(
            "v2",
            hcn_function("Modify", kind),
            lambda: self.inner.hcn_modify(kind, handle, settings),
            id=self._ids.get(_key(kind, handle)),
            request=settings,
        )

    def hcn_query(self, kind: str, handle: Handle, query: str) -> str:
        properties = self._run(
            "v2",
            hcn_function("Query", kind),
            lambda: self.inner.hcn_query(kind, handle, query),
            id=self._ids.get(_key(kind, handle)),
            request=query,
            response=lambda r: r,
        )
        return self._learn(kind, handle, properties)

    def hcn_delete(self, kind: str, id: str) -> None:
        self._run("v2", hcn_function("Delete", kind), lambda: self.inner.hcn_delete(kind, id), id=_guid(id))

    def hcn_close(self, kind: str, handle: Handle) -> None:
        id = self._ids.pop(_key(kind, handle), None)
        self._run("v2", hcn_function("Close", kind), lambda: self.inner.hcn_close(kind, handle), id=id)

    # --- vmcompute.dll -------------------------------------------------------------------------
    def hns_call(self, method: str, path: str, request: str) -> str:
        return self._run(
            "v1",
            "HNSCall",
            lambda: self.inner.hns_call(method, path, request),
            method=method,
            path=path,
            id=guid.search(path),
            request=request,
            response=lambda r: r,
        )

    def hcs_open_compute_system(self, id: str) -> Handle:
        handle = self._run("v1", "HcsOpenComputeSystem", lambda: self.inner.hcs_open_compute_system(id), id=id)
        self._remember("ComputeSystem", handle, id)
        return handle

    def hcs_modify_compute_system(self, handle: Handle, configuration: str) -> None:
        self._run(
            "v1",
            "HcsModifyComputeSystem",
            lambda: self.inner.hcs_modify_compute_system(handle, configuration),
            id=self._ids.get(_key("ComputeSystem", handle)),
            request=configuration,
        )

    def hcs_close_compute_system(self, handle: Handle) -> None:
        id = self._ids.pop(_key("ComputeSystem", handle), None)
        self._run("v1", "HcsCloseComputeSystem", lambda: self.inner.hcs_close_compute_system(handle), id=id)
