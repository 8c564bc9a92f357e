"""The Linux side of tests/fakedll/hnsbridge.c: runs each forwarded DLL call on ``libhns.sim``.

One connection is one Windows process. Its first message carries that process's
``LIBHNS_SIM_DIR`` / ``LIBHNS_SIM_VERSION`` / ``LIBHNS_SIM_FAULTS`` (defaults: the server's
environment), which configure the connection's own ``Simulator``, exactly as they would configure
the in-process one; the connection also owns the handles it opened (sent as small integers).
A simulator failure goes back as its HRESULT and ErrorRecord, as computenetwork.dll returns them.

    python -m tests.fakedll.hnsserver [PORT]     # serve until interrupted; prints the port
"""

from __future__ import annotations

import os
import re
import socketserver
import struct
import sys
import threading
import uuid
from collections.abc import Mapping
from typing import Any

from libhns.errors import HnsError
from libhns.sim import Simulator

NULL = 0xFFFFFFFF
SIM_VARIABLES = ("LIBHNS_SIM_DIR", "LIBHNS_SIM_VERSION", "LIBHNS_SIM_FAULTS")
_HCN = re.compile(
    r"Hcn(Enumerate|Create|Open|Modify|Query|Delete|Close)"
    r"(Network|Endpoint|Namespace|LoadBalancer)s?(?:Properties)?"
)


def read_fields(rfile: Any) -> list[bytes | None] | None:
    """One message: u32 count, then count (u32 length, bytes); None at end of stream."""
    head = rfile.read(4)
    if len(head) < 4:
        return None
    fields: list[bytes | None] = []
    for _ in range(struct.unpack("<I", head)[0]):
        (n,) = struct.unpack("<I", rfile.read(4))
        fields.append(None if n == NULL else rfile.read(n))
    return fields


def write_fields(wfile: Any, fields: list[bytes | None]) -> None:
    out = [struct.pack("<I", len(fields))]
    for f in fields:
        out.append(struct.pack("<I", NULL) if f is None else struct.pack("<I", len(f)) + f)
    wfile.write(b"".join(out))
    wfile.flush()


def _text(field: bytes | None) -> str | None:
    return None if field is None else field.decode("utf-16-le")


def _wide(text: str | None) -> bytes | None:
    return None if text is None else text.encode("utf-16-le")


class Session:
    """One Windows process's calls: its simulator and the handles it holds."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self.sim = Simulator.from_env(env)
        self._handles: dict[int, Any] = {}
        self._next = 0x100  # never reused: a closed handle's number stays invalid

    def _keep(self, handle: Any) -> int:
        number, self._next = self._next, self._next + 1
        self._handles[number] = handle
        return number

    def _handle(self, number: int) -> Any:
        return self._handles.get(number)

    def call(
        self, name: str, guid: bytes | None, handle: int, strings: list[str | None]
    ) -> tuple[int, int, str | None, str | None]:
        """(HRESULT, new handle, out-string, ErrorRecord) for one DLL export."""
        try:
            new, out = self._dispatch(
                name, None if guid is None else str(uuid.UUID(bytes_le=guid)).upper(), handle, strings
            )
        except HnsError as e:
            return e.hresult or 0x80004005, 0, None, e.record
        return 0, new, out, None

    def _dispatch(self, name: str, id: str | None, handle: int, s: list[str | None]) -> tuple[int, str | None]:
        sim = self.sim
        m = _HCN.fullmatch(name)
        if m:
            op, kind = m.groups()
            target = self._handle(handle)
            if op == "Enumerate":
                return 0, sim.hcn_enumerate(kind, s[0] or "")
            if op == "Create":
                return self._keep(sim.hcn_create(kind, id, s[0] or "", target if kind == "Endpoint" else None)), None
            if op == "Open":
                return self._keep(sim.hcn_open(kind, id)), None
            if op == "Query":
                return 0, sim.hcn_query(kind, target, s[0] or "")
            if op == "Modify":
                sim.hcn_modify(kind, target, s[0] or "")
            elif op == "Delete":
                sim.hcn_delete(kind, id)
            else:
                sim.hcn_close(kind, self._handles.pop(handle, None))
            return 0, None
        if name == "HNSCall":
            return 0, sim.hns_call(s[0] or "", s[1] or "", s[2] or "")
        if name == "HcsOpenComputeSystem":
            return self._keep(sim.hcs_open_compute_system(s[0] or "")), None
        if name == "HcsModifyComputeSystem":
            sim.hcs_modify_compute_system(self._handle(handle), s[0] or "")
            return 0, None
        if name == "HcsCloseComputeSystem":
            sim.hcs_close_compute_system(self._handles.pop(handle, None))
            return 0, None
        if name == "HcsGetComputeSystemProperties":
            return 0, sim.hcs_get_compute_system_properties(self._handle(handle), s[0] or "")
        if name == "HcsRegisterComputeSystemCallback":  # no notifications are sent: nothing to keep
            return self._keep(("callback", self._handle(handle))), None
        if name == "HcsUnregisterComputeSystemCallback":
            self._handles.pop(handle, None)
            return 0, None
        raise HnsError(name, 0x8007007F, None, f"fakehns: no export {name}")  # ERROR_PROC_NOT_FOUND


class _Handler(socketserver.StreamRequestHandler):
    disable_nagle_algorithm = True  # replies are several small writes: no 40 ms wait for an ACK each

    def handle(self) -> None:
        hello = read_fields(self.rfile)
        if not hello or hello[0] != b"hello":
            return
        env = dict(self.server.env)  # type: ignore[attr-defined]
        env.update({k: v for k, v in zip(SIM_VARIABLES, map(_text, hello[1:])) if v})
        session = Session(env)
        while (request := read_fields(self.rfile)) is not None:
            name, guid, handle, *strings = request
            self.server.calls.append((name or b"").decode())  # type: ignore[attr-defined]
            (number,) = struct.unpack("<Q", handle or bytes(8))
            hr, new, out, record = session.call((name or b"").decode(), guid, number, [_text(x) for x in strings])
            write_fields(
                self.wfile, [struct.pack("<I", hr & 0xFFFFFFFF), struct.pack("<Q", new), _wide(out), _wide(record)]
            )


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, port: int = 0, env: Mapping[str, str] | None = None) -> None:
        super().__init__(("127.0.0.1", port), _Handler)
        self.env = dict(os.environ if env is None else env)
        #: The name of every call any process made, in order: what each program asks of HNS,
        #: counted the same way for the Go reference plugins and ours (bench/windows.py).
        self.calls: list[str] = []

    @property
    def port(self) -> int:
        return self.server_address[1]

    def start(self) -> "Server":
        threading.Thread(target=self.serve_forever, daemon=True).start()
        return self


if __name__ == "__main__":
    server = Server(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
    print(server.port, flush=True)
    server.serve_forever()
