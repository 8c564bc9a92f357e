"""The Win32 C types our ctypes declarations use, as the very ctypes types ``ctypes.wintypes``
names them: that module defines about a hundred types and structures when imported, ~1.3 ms of
every pod command under Wine (the host-local store's lock and the folder walks need six)."""

import ctypes

DWORD = ULONG = ctypes.c_ulong
BOOL = ctypes.c_long
HANDLE = ctypes.c_void_p
LPWSTR = LPCWSTR = ctypes.c_wchar_p


class FILETIME(ctypes.Structure):
    _fields_ = [("dwLowDateTime", DWORD), ("dwHighDateTime", DWORD)]
