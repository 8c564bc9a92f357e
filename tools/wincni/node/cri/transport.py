"""The byte streams a CRI call runs over: the runtime's unix socket, or on Windows its named pipe
(containerd's ``\\\\.\\pipe\\containerd-containerd``), opened with ctypes as ``basics`` opens files.

The pipe is opened with the identification impersonation level only: whoever listens on that
name (a user may have created it before containerd started) cannot act as SYSTEM with our handle.
What it could do is lie about the pods; the sweep uses the list only to keep more, never to free.
A read waits with ``PeekNamedPipe`` polls and a write in the pipe's non-blocking mode, so the
deadline holds both ways without overlapped I/O.
"""

from __future__ import annotations

import time

from tools.wincni.node.cri.errors import Unreachable

UNIX, NPIPE = "unix://", "npipe://"
_POLL = 0.005


def parse_endpoint(endpoint: str) -> tuple[str, str]:
    """(scheme, path) of a runtime endpoint as crictl spells it: ``unix:///run/containerd/containerd.sock``,
    ``npipe:////./pipe/containerd-containerd`` (or ``npipe://\\\\.\\pipe\\...``); ValueError otherwise."""
    for scheme in (UNIX, NPIPE):
        if endpoint.startswith(scheme):
            path = endpoint[len(scheme) :]
            if scheme == NPIPE:
                path = path.replace("/", "\\")
                if not path.lower().startswith("\\\\.\\pipe\\"):
                    raise ValueError(f"{endpoint}: a named pipe is \\\\.\\pipe\\<name> (npipe:////./pipe/<name>)")
            if not path:
                raise ValueError(f"{endpoint}: no path after {scheme}")
            return scheme, path
    raise ValueError(f"{endpoint}: a runtime endpoint starts with {UNIX} or {NPIPE}")


def connect(endpoint: str, timeout: float) -> "UnixSocket | NamedPipe":
    scheme, path = parse_endpoint(endpoint)
    return UnixSocket(path, timeout) if scheme == UNIX else NamedPipe(path, timeout)


class UnixSocket:
    def __init__(self, path: str, timeout: float) -> None:
        import socket

        if not hasattr(socket, "AF_UNIX"):
            raise Unreachable(f"unix sockets are not available here (use {NPIPE})")
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        try:
            self.sock.connect(path)
        except OSError as exc:
            self.sock.close()
            raise Unreachable(f"cannot connect to {path}: {exc.strerror or exc}") from exc

    def send(self, data: bytes, deadline: float) -> None:
        left = deadline - time.monotonic()
        if left <= 0:
            raise Unreachable(f"the runtime at {self.path} did not take what we sent in time")
        self.sock.settimeout(left)  # since Python 3.5 the whole sendall's bound, not each write's
        try:
            self.sock.sendall(data)
        except TimeoutError as exc:
            raise Unreachable(f"the runtime at {self.path} did not take what we sent in time") from exc
        except OSError as exc:
            raise Unreachable(f"cannot write to {self.path}: {exc.strerror or exc}") from exc

    def recv(self, size: int, deadline: float) -> bytes:
        left = deadline - time.monotonic()
        if left <= 0:
            raise Unreachable(f"no answer on {self.path} in time")
        self.sock.settimeout(left)
        try:
            return self.sock.recv(size)
        except TimeoutError as exc:
            raise Unreachable(f"no answer on {self.path} in time") from exc
        except OSError as exc:
            raise Unreachable(f"cannot read from {self.path}: {exc.strerror or exc}") from exc

    def close(self) -> None:
        self.sock.close()


class NamedPipe:
    """A client end of a Windows named pipe, in byte mode."""

    def __init__(self, path: str, timeout: float) -> None:
        self.path = path
        self.api = _win32()
        deadline = time.monotonic() + timeout
        while True:
            handle = self.api.open(path)
            if handle is not None:
                self.handle = handle
                if not self.api.no_wait(handle):
                    error = self.api.last_error()
                    self.api.close(handle)
                    raise Unreachable(f"cannot make {path} non-blocking: Windows error {error}")
                return
            error = self.api.last_error()
            left = deadline - time.monotonic()
            if error != _ERROR_PIPE_BUSY or left <= 0:
                raise Unreachable(f"cannot open {path}: Windows error {error}")
            self.api.wait(path, max(1, int(left * 1000)))

    def send(self, data: bytes, deadline: float) -> None:
        """Written in the pipe's non-blocking mode: a write takes what fits in the pipe's buffer
        and returns, so a runtime that reads nothing holds us until ``deadline``, not for ever."""
        view = memoryview(data)
        while view:
            written = self.api.write(self.handle, bytes(view))
            if written is None:
                raise Unreachable(f"cannot write to {self.path}: Windows error {self.api.last_error()}")
            view = view[written:]
            if view:
                if time.monotonic() >= deadline:
                    raise Unreachable(f"the runtime at {self.path} did not take what we sent in time")
                time.sleep(_POLL)

    def recv(self, size: int, deadline: float) -> bytes:
        while True:
            available = self.api.peek(self.handle)
            if available is None:
                error = self.api.last_error()
                if error in (_ERROR_BROKEN_PIPE, _ERROR_PIPE_NOT_CONNECTED):
                    return b""
                raise Unreachable(f"cannot read from {self.path}: Windows error {error}")
            if available:
                data = self.api.read(self.handle, min(size, available))
                if data is None:
                    raise Unreachable(f"cannot read from {self.path}: Windows error {self.api.last_error()}")
                return data
            if time.monotonic() >= deadline:
                raise Unreachable(f"no answer on {self.path} in time")
            time.sleep(_POLL)

    def close(self) -> None:
        self.api.close(self.handle)


