"""Windows handles a SYSTEM process may trust: opened without following a final reparse point
(``FILE_FLAG_OPEN_REPARSE_POINT``), judged on the open handle (owner and DACL read back as SDDL,
whose reading is ``basics.sddl``'s), pinned, proven to be where their path says (the handle's
final path), and turned into descriptors only once judged."""

from __future__ import annotations

import ctypes
import msvcrt
import os

from basics import win32sec as w32
from basics import win32types as wintypes
from basics.errors import UnsafePath
from basics.sddl import TRUSTED_SIDS, known, names, owner_of, sddl_writers


def check(ok, what: str) -> None:
    if not ok:
        err = ctypes.get_last_error()
        raise OSError(0, f"{what}: {ctypes.FormatError(err)}", None, err)


class SecurityDescriptor:
    """A self-relative security descriptor made from SDDL (LocalFree'd on close)."""

    def __init__(self, sddl: str) -> None:
        self.ptr = w32.PVOID()
        check(w32.StringToSD(sddl, 1, ctypes.byref(self.ptr), None), "ConvertStringSecurityDescriptor")

    def attributes(self) -> w32.SecurityAttributes:
        return w32.SecurityAttributes(ctypes.sizeof(w32.SecurityAttributes), self.ptr, False)

    def dacl(self) -> w32.PVOID:
        present, defaulted, acl = wintypes.BOOL(), wintypes.BOOL(), w32.PVOID()
        check(
            w32.GetSDDacl(self.ptr, ctypes.byref(present), ctypes.byref(acl), ctypes.byref(defaulted)),
            "GetSecurityDescriptorDacl",
        )
        return acl

    def close(self) -> None:
        if self.ptr:
            w32.LocalFree(self.ptr)
            self.ptr = w32.PVOID()


def own_sid() -> str:
    """The process user's SID (SYSTEM for a plugin the runtime started)."""
    token = wintypes.HANDLE()
    check(w32.OpenProcessToken(w32.GetCurrentProcess(), w32.TOKEN_QUERY, ctypes.byref(token)), "OpenProcessToken")
    try:
        buf = ctypes.create_string_buffer(256)
        size = wintypes.DWORD()
        check(w32.GetTokenInformation(token, w32.TOKEN_USER, buf, 256, ctypes.byref(size)), "GetTokenInformation")
        return _sid_string(w32.PVOID.from_buffer(buf).value)
    finally:
        w32.CloseHandle(token)


def _sid_string(psid) -> str:
    text = wintypes.LPWSTR()
    check(w32.ConvertSidToStringSidW(psid, ctypes.byref(text)), "ConvertSidToStringSid")
    try:
        return text.value
    finally:
        w32.LocalFree(ctypes.cast(text, w32.PVOID))


#: Who may write what the plugins trust: ``TRUSTED_SIDS`` and this process's user, read once.
TRUSTED: list[frozenset[str]] = []


def trusted() -> frozenset[str]:
    if not TRUSTED:
        TRUSTED.append(TRUSTED_SIDS | {own_sid()})
    return TRUSTED[0]


def handle_sddl(handle) -> str:
    """Owner and DACL of an open handle, as SDDL."""
    sd = w32.PVOID()
    rc = w32.GetSecurityInfo(
        handle, w32.SE_FILE_OBJECT, w32.OWNER_INFO | w32.DACL_INFO, None, None, None, None, ctypes.byref(sd)
    )
    if rc:
        raise OSError(0, f"GetSecurityInfo: {ctypes.FormatError(rc)}", None, rc)
    try:
        text = wintypes.LPWSTR()
        check(
            w32.SDToString(sd, 1, w32.OWNER_INFO | w32.DACL_INFO, ctypes.byref(text), None),
            "ConvertSecurityDescriptorToStringSecurityDescriptor",
        )
        try:
            return text.value
        finally:
            w32.LocalFree(ctypes.cast(text, w32.PVOID))
    finally:
        w32.LocalFree(sd)


def open_handle(path: str, access: int, disposition: int, flags: int, sddl: str | None, share: int = w32.SHARE_ALL):
    desc = SecurityDescriptor(sddl) if sddl else None
    try:
        sa = desc.attributes() if desc else None
        handle = w32.CreateFileW(
            path,
            access,
            share,
            ctypes.byref(sa) if sa else None,
            disposition,
            flags | w32.FLAG_OPEN_REPARSE_POINT,
            None,
        )
        err = ctypes.get_last_error()  # before LocalFree, another call through kernel32, may touch it
    finally:
        if desc:
            desc.close()
    if handle == w32.INVALID or handle is None:
        raise OSError(0, f"cannot open {path}: {ctypes.FormatError(err)}", path, err)
    return handle


def open_found(path: str, access: int, disposition: int, flags: int, sddl: str | None) -> int:
    """``open_handle``, with nothing at ``path`` (or on the way to it) said as FileNotFoundError
    naming it, as Python's own opens say it."""
    try:
        return open_handle(path, access, disposition, flags, sddl)
    except OSError as exc:
        if exc.winerror in (2, 3):  # ERROR_FILE_NOT_FOUND, ERROR_PATH_NOT_FOUND
            raise FileNotFoundError(2, f"{path} does not exist", path) from None
        raise


