"""The Win32 declarations the Windows side of ``safefs`` calls (kernel32, advapi32; no pywin32):
each function's prototype, the two structures it fills and the constants it passes. Importing this
module loads the DLLs, so only Windows imports it: elsewhere ``ctypes`` has no ``WinDLL`` and the
import fails at its first line."""

from __future__ import annotations

import ctypes
from ctypes import WinDLL

from basics import win32types as wintypes

_k32 = WinDLL("kernel32", use_last_error=True)
_adv = WinDLL("advapi32", use_last_error=True)

PVOID = ctypes.c_void_p


class SecurityAttributes(ctypes.Structure):
    _fields_ = [("nLength", wintypes.DWORD), ("lpSecurityDescriptor", PVOID), ("bInheritHandle", wintypes.BOOL)]


class FileInfo(ctypes.Structure):
    _fields_ = [
        ("dwFileAttributes", wintypes.DWORD),
        ("ftCreationTime", wintypes.FILETIME),
        ("ftLastAccessTime", wintypes.FILETIME),
        ("ftLastWriteTime", wintypes.FILETIME),
        ("dwVolumeSerialNumber", wintypes.DWORD),
        ("nFileSizeHigh", wintypes.DWORD),
        ("nFileSizeLow", wintypes.DWORD),
        ("nNumberOfLinks", wintypes.DWORD),
        ("nFileIndexHigh", wintypes.DWORD),
        ("nFileIndexLow", wintypes.DWORD),
    ]


def _sig(fn, restype, *argtypes):
    fn.restype, fn.argtypes = restype, list(argtypes)
    return fn


CreateFileW = _sig(
    _k32.CreateFileW,
    wintypes.HANDLE,
    wintypes.LPCWSTR,
    wintypes.DWORD,
    wintypes.DWORD,
    ctypes.POINTER(SecurityAttributes),
    wintypes.DWORD,
    wintypes.DWORD,
    wintypes.HANDLE,
)
CreateDirectoryW = _sig(_k32.CreateDirectoryW, wintypes.BOOL, wintypes.LPCWSTR, ctypes.POINTER(SecurityAttributes))
CloseHandle = _sig(_k32.CloseHandle, wintypes.BOOL, wintypes.HANDLE)
LocalFree = _sig(_k32.LocalFree, PVOID, PVOID)
GetFileInformationByHandle = _sig(
    _k32.GetFileInformationByHandle, wintypes.BOOL, wintypes.HANDLE, ctypes.POINTER(FileInfo)
)
StringToSD = _sig(
    _adv.ConvertStringSecurityDescriptorToSecurityDescriptorW,
    wintypes.BOOL,
    wintypes.LPCWSTR,
    wintypes.DWORD,
    ctypes.POINTER(PVOID),
    ctypes.POINTER(wintypes.ULONG),
)
SDToString = _sig(
    _adv.ConvertSecurityDescriptorToStringSecurityDescriptorW,
    wintypes.BOOL,
    PVOID,
    wintypes.DWORD,
    wintypes.DWORD,
    ctypes.POINTER(wintypes.LPWSTR),
    ctypes.POINTER(wintypes.ULONG),
)
GetSecurityInfo = _sig(
    _adv.GetSecurityInfo,
    wintypes.DWORD,
    wintypes.HANDLE,
    ctypes.c_int,
    wintypes.DWORD,
    ctypes.POINTER(PVOID),
    ctypes.POINTER(PVOID),
    ctypes.POINTER(PVOID),
    ctypes.POINTER(PVOID),
    ctypes.POINTER(PVOID),
)
SetSecurityInfo = _sig(
    _adv.SetSecurityInfo,
    wintypes.DWORD,
    wintypes.HANDLE,
    ctypes.c_int,
    wintypes.DWORD,
    PVOID,
    PVOID,
    PVOID,
    PVOID,
)
GetSDDacl = _sig(
    _adv.GetSecurityDescriptorDacl,
    wintypes.BOOL,
    PVOID,
    ctypes.POINTER(wintypes.BOOL),
    ctypes.POINTER(PVOID),
    ctypes.POINTER(wintypes.BOOL),
)
GetSDOwner = _sig(
    _adv.GetSecurityDescriptorOwner, wintypes.BOOL, PVOID, ctypes.POINTER(PVOID), ctypes.POINTER(wintypes.BOOL)
)
ConvertSidToStringSidW = _sig(_adv.ConvertSidToStringSidW, wintypes.BOOL, PVOID, ctypes.POINTER(wintypes.LPWSTR))
OpenProcessToken = _sig(
    _adv.OpenProcessToken, wintypes.BOOL, wintypes.HANDLE, wintypes.DWORD, ctypes.POINTER(wintypes.HANDLE)
)
GetTokenInformation = _sig(
    _adv.GetTokenInformation,
    wintypes.BOOL,
    wintypes.HANDLE,
    ctypes.c_int,
    PVOID,
    wintypes.DWORD,
    ctypes.POINTER(wintypes.DWORD),
)
GetCurrentProcess = _sig(_k32.GetCurrentProcess, wintypes.HANDLE)
SetFileInformationByHandle = _sig(
    _k32.SetFileInformationByHandle, wintypes.BOOL, wintypes.HANDLE, ctypes.c_int, PVOID, wintypes.DWORD
)
GetFinalPathNameByHandleW = _sig(
    _k32.GetFinalPathNameByHandleW, wintypes.DWORD, wintypes.HANDLE, wintypes.LPWSTR, wintypes.DWORD, wintypes.DWORD
)
GetFileType = _sig(_k32.GetFileType, wintypes.DWORD, wintypes.HANDLE)
LookupPrivilegeValueW = _sig(
    _adv.LookupPrivilegeValueW, wintypes.BOOL, wintypes.LPCWSTR, wintypes.LPCWSTR, ctypes.POINTER(ctypes.c_int64)
)
AdjustTokenPrivileges = _sig(
    _adv.AdjustTokenPrivileges,
    wintypes.BOOL,
    wintypes.HANDLE,
    wintypes.BOOL,
    PVOID,
    wintypes.DWORD,
    PVOID,
    PVOID,
)

INVALID = wintypes.HANDLE(-1).value
GENERIC_READ, GENERIC_WRITE = 0x80000000, 0x40000000
FILE_APPEND_DATA, READ_CONTROL, WRITE_DAC, WRITE_OWNER = 0x4, 0x20000, 0x40000, 0x80000
SHARE_ALL = 0x1 | 0x2 | 0x4
CREATE_NEW, OPEN_EXISTING, OPEN_ALWAYS = 1, 3, 4
FLAG_BACKUP_SEMANTICS, FLAG_OPEN_REPARSE_POINT = 0x02000000, 0x00200000
ATTR_DIRECTORY, ATTR_REPARSE_POINT = 0x10, 0x400
SE_FILE_OBJECT = 1
OWNER_INFO, DACL_INFO, PROTECTED_DACL, UNPROTECTED_DACL = 0x1, 0x4, 0x80000000, 0x20000000
ERROR_ALREADY_EXISTS = 183
TOKEN_QUERY, TOKEN_USER, TOKEN_ADJUST_PRIVILEGES = 0x8, 1, 0x20
DELETE, SHARE_NO_DELETE = 0x10000, 0x1 | 0x2
FILE_RENAME_INFO = 3
FILE_DISPOSITION_INFO = 4  # FILE_DISPOSITION_INFO: one BOOLEAN, DeleteFile
ACCESS_DENIED, SHARING_VIOLATION, FILE_TYPE_DISK = 5, 32, 1