_ERROR_BROKEN_PIPE, _ERROR_PIPE_BUSY, _ERROR_PIPE_NOT_CONNECTED = 109, 231, 233


def _win32() -> "_Kernel32":
    try:
        return _Kernel32()
    except (AttributeError, OSError) as exc:
        raise Unreachable(f"named pipes are Windows only (use {UNIX}): {exc}") from exc


class _Kernel32:  # pragma: no cover - exercised in the Windows lane
    """The seven kernel32 calls a pipe client needs; each returns None on failure (``last_error``)."""

    _GENERIC_READ_WRITE = 0x80000000 | 0x40000000
    _OPEN_EXISTING = 3
    _SQOS_IDENTIFICATION = 0x00100000 | 0x00010000  # SECURITY_SQOS_PRESENT | SECURITY_IDENTIFICATION
    _PIPE_NOWAIT = 0x00000001

    def __init__(self) -> None:
        import ctypes

        from basics import win32types as w

        self.ctypes = ctypes
        k32 = ctypes.WinDLL("kernel32", use_last_error=True)

        def sig(fn, restype, *argtypes):  # ctypes' own objects
            fn.restype, fn.argtypes = restype, list(argtypes)
            return fn

        self._create = sig(
            k32.CreateFileW, w.HANDLE, w.LPCWSTR, w.DWORD, w.DWORD, ctypes.c_void_p, w.DWORD, w.DWORD, w.HANDLE
        )
        self._wait = sig(k32.WaitNamedPipeW, w.BOOL, w.LPCWSTR, w.DWORD)
        self._write = sig(
            k32.WriteFile, w.BOOL, w.HANDLE, ctypes.c_char_p, w.DWORD, ctypes.POINTER(w.DWORD), ctypes.c_void_p
        )
        self._read = sig(
            k32.ReadFile, w.BOOL, w.HANDLE, ctypes.c_void_p, w.DWORD, ctypes.POINTER(w.DWORD), ctypes.c_void_p
        )
        self._peek = sig(
            k32.PeekNamedPipe,
            w.BOOL,
            w.HANDLE,
            ctypes.c_void_p,
            w.DWORD,
            ctypes.c_void_p,
            ctypes.POINTER(w.DWORD),
            ctypes.c_void_p,
        )
        self._close = sig(k32.CloseHandle, w.BOOL, w.HANDLE)
        self._state = sig(
            k32.SetNamedPipeHandleState,
            w.BOOL,
            w.HANDLE,
            ctypes.POINTER(w.DWORD),
            ctypes.POINTER(w.DWORD),
            ctypes.POINTER(w.DWORD),
        )
        self.dword = w.DWORD

    def last_error(self) -> int:
        return self.ctypes.get_last_error()

    def open(self, path: str) -> int | None:
        handle = self._create(
            path, self._GENERIC_READ_WRITE, 0, None, self._OPEN_EXISTING, self._SQOS_IDENTIFICATION, None
        )
        return None if handle in (None, self.ctypes.c_void_p(-1).value) else handle

    def no_wait(self, handle: int) -> bool:
        """Byte reads, and writes that return at once (PIPE_READMODE_BYTE | PIPE_NOWAIT)."""
        return bool(self._state(handle, self.ctypes.byref(self.dword(self._PIPE_NOWAIT)), None, None))

    def wait(self, path: str, ms: int) -> None:
        self._wait(path, ms)

    def write(self, handle: int, data: bytes) -> int | None:
        done = self.dword(0)
        return done.value if self._write(handle, data, len(data), self.ctypes.byref(done), None) else None

    def peek(self, handle: int) -> int | None:
        available = self.dword(0)
        return available.value if self._peek(handle, None, 0, None, self.ctypes.byref(available), None) else None

    def read(self, handle: int, size: int) -> bytes | None:
        buf = self.ctypes.create_string_buffer(size)
        done = self.dword(0)
        return buf.raw[: done.value] if self._read(handle, buf, size, self.ctypes.byref(done), None) else None

    def close(self, handle: int) -> None:
        self._close(handle)