def file_info(handle) -> w32.FileInfo:
    info = w32.FileInfo()
    check(w32.GetFileInformationByHandle(handle, ctypes.byref(info)), "GetFileInformationByHandle")
    return info


def identity(info: w32.FileInfo) -> tuple[int, int, int]:
    """Volume serial and file index: the same file whatever name reaches it."""
    return info.dwVolumeSerialNumber, info.nFileIndexHigh, info.nFileIndexLow


def owner_problem(sddl: str) -> str | None:
    """Why the owner in ``sddl`` cannot be trusted, or None."""
    owner = owner_of(sddl)
    if owner and not known(owner, trusted()):
        return f"is owned by {names([owner])}, not by SYSTEM, Administrators or this user"
    return None


def _final_path(handle) -> str:
    buf = ctypes.create_unicode_buffer(1024)
    n = w32.GetFinalPathNameByHandleW(handle, buf, 1024, 0)
    check(n and n < 1024, "GetFinalPathNameByHandle")
    text = buf.value
    if text.startswith("\\\\?\\UNC\\"):
        return "\\\\" + text[8:]
    return text[4:] if text.startswith("\\\\?\\") else text


def reached(handle, path: str) -> None:
    """UnsafePath unless the open ``handle`` is at ``path`` itself: a junction or link on the way
    (one put there since the folders were judged) leads elsewhere, and the final path says so."""
    final = _final_path(handle)
    if os.path.normcase(final) != os.path.normcase(os.path.abspath(path)):
        raise UnsafePath(path, f"is reached through a junction or link (it is {final})", UnsafePath.LINK_FIX)


def pin(path: str, seen: tuple[int, int, int] | None = None):
    """A handle on the folder ``path`` that keeps it where it is while held: opened without
    share-delete (nobody can rename or delete it; Windows also refuses to rename a folder
    with anything open below it), proven a real folder reached through no junction (its
    final path is ``path``) and, given ``seen``, the very folder judged."""
    handle = open_handle(
        path, w32.READ_CONTROL, w32.OPEN_EXISTING, w32.FLAG_BACKUP_SEMANTICS, None, w32.SHARE_NO_DELETE
    )
    try:
        info = file_info(handle)
        if info.dwFileAttributes & w32.ATTR_REPARSE_POINT or not info.dwFileAttributes & w32.ATTR_DIRECTORY:
            raise UnsafePath(path, "is not a folder (a junction or link put in its place?)", UnsafePath.LINK_FIX)
        if seen is not None and identity(info) != seen:
            raise UnsafePath(path, "was replaced while it was being checked", "run install again")
        reached(handle, path)
    except BaseException:
        w32.CloseHandle(handle)
        raise
    return handle


def open_plain(path: str) -> int:
    """A read descriptor on what is at ``path``, a final reparse point never followed nor any
    on the way (``reached``); UnsafePath for a link, FileNotFoundError when nothing is there.
    The caller checks what it opened (``os.fstat``: a folder, a device)."""
    handle = open_found(path, w32.GENERIC_READ, w32.OPEN_EXISTING, w32.FLAG_BACKUP_SEMANTICS, None)
    try:
        if w32.GetFileType(handle) != w32.FILE_TYPE_DISK:  # NUL, CON, a pipe: nothing a file is
            raise UnsafePath(path, "is a device or pipe, not a regular file", "name the file itself")
        if file_info(handle).dwFileAttributes & w32.ATTR_REPARSE_POINT:
            raise UnsafePath(path, "is a reparse point (a junction or symbolic link)", UnsafePath.LINK_FIX)
        reached(handle, path)
    except BaseException:
        w32.CloseHandle(handle)
        raise
    return msvcrt.open_osfhandle(handle, os.O_RDONLY | os.O_BINARY)


def open_file(path: str, flags: int, sddl: str) -> int:
    if flags & os.O_APPEND:
        access = w32.FILE_APPEND_DATA
    elif flags & os.O_RDWR:
        access = w32.GENERIC_READ | w32.GENERIC_WRITE
    else:
        access = w32.GENERIC_READ
    disposition = w32.OPEN_ALWAYS if flags & os.O_CREAT else w32.OPEN_EXISTING
    handle = open_found(path, access | w32.READ_CONTROL, disposition, 0, sddl)
    try:
        info = file_info(handle)
        if info.dwFileAttributes & w32.ATTR_REPARSE_POINT:
            raise UnsafePath(path, "is a reparse point (a symbolic link)")
        if info.dwFileAttributes & w32.ATTR_DIRECTORY:
            raise UnsafePath(path, "is a folder")
        if info.nNumberOfLinks > 1:
            raise UnsafePath(path, f"has {info.nNumberOfLinks} hard links (another name could point at a file of ours)")
        why = owner_problem(handle_sddl(handle))
        if why:
            raise UnsafePath(path, why)
        reached(handle, path)
        return msvcrt.open_osfhandle(handle, (flags & (os.O_WRONLY | os.O_RDWR | os.O_APPEND)) | os.O_BINARY)
    except BaseException:
        w32.CloseHandle(handle)
        raise


