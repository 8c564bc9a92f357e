"""RawHns over the real DLLs through ctypes: computenetwork.dll (HCN) and vmcompute.dll (HNSCall, HCS).

Nothing is loaded at import; each DLL is opened on first use, so importing this module on Linux
is harmless. The libraries are constructor arguments, which is how the tests run this very code
against a small C library exporting the same functions (``wchar_t`` is 4 bytes there, and ctypes
handles that in ``c_wchar_p``/``wstring_at`` exactly as it handles 2 bytes on Windows).

Rules taken from hcsshim's generated bindings (hcn/zsyscall_windows.go): ``restype`` is ``c_long`` (``ctypes.HRESULT`` would raise
before the ErrorRecord could be read and freed), the value is masked to 32 bits and bit 31 means
failure; every returned string is a CoTaskMem allocation, read and freed exactly once; a non-empty
HCN ErrorRecord is an error even with S_OK; GUIDs go by pointer, GUID_NULL when HNS should assign.
"""

from __future__ import annotations

import ctypes
from ctypes import POINTER, byref, c_long, c_void_p, c_wchar_p

from libhns.raw import Handle, hcn_function

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from libhns.errors import HnsError

#: The export only wincni's stand-in DLLs have (tests/fakedll): what it answers names the stand-in.
STAND_IN_EXPORT = "WincniFakeHns"
_PSTR = POINTER(c_void_p)  # PWSTR* out-parameter, kept raw so it can be freed
_HANDLE_OUT = POINTER(c_void_p)
_FAILED = 0x80000000


class GUID(ctypes.Structure):
    """Windows GUID: Data1 u32, Data2 u16, Data3 u16, Data4 u8[8] — the layout of a UUID's ``bytes_le``."""

    _fields_ = [
        ("Data1", ctypes.c_uint32),
        ("Data2", ctypes.c_uint16),
        ("Data3", ctypes.c_uint16),
        ("Data4", ctypes.c_uint8 * 8),
    ]

    @classmethod
    def of(cls, id: str | None) -> GUID:
        """From a GUID string (any case, braces allowed); None is GUID_NULL."""
        if id is None:
            return cls()
        h = id.strip("{}").replace("-", "")
        return cls(int(h[:8], 16), int(h[8:12], 16), int(h[12:16], 16), (ctypes.c_uint8 * 8)(*bytes.fromhex(h[16:])))


_PGUID = POINTER(GUID)

#: HCN operation -> (argtypes without the trailing ErrorRecord, has ErrorRecord).
_HCN_SIGNATURES: dict[str, tuple[list[Any], bool]] = {
    "Enumerate": ([c_wchar_p, _PSTR], True),
    "Create": ([_PGUID, c_wchar_p, _HANDLE_OUT], True),
    "Open": ([_PGUID, _HANDLE_OUT], True),
    "Modify": ([c_void_p, c_wchar_p], True),
    "Query": ([c_void_p, c_wchar_p, _PSTR], True),
    "Delete": ([_PGUID], True),
    "Close": ([c_void_p], False),
}

_VMCOMPUTE_SIGNATURES: dict[str, list[Any]] = {
    "HNSCall": [c_wchar_p, c_wchar_p, c_wchar_p, _PSTR],
    "HcsOpenComputeSystem": [c_wchar_p, _HANDLE_OUT, _PSTR],
    "HcsModifyComputeSystem": [c_void_p, c_wchar_p, _PSTR],
    "HcsCloseComputeSystem": [c_void_p],
}


def _hcn_argtypes(op: str, kind: str) -> list[Any]:
    args, has_record = _HCN_SIGNATURES[op]
    if op == "Create" and kind == "Endpoint":
        args = [c_void_p, *args]  # HcnCreateEndpoint takes the network handle first
    return [*args, _PSTR] if has_record else list(args)


#: LoadLibraryEx's LOAD_LIBRARY_SEARCH_SYSTEM32: the HNS DLLs come from System32 only, as
#: hcsshim loads them (NewLazySystemDLL), never from the executable's folders that the default
#: search tries first (two failed opens per DLL on every pod command).
_SYSTEM32 = 0x800


def _windll(name: str) -> Any:
    loader = getattr(ctypes, "WinDLL", None)
    if loader is None:
        raise OSError(f"{name} exists only on Windows; use LIBHNS_BACKEND=sim here")
    return loader(name, winmode=_SYSTEM32)


def _default_ole32() -> Any:
    try:
        return _windll("api-ms-win-core-com-l1-1-0.dll")
    except OSError:
        return _windll("ole32.dll")


def _failed(hr: int) -> bool:
    return bool(hr & _FAILED)


class CtypesBackend:
    """RawHns through ctypes; pass library objects to substitute the DLLs (tests pass a CDLL)."""

    def __init__(self, computenetwork: Any = None, vmcompute: Any = None, ole32: Any = None) -> None:
        self._libs: dict[str, Any] = {"computenetwork": computenetwork, "vmcompute": vmcompute, "ole32": ole32}
        self._functions: dict[str, Any] = {}

    # --- loading -------------------------------------------------------------------------------
    def _lib(self, key: str) -> Any:
        lib = self._libs[key]
        if lib is None:
            lib = _default_ole32() if key == "ole32" else _windll(f"{key}.dll")
            self._libs[key] = lib
        return lib

    def _function(self, key: str, name: str, argtypes: list[Any], restype: Any = c_long) -> Any:
        fn = self._functions.get(name)
        if fn is None:
            fn = getattr(self._lib(key), name)
            fn.argtypes = argtypes
            fn.restype = restype
            self._functions[name] = fn
        return fn

    def _hcn(self, op: str, kind: str) -> tuple[str, Any]:
        name = hcn_function(op, kind)
        return name, self._function("computenetwork", name, _hcn_argtypes(op, kind))

    def _vmcompute(self, name: str) -> Any:
        return self._function("vmcompute", name, _VMCOMPUTE_SIGNATURES[name])

    def stand_in(self) -> str | None:
        """What computenetwork.dll answers to ``STAND_IN_EXPORT`` (a stand-in naming itself), or
        None for the real DLL, which has no such export: how a caller that must reach real HNS
        tells the Wine lane's fake apart, by asking, never by guessing. OSError where the DLL
        cannot be loaded."""
        try:
            marker = getattr(self._lib("computenetwork"), STAND_IN_EXPORT)
        except AttributeError:
            return None
        marker.argtypes, marker.restype = [], c_wchar_p
        return marker() or ""

    # --- CoTaskMem strings ---------------------------------------------------------------------
    def _take(self, pointer: c_void_p) -> str | None:
        """Read a returned PWSTR and free it; None for NULL."""
        address = pointer.value
        if not address:
            return None
        pointer.value = None
        try:
            return ctypes.wstring_at(address)
        finally:
            self._function("ole32", "CoTaskMemFree", [c_void_p], None)(address)

    def _take_all(self, *pointers: c_void_p) -> list[str | None]:
        """Read and free every out-string, even if reading one of them fails."""
        texts: list[str | None] = []
        try:
            for pointer in pointers:
                texts.append(self._take(pointer))
        finally:
            for pointer in pointers:
                if pointer.value:
                    self._take(pointer)
        return texts

    @staticmethod
    def _error(call: str, hr: int, record: str | None) -> HnsError:
        from libhns.errors import from_hresult

        return from_hresult(call, hr, record)

    def _call_hcn(self, op: str, kind: str, *args: Any, output: bool = False) -> str | None:
        """Call an Hcn* function whose last parameters are [PWSTR* out,] PWSTR* ErrorRecord."""
        name, fn = self._hcn(op, kind)
        out, record = c_void_p(), c_void_p()
        outs = (out, record) if output else (record,)
        try:
            hr = fn(*args, *(byref(p) for p in outs)) & 0xFFFFFFFF
        finally:
            texts = self._take_all(*outs)
        error_text = texts[-1]
        if _failed(hr) or (error_text and error_text.strip()):
            raise self._error(name, hr, error_text)
        return texts[0] if output else None

    # --- HCN -----------------------------------------------------------------------------------
    def hcn_enumerate(self, kind: str, query: str) -> str:
        return self._call_hcn("Enumerate", kind, query, output=True) or ""

    def hcn_create(self, kind: str, id: str | None, settings: str, network: Handle | None = None) -> Handle:
        if (kind == "Endpoint") != (network is not None):
            raise ValueError("HcnCreateEndpoint needs an open network handle; other kinds take none")
        handle = c_void_p()
        lead = (network,) if kind == "Endpoint" else ()
        self._call_hcn("Create", kind, *lead, byref(GUID.of(id)), settings, byref(handle))
        return handle.value

    def hcn_open(self, kind: str, id: str) -> Handle:
        handle = c_void_p()
        self._call_hcn("Open", kind, byref(GUID.of(id)), byref(handle))
        return handle.value

    def hcn_modify(self, kind: str, handle: Handle, settings: str) -> None:
        self._call_hcn("Modify", kind, handle, settings)

    def hcn_query(self, kind: str, handle: Handle, query: str) -> str:
        return self._call_hcn("Query", kind, handle, query, output=True) or ""

    def hcn_delete(self, kind: str, id: str) -> None:
        self._call_hcn("Delete", kind, byref(GUID.of(id)))

    def hcn_close(self, kind: str, handle: Handle) -> None:
        # A failed close has no remedy and must not mask the error that led to it.
        if handle:
            self._hcn("Close", kind)[1](handle)

    # --- vmcompute.dll -------------------------------------------------------------------------
    def _call_vmcompute(self, name: str, call: str, *args: Any) -> str | None:
        """Call a vmcompute function whose last parameter is a PWSTR* result; only the HRESULT fails it."""
        result = c_void_p()
        try:
            hr = self._vmcompute(name)(*args, byref(result)) & 0xFFFFFFFF
        finally:
            (text,) = self._take_all(result)
        if _failed(hr):
            raise self._error(call, hr, text)
        return text

    def hns_call(self, method: str, path: str, request: str) -> str:
        return self._call_vmcompute("HNSCall", f"HNSCall {method} {path}", method, path, request or "") or ""

    def hcs_open_compute_system(self, id: str) -> Handle:
        handle = c_void_p()
        self._call_vmcompute("HcsOpenComputeSystem", "HcsOpenComputeSystem", id, byref(handle))
        return handle.value

    def hcs_modify_compute_system(self, handle: Handle, configuration: str) -> None:
        self._call_vmcompute("HcsModifyComputeSystem", "HcsModifyComputeSystem", handle, configuration)

    def hcs_close_compute_system(self, handle: Handle) -> None:
        if handle:
            self._vmcompute("HcsCloseComputeSystem")(handle)