def create_new(path: str, sddl: str | None = None, access: int = 0) -> int:
    """A write descriptor on a file this call creates (``CREATE_NEW``; the reparse-point flag,
    so a link at ``path`` is an error, never followed); it inherits its folder's DACL, or has
    ``sddl``'s (a protected one inherits nothing). ``access``: more rights on its handle
    (``DELETE``, to rename it by the handle: ``rename_handle``)."""
    try:
        handle = open_handle(path, w32.GENERIC_WRITE | access, w32.CREATE_NEW, 0, sddl)
    except OSError as exc:
        if exc.winerror in (80, w32.ERROR_ALREADY_EXISTS):  # ERROR_FILE_EXISTS
            raise FileExistsError(17, f"{path} exists", path) from None
        raise
    return msvcrt.open_osfhandle(handle, os.O_WRONLY | os.O_BINARY)


def rename_handle(handle, target: str, replace: bool = False) -> None:
    """Rename the file a handle (opened with DELETE) is on: that object, whatever its name now;
    ``replace``: over whatever ``target`` names (a link there is replaced, never followed)."""
    name = target.encode("utf-16-le")
    size = 20 + len(name) + 2  # FILE_RENAME_INFO on x64: ReplaceIfExists, (pad), RootDirectory, length, name
    buf = ctypes.create_string_buffer(size)
    ctypes.c_uint8.from_buffer(buf, 0).value = int(replace)
    ctypes.c_uint32.from_buffer(buf, 16).value = len(name)
    ctypes.memmove(ctypes.addressof(buf) + 20, name, len(name))
    check(w32.SetFileInformationByHandle(handle, w32.FILE_RENAME_INFO, buf, size), f"rename to {target}")


def apply_sddl(path: str, sddl: str, what: int, seen: tuple[int, int, int] | None = None) -> bool:
    """Set the owner and DACL of ``sddl`` on ``path``; False (nothing done) for a reparse point.
    ``seen``: the file a check found at ``path`` (``identity``), which this must still be:
    UnsafePath when a link or another folder was put in its place in between."""
    handle = open_handle(
        path, w32.READ_CONTROL | w32.WRITE_DAC | w32.WRITE_OWNER, w32.OPEN_EXISTING, w32.FLAG_BACKUP_SEMANTICS, None
    )
    desc = SecurityDescriptor(sddl)
    try:
        info = file_info(handle)
        if seen is not None and identity(info) != seen:
            raise UnsafePath(
                path,
                "was replaced while it was being checked (a junction or another folder put in its place)",
                "nothing was done through it: check who can write its parent",
            )
        if info.dwFileAttributes & w32.ATTR_REPARSE_POINT:
            return False
        owner, defaulted = w32.PVOID(), wintypes.BOOL()
        check(w32.GetSDOwner(desc.ptr, ctypes.byref(owner), ctypes.byref(defaulted)), "GetSecurityDescriptorOwner")
        rc = w32.SetSecurityInfo(handle, w32.SE_FILE_OBJECT, what, owner, None, desc.dacl(), None)
        if rc:
            raise OSError(0, f"SetSecurityInfo {path}: {ctypes.FormatError(rc)}", path, rc)
        return True
    finally:
        desc.close()
        w32.CloseHandle(handle)


def writers(path: str) -> str | None:
    handle = open_handle(path, w32.READ_CONTROL, w32.OPEN_EXISTING, w32.FLAG_BACKUP_SEMANTICS, None)
    try:
        if file_info(handle).dwFileAttributes & w32.ATTR_REPARSE_POINT:
            return "a reparse point (anyone who can write its parent can point it elsewhere)"
        who = sddl_writers(handle_sddl(handle), trusted())
    finally:
        w32.CloseHandle(handle)
    return names(who) if who else None


def enable_privileges() -> None:
    """SeTakeOwnership, SeRestore and SeBackup in this process's token (SYSTEM and elevated
    administrators hold them, disabled): taking a folder, or reading one whose DACL denies us."""
    token = wintypes.HANDLE()
    if not w32.OpenProcessToken(
        w32.GetCurrentProcess(), w32.TOKEN_ADJUST_PRIVILEGES | w32.TOKEN_QUERY, ctypes.byref(token)
    ):  # pragma: no cover - a token we may not adjust: the calls then say what they lack
        return
    try:
        for name in ("SeTakeOwnershipPrivilege", "SeRestorePrivilege", "SeBackupPrivilege"):
            luid = ctypes.c_int64()
            if not w32.LookupPrivilegeValueW(None, name, ctypes.byref(luid)):
                continue
            state = (ctypes.c_uint32 * 4)(1, luid.value & 0xFFFFFFFF, luid.value >> 32, 2)  # SE_PRIVILEGE_ENABLED
            w32.AdjustTokenPrivileges(token, False, state, 0, None, None)
    finally:
        w32.CloseHandle(token)
