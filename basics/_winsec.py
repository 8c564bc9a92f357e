"""``safefs`` on Windows: the Win32 security API over ctypes (advapi32, kernel32; no pywin32).

Security descriptors are built from SDDL strings and read back as SDDL, so what a folder allows
is decided by ``sddl_writers``, a pure function the tests run on any OS. Handles are opened with
``FILE_FLAG_OPEN_REPARSE_POINT``, so a junction or symlink planted in our place is examined
itself, never followed, and every check runs on the handle that is then used.
"""

from __future__ import annotations

# Who may write what the plugins trust: SYSTEM, Administrators, TrustedInstaller.
TRUSTED_SIDS = frozenset(
    {"SY", "BA", "S-1-5-18", "S-1-5-32-544", "S-1-5-80-956008885-3418522649-1831038044-1853292631-2271478464"}
)
_ALIASES = {"SY": "S-1-5-18", "BA": "S-1-5-32-544"}
# Rights letters of file SDDL and the access mask bits each stands for.
_RIGHTS = {
    "GA": 0x10000000,
    "GW": 0x40000000,
    "GR": 0x80000000,
    "GX": 0x20000000,
    "FA": 0x1F01FF,
    "FW": 0x120116,
    "FR": 0x120089,
    "FX": 0x1200A0,
    "SD": 0x10000,
    "WD": 0x40000,
    "WO": 0x80000,
    "RC": 0x20000,
    "CC": 0x1,
    "DC": 0x2,
    "LC": 0x4,
    "SW": 0x8,
    "RP": 0x10,
    "WP": 0x20,
    "DT": 0x40,
    "LO": 0x80,
    "CR": 0x100,
}
# Write data / add file, append / add subfolder, delete child, DELETE, WRITE_DAC, WRITE_OWNER, generic.
_WRITE = 0x2 | 0x4 | 0x40 | 0x10000 | 0x40000 | 0x80000 | 0x40000000 | 0x10000000


def rights_mask(text: str) -> int:
    """An SDDL rights field (``0x1301bf`` or letters such as ``FA``, ``GRGX``) as a mask."""
    if text.lower().startswith("0x"):
        return int(text, 16)
    return sum(_RIGHTS.get(text[i : i + 2], 0) for i in range(0, len(text), 2))


def sddl_writers(sddl: str, trusted: frozenset[str] = TRUSTED_SIDS) -> list[str]:
    """The SIDs besides ``trusted`` that an SDDL's DACL lets write (allow ACEs that apply to the
    object itself, i.e. not inherit-only); the owner when it is not trusted comes first."""
    owner = _owner(sddl)
    out = [] if owner is None or _known(owner, trusted) else [owner]
    dacl = sddl.split("D:", 1)[1] if "D:" in sddl else ""
    dacl = dacl.split("S:", 1)[0]
    if "NO_ACCESS_CONTROL" in dacl:  # a NULL DACL: everyone has full control
        out.append("WD")
    for ace in _aces(dacl):
        fields = ace.split(";", 6)
        if len(fields) < 6:
            continue
        kind, flags, rights, sid = fields[0], fields[1], fields[2], fields[5]
        if kind not in ("A", "XA") or "IO" in flags or _known(sid, trusted):
            continue
        if rights_mask(rights) & _WRITE and sid not in out:
            out.append(sid)
    return out


def _owner(sddl: str) -> str | None:
    """The ``O:`` SID: up to the next ``G:``/``D:``/``S:`` part (string methods: ``re`` would be
    one more import, and a pattern compile, on every pod command)."""
    start = sddl.find("O:")
    if start < 0:
        return None
    rest = sddl[start + 2 :]
    ends = [i for i in (rest.find("G:", 1), rest.find("D:", 1), rest.find("S:", 1)) if i > 0]
    owner = rest[: min(ends)] if ends else rest
    return owner if owner and ":" not in owner else None


def _aces(dacl: str) -> list[str]:
    """The ACEs of an SDDL DACL, ``(...)`` at the top level: a conditional ACE's own
    parenthesised expression stays inside its ACE (and the ACE is judged by its rights)."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(dacl):
        if ch == "(":
            depth += 1
            if depth == 1:
                start = i + 1
        elif ch == ")" and depth:
            depth -= 1
            if depth == 0:
                out.append(dacl[start:i])
    return out


def _known(sid: str, trusted: frozenset[str]) -> bool:
    return sid in trusted or _ALIASES.get(sid, "") in trusted


def names(sids: list[str]) -> str:
    short = {
        "WD": "Everyone",
        "BU": "Users",
        "AU": "Authenticated Users",
        "IU": "Interactive users",
        "S-1-1-0": "Everyone",
        "S-1-5-32-545": "Users",
        "S-1-5-11": "Authenticated Users",
        "CO": "CREATOR OWNER",
        "OW": "OWNER RIGHTS",
    }
    return ", ".join(short.get(s, s) for s in sids)


try:  # the Win32 part: only on Windows (the pure helpers above are tested everywhere)
    import ctypes

    from basics import win32types as wintypes

    _k32 = ctypes.WinDLL("kernel32", use_last_error=True)
    _adv = ctypes.WinDLL("advapi32", use_last_error=True)
except (AttributeError, OSError):
    _k32 = _adv = None

if _k32 is not None:  # pragma: no cover - exercised in the Windows lane
    import msvcrt
    import os

    from basics.errors import UnsafePath

    _PVOID = ctypes.c_void_p

    class _SecurityAttributes(ctypes.Structure):
        _fields_ = [("nLength", wintypes.DWORD), ("lpSecurityDescriptor", _PVOID), ("bInheritHandle", wintypes.BOOL)]

    class _FileInfo(ctypes.Structure):
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

    _CreateFileW = _sig(
        _k32.CreateFileW,
        wintypes.HANDLE,
        wintypes.LPCWSTR,
        wintypes.DWORD,
        wintypes.DWORD,
        ctypes.POINTER(_SecurityAttributes),
        wintypes.DWORD,
        wintypes.DWORD,
        wintypes.HANDLE,
    )
    _CreateDirectoryW = _sig(
        _k32.CreateDirectoryW, wintypes.BOOL, wintypes.LPCWSTR, ctypes.POINTER(_SecurityAttributes)
    )
    _CloseHandle = _sig(_k32.CloseHandle, wintypes.BOOL, wintypes.HANDLE)
    _LocalFree = _sig(_k32.LocalFree, _PVOID, _PVOID)
    _GetFileInformationByHandle = _sig(
        _k32.GetFileInformationByHandle, wintypes.BOOL, wintypes.HANDLE, ctypes.POINTER(_FileInfo)
    )
    _StringToSD = _sig(
        _adv.ConvertStringSecurityDescriptorToSecurityDescriptorW,
        wintypes.BOOL,
        wintypes.LPCWSTR,
        wintypes.DWORD,
        ctypes.POINTER(_PVOID),
        ctypes.POINTER(wintypes.ULONG),
    )
    _SDToString = _sig(
        _adv.ConvertSecurityDescriptorToStringSecurityDescriptorW,
        wintypes.BOOL,
        _PVOID,
        wintypes.DWORD,
        wintypes.DWORD,
        ctypes.POINTER(wintypes.LPWSTR),
        ctypes.POINTER(wintypes.ULONG),
    )
    _GetSecurityInfo = _sig(
        _adv.GetSecurityInfo,
        wintypes.DWORD,
        wintypes.HANDLE,
        ctypes.c_int,
        wintypes.DWORD,
        ctypes.POINTER(_PVOID),
        ctypes.POINTER(_PVOID),
        ctypes.POINTER(_PVOID),
        ctypes.POINTER(_PVOID),
        ctypes.POINTER(_PVOID),
    )
    _SetSecurityInfo = _sig(
        _adv.SetSecurityInfo,
        wintypes.DWORD,
        wintypes.HANDLE,
        ctypes.c_int,
        wintypes.DWORD,
        _PVOID,
        _PVOID,
        _PVOID,
        _PVOID,
    )
    _GetSDDacl = _sig(
        _adv.GetSecurityDescriptorDacl,
        wintypes.BOOL,
        _PVOID,
        ctypes.POINTER(wintypes.BOOL),
        ctypes.POINTER(_PVOID),
        ctypes.POINTER(wintypes.BOOL),
    )
    _GetSDOwner = _sig(
        _adv.GetSecurityDescriptorOwner, wintypes.BOOL, _PVOID, ctypes.POINTER(_PVOID), ctypes.POINTER(wintypes.BOOL)
    )
    _ConvertSidToStringSidW = _sig(_adv.ConvertSidToStringSidW, wintypes.BOOL, _PVOID, ctypes.POINTER(wintypes.LPWSTR))
    _OpenProcessToken = _sig(
        _adv.OpenProcessToken, wintypes.BOOL, wintypes.HANDLE, wintypes.DWORD, ctypes.POINTER(wintypes.HANDLE)
    )
    _GetTokenInformation = _sig(
        _adv.GetTokenInformation,
        wintypes.BOOL,
        wintypes.HANDLE,
        ctypes.c_int,
        _PVOID,
        wintypes.DWORD,
        ctypes.POINTER(wintypes.DWORD),
    )
    _GetCurrentProcess = _sig(_k32.GetCurrentProcess, wintypes.HANDLE)
    _SetFileInformationByHandle = _sig(
        _k32.SetFileInformationByHandle, wintypes.BOOL, wintypes.HANDLE, ctypes.c_int, _PVOID, wintypes.DWORD
    )
    _GetFinalPathNameByHandleW = _sig(
        _k32.GetFinalPathNameByHandleW, wintypes.DWORD, wintypes.HANDLE, wintypes.LPWSTR, wintypes.DWORD, wintypes.DWORD
    )
    _GetFileType = _sig(_k32.GetFileType, wintypes.DWORD, wintypes.HANDLE)
    _LookupPrivilegeValueW = _sig(
        _adv.LookupPrivilegeValueW, wintypes.BOOL, wintypes.LPCWSTR, wintypes.LPCWSTR, ctypes.POINTER(ctypes.c_int64)
    )
    _AdjustTokenPrivileges = _sig(
        _adv.AdjustTokenPrivileges,
        wintypes.BOOL,
        wintypes.HANDLE,
        wintypes.BOOL,
        _PVOID,
        wintypes.DWORD,
        _PVOID,
        _PVOID,
    )

    _INVALID = wintypes.HANDLE(-1).value
    _GENERIC_READ, _GENERIC_WRITE = 0x80000000, 0x40000000
    _FILE_APPEND_DATA, _READ_CONTROL, _WRITE_DAC, _WRITE_OWNER = 0x4, 0x20000, 0x40000, 0x80000
    _SHARE_ALL = 0x1 | 0x2 | 0x4
    _CREATE_NEW, _OPEN_EXISTING, _OPEN_ALWAYS = 1, 3, 4
    _FLAG_BACKUP_SEMANTICS, _FLAG_OPEN_REPARSE_POINT = 0x02000000, 0x00200000
    _ATTR_DIRECTORY, _ATTR_REPARSE_POINT = 0x10, 0x400
    _SE_FILE_OBJECT = 1
    _OWNER_INFO, _DACL_INFO, _PROTECTED_DACL, _UNPROTECTED_DACL = 0x1, 0x4, 0x80000000, 0x20000000
    _ERROR_ALREADY_EXISTS = 183
    _TOKEN_QUERY, _TOKEN_USER, _TOKEN_ADJUST_PRIVILEGES = 0x8, 1, 0x20
    _DELETE, _SHARE_NO_DELETE = 0x10000, 0x1 | 0x2
    _FILE_RENAME_INFO = 3
    _ACCESS_DENIED, _SHARING_VIOLATION, _FILE_TYPE_DISK = 5, 32, 1

    def _check(ok, what: str) -> None:
        if not ok:
            err = ctypes.get_last_error()
            raise OSError(0, f"{what}: {ctypes.FormatError(err)}", None, err)

    class _Descriptor:
        """A self-relative security descriptor made from SDDL (LocalFree'd on close)."""

        def __init__(self, sddl: str) -> None:
            self.ptr = _PVOID()
            _check(_StringToSD(sddl, 1, ctypes.byref(self.ptr), None), "ConvertStringSecurityDescriptor")

        def attributes(self) -> _SecurityAttributes:
            return _SecurityAttributes(ctypes.sizeof(_SecurityAttributes), self.ptr, False)

        def dacl(self) -> _PVOID:
            present, defaulted, acl = wintypes.BOOL(), wintypes.BOOL(), _PVOID()
            _check(
                _GetSDDacl(self.ptr, ctypes.byref(present), ctypes.byref(acl), ctypes.byref(defaulted)),
                "GetSecurityDescriptorDacl",
            )
            return acl

        def close(self) -> None:
            if self.ptr:
                _LocalFree(self.ptr)
                self.ptr = _PVOID()

    def _own_sid() -> str:
        """The process user's SID (SYSTEM for a plugin the runtime started)."""
        token = wintypes.HANDLE()
        _check(_OpenProcessToken(_GetCurrentProcess(), _TOKEN_QUERY, ctypes.byref(token)), "OpenProcessToken")
        try:
            buf = ctypes.create_string_buffer(256)
            size = wintypes.DWORD()
            _check(_GetTokenInformation(token, _TOKEN_USER, buf, 256, ctypes.byref(size)), "GetTokenInformation")
            return _sid_string(_PVOID.from_buffer(buf).value)
        finally:
            _CloseHandle(token)

    def _sid_string(psid) -> str:
        text = wintypes.LPWSTR()
        _check(_ConvertSidToStringSidW(psid, ctypes.byref(text)), "ConvertSidToStringSid")
        try:
            return text.value
        finally:
            _LocalFree(ctypes.cast(text, _PVOID))

    _TRUSTED: list[frozenset[str]] = []

    def _trusted() -> frozenset[str]:
        if not _TRUSTED:
            _TRUSTED.append(TRUSTED_SIDS | {_own_sid()})
        return _TRUSTED[0]

    def _handle_sddl(handle) -> str:
        """Owner and DACL of an open handle, as SDDL."""
        sd = _PVOID()
        rc = _GetSecurityInfo(
            handle, _SE_FILE_OBJECT, _OWNER_INFO | _DACL_INFO, None, None, None, None, ctypes.byref(sd)
        )
        if rc:
            raise OSError(0, f"GetSecurityInfo: {ctypes.FormatError(rc)}", None, rc)
        try:
            text = wintypes.LPWSTR()
            _check(
                _SDToString(sd, 1, _OWNER_INFO | _DACL_INFO, ctypes.byref(text), None),
                "ConvertSecurityDescriptorToStringSecurityDescriptor",
            )
            try:
                return text.value
            finally:
                _LocalFree(ctypes.cast(text, _PVOID))
        finally:
            _LocalFree(sd)

    def _open_handle(path: str, access: int, disposition: int, flags: int, sddl: str | None, share: int = _SHARE_ALL):
        desc = _Descriptor(sddl) if sddl else None
        try:
            sa = desc.attributes() if desc else None
            handle = _CreateFileW(
                path,
                access,
                share,
                ctypes.byref(sa) if sa else None,
                disposition,
                flags | _FLAG_OPEN_REPARSE_POINT,
                None,
            )
            err = ctypes.get_last_error()  # before LocalFree, another call through kernel32, may touch it
        finally:
            if desc:
                desc.close()
        if handle == _INVALID or handle is None:
            raise OSError(0, f"cannot open {path}: {ctypes.FormatError(err)}", path, err)
        return handle

    def _info(handle) -> _FileInfo:
        info = _FileInfo()
        _check(_GetFileInformationByHandle(handle, ctypes.byref(info)), "GetFileInformationByHandle")
        return info

    def _owner_problem(sddl: str) -> str | None:
        """Why the owner in ``sddl`` cannot be trusted, or None."""
        owner = _owner(sddl)
        if owner and not _known(owner, _trusted()):
            return f"is owned by {names([owner])}, not by SYSTEM, Administrators or this user"
        return None

    def walk(path: str, sddl: str | None, create: bool, last: str) -> tuple[list, bool]:
        """``safefs._walk_posix`` on Windows: each component from the drive's root opened itself
        (``FILE_FLAG_OPEN_REPARSE_POINT``), a junction or symbolic link refused, one another
        user owns refused or (``last == "claim"``) moved aside by its own handle and made anew
        with ``sddl`` (a folder a user lives in is refused instead); the final folder others may
        write repaired ("repair", "claim") or refused. Folders on the way are judged by their
        owner alone (an administrator's folder under C:\\ inherits "modify" for Authenticated
        Users), except that "claim" closes one others may write too ("survey": says what would be
        done, changing nothing); the drive's root, where every user may add folders, is never
        judged. Returns what was done on the way (``takeover.Takeover``s), and which file the final
        folder is as judged or made (``_identity``; None for a survey past a folder it would make
        anew), for ``pin`` to prove."""
        from basics.takeover import Takeover, refuse_home

        drive, rest = os.path.splitdrive(os.path.abspath(path))
        parts = [p for p in rest.replace("/", "\\").split("\\") if p]
        here, done, seen = drive + "\\", [], None
        for i, part in enumerate(parts):
            here = os.path.join(here, part)
            final = i == len(parts) - 1
            try:  # the common case first: it exists (a failed CreateDirectoryW per component is dear)
                why, seen = _component_problem(here, final or last in ("claim", "survey"))
            except FileNotFoundError:
                if not create:
                    raise
                if _make_dir(here, sddl):
                    seen = _component_problem(here, True)[1] if final else None
                    continue
                why, seen = _component_problem(here, final or last in ("claim", "survey"))  # made meanwhile
            if why is None:
                continue
            owner = not why.startswith("is writable")
            if last in ("claim", "survey") and owner:
                refuse_home(here, why, _homes())
                done.append(Takeover(here, why, _make_anew(here, seen, sddl, last == "survey")))
                if last == "survey":
                    return done, None
                seen = _component_problem(here, True)[1]  # the folder made in its place
            elif last == "claim":
                _apply(here, "O:BA" + sddl, _OWNER_INFO | _DACL_INFO | _PROTECTED_DACL, seen)
                done.append(Takeover(here, why))
            elif last == "survey":
                done.append(Takeover(here, why))
            elif final and last == "repair" and not owner:
                _apply(here, sddl, _DACL_INFO | _PROTECTED_DACL, seen)
            elif not owner:
                raise UnsafePath(
                    here,
                    why,
                    "what is in it cannot be trusted: give it an admin-only ACL "
                    f"(icacls {here} /inheritance:r /grant:r SYSTEM:(OI)(CI)F Administrators:(OI)(CI)F)",
                )
            else:
                raise UnsafePath(here, why)
        return done, seen

    def _make_anew(path: str, seen: tuple[int, int, int] | None, sddl: str, survey: bool) -> str:
        """Another user's folder ``path`` renamed aside by a handle proven to be the one judged
        (``seen``), then a new one made with ``sddl``; where the old one went. Whatever was made
        again in its place before ours is moved aside as it stands (a junction itself, never
        followed). A survey only names it. A handle someone holds on the folder without
        share-delete makes this fail, closed."""
        from basics.takeover import ASIDE_TRIES, QUARANTINED, fresh, remade

        for _ in range(ASIDE_TRIES):
            aside = fresh(path + QUARANTINED, os.path.lexists)
            if survey:
                return aside
            try:
                handle = _open_handle(path, _DELETE | _READ_CONTROL, _OPEN_EXISTING, _FLAG_BACKUP_SEMANTICS, None)
            except OSError as exc:
                if exc.winerror != _SHARING_VIOLATION:
                    raise
                raise UnsafePath(
                    path,
                    "is another user's and held open by a process that will not let it be moved aside",
                    f"nothing was laid there; find what holds it (handle.exe {path}), end it, and run install again",
                ) from None
            try:
                if seen is not None and _identity(_info(handle)) != seen:
                    raise UnsafePath(
                        path,
                        "was replaced while it was being checked (a junction or another folder put in its place)",
                        "nothing was done through it: check who can write its parent",
                    )
                _rename_handle(handle, aside)
            finally:
                _CloseHandle(handle)
            if _make_dir(path, sddl):
                return aside
            seen = None
        raise remade(path)

    def _rename_handle(handle, target: str) -> None:
        """Rename the file a handle (opened with DELETE) is on: that object, whatever its name now."""
        name = target.encode("utf-16-le")
        size = 20 + len(name) + 2  # FILE_RENAME_INFO on x64: flags, (pad), RootDirectory, length, name
        buf = ctypes.create_string_buffer(size)
        ctypes.c_uint32.from_buffer(buf, 16).value = len(name)
        ctypes.memmove(ctypes.addressof(buf) + 20, name, len(name))
        _check(_SetFileInformationByHandle(handle, _FILE_RENAME_INFO, buf, size), f"rename to {target}")

    def _homes() -> list[tuple[str, str]]:
        """(profile, folder) of every user profile the system knows, and the profiles folder."""
        import winreg

        out = []
        key = r"SOFTWARE\Microsoft\Windows NT\CurrentVersion\ProfileList"
        try:
            with winreg.OpenKey(winreg.HKEY_LOCAL_MACHINE, key) as top:
                for i in range(winreg.QueryInfoKey(top)[0]):
                    sid = winreg.EnumKey(top, i)
                    with winreg.OpenKey(top, sid) as sub:
                        try:
                            out.append((sid, os.path.expandvars(winreg.QueryValueEx(sub, "ProfileImagePath")[0])))
                        except OSError:
                            continue
                try:
                    users = winreg.QueryValueEx(top, "ProfilesDirectory")[0]
                    out.append(("every user", os.path.expandvars(users)))
                except OSError:
                    pass
        except OSError:
            pass
        return out

    def pin(path: str, seen: tuple[int, int, int] | None = None):
        """A handle on the folder ``path`` that keeps it where it is while held: opened without
        share-delete (nobody can rename or delete it; Windows also refuses to rename a folder
        with anything open below it), proven a real folder reached through no junction (its
        final path is ``path``) and, given ``seen``, the very folder judged."""
        handle = _open_handle(path, _READ_CONTROL, _OPEN_EXISTING, _FLAG_BACKUP_SEMANTICS, None, _SHARE_NO_DELETE)
        try:
            info = _info(handle)
            if info.dwFileAttributes & _ATTR_REPARSE_POINT or not info.dwFileAttributes & _ATTR_DIRECTORY:
                raise UnsafePath(path, "is not a folder (a junction or link put in its place?)", UnsafePath.LINK_FIX)
            if seen is not None and _identity(info) != seen:
                raise UnsafePath(path, "was replaced while it was being checked", "run install again")
            _reached(handle, path)
        except BaseException:
            _CloseHandle(handle)
            raise
        return handle

    def _reached(handle, path: str) -> None:
        """UnsafePath unless the open ``handle`` is at ``path`` itself: a junction or link on the way
        (one put there since the folders were judged) leads elsewhere, and the final path says so."""
        final = _final_path(handle)
        if os.path.normcase(final) != os.path.normcase(os.path.abspath(path)):
            raise UnsafePath(path, f"is reached through a junction or link (it is {final})", UnsafePath.LINK_FIX)

    def open_plain(path: str) -> int:
        """A read descriptor on what is at ``path``, a final reparse point never followed nor any
        on the way (``_reached``); UnsafePath for a link, FileNotFoundError when nothing is there.
        The caller checks what it opened (``os.fstat``: a folder, a device)."""
        try:
            handle = _open_handle(path, _GENERIC_READ, _OPEN_EXISTING, _FLAG_BACKUP_SEMANTICS, None)
        except OSError as exc:
            if exc.winerror in (2, 3):
                raise FileNotFoundError(2, f"{path} does not exist", path) from None
            raise
        try:
            if _GetFileType(handle) != _FILE_TYPE_DISK:  # NUL, CON, a pipe: nothing a file is
                raise UnsafePath(path, "is a device or pipe, not a regular file", "name the file itself")
            if _info(handle).dwFileAttributes & _ATTR_REPARSE_POINT:
                raise UnsafePath(path, "is a reparse point (a junction or symbolic link)", UnsafePath.LINK_FIX)
            _reached(handle, path)
        except BaseException:
            _CloseHandle(handle)
            raise
        return msvcrt.open_osfhandle(handle, os.O_RDONLY | os.O_BINARY)

    def _final_path(handle) -> str:
        buf = ctypes.create_unicode_buffer(1024)
        n = _GetFinalPathNameByHandleW(handle, buf, 1024, 0)
        _check(n and n < 1024, "GetFinalPathNameByHandle")
        text = buf.value
        if text.startswith("\\\\?\\UNC\\"):
            return "\\\\" + text[8:]
        return text[4:] if text.startswith("\\\\?\\") else text

    def _enable_privileges() -> None:
        """SeTakeOwnership, SeRestore and SeBackup in this process's token (SYSTEM and elevated
        administrators hold them, disabled): taking a folder, or reading one whose DACL denies us."""
        token = wintypes.HANDLE()
        if not _OpenProcessToken(
            _GetCurrentProcess(), _TOKEN_ADJUST_PRIVILEGES | _TOKEN_QUERY, ctypes.byref(token)
        ):  # pragma: no cover - a token we may not adjust: the calls then say what they lack
            return
        try:
            for name in ("SeTakeOwnershipPrivilege", "SeRestorePrivilege", "SeBackupPrivilege"):
                luid = ctypes.c_int64()
                if not _LookupPrivilegeValueW(None, name, ctypes.byref(luid)):
                    continue
                state = (ctypes.c_uint32 * 4)(1, luid.value & 0xFFFFFFFF, luid.value >> 32, 2)  # SE_PRIVILEGE_ENABLED
                _AdjustTokenPrivileges(token, False, state, 0, None, None)
        finally:
            _CloseHandle(token)

    def claim(path: str, sddl: str, seize: str):
        """``safefs.claim_dir`` on Windows: the walk, then the folder pinned (``Folder``; ``seize``,
        the DACL a folder to delete below it is given first)."""
        _enable_privileges()
        done, seen = walk(path, sddl, create=True, last="claim")
        return Folder(path, pin(path, seen), seize), done

    def survey(path: str):
        done, seen = walk(path, None, create=False, last="survey")
        return (Folder(path, pin(path, seen), "") if seen is not None else None), done

    def secure(path: str, sddl: str):
        return Folder(path, pin(path, walk(path, sddl, create=True, last="repair")[1]), sddl)

    def checked(path: str):
        return Folder(path, pin(path, walk(path, None, create=False, last="refuse")[1]), "")

    def _make_dir(path: str, sddl: str) -> bool:
        """Create ``path`` with ``sddl``; False when it exists already."""
        desc = _Descriptor(sddl)
        try:
            sa = desc.attributes()
            created = _CreateDirectoryW(path, ctypes.byref(sa))
            err = ctypes.get_last_error()  # before LocalFree, another call through kernel32, may touch it
        finally:
            desc.close()
        if not created and err != _ERROR_ALREADY_EXISTS:
            raise OSError(0, f"CreateDirectory {path}: {ctypes.FormatError(err)}", path, err)
        return bool(created)

    def _component_problem(path: str, final: bool) -> tuple[str | None, tuple[int, int, int]]:
        """Why the folder ``path`` cannot be trusted (or None), and which file it is (``_identity``)."""
        try:
            handle = _open_handle(path, _READ_CONTROL, _OPEN_EXISTING, _FLAG_BACKUP_SEMANTICS, None)
        except OSError as exc:
            if exc.winerror in (2, 3):
                raise FileNotFoundError(2, f"{path} does not exist", path) from None
            raise
        try:
            info = _info(handle)
            if info.dwFileAttributes & _ATTR_REPARSE_POINT:
                raise UnsafePath(path, "is a reparse point (a junction or symbolic link)", UnsafePath.LINK_FIX)
            if not info.dwFileAttributes & _ATTR_DIRECTORY:
                raise UnsafePath(path, "is not a folder")
            found, seen = _handle_sddl(handle), _identity(info)
        finally:
            _CloseHandle(handle)
        why = _owner_problem(found)
        if why:
            return why, seen
        others = sddl_writers(found, _trusted()) if final else []
        return (f"is writable by {names(others)}" if others else None), seen

    def _identity(info: _FileInfo) -> tuple[int, int, int]:
        """Volume serial and file index: the same file whatever name reaches it."""
        return info.dwVolumeSerialNumber, info.nFileIndexHigh, info.nFileIndexLow

    def entry_problem(path: str, suspicious: bool, repair: bool) -> tuple[str | None, bool]:
        """``safefs._entry_problem`` on Windows; a kept entry inherits only its folder's DACL. An
        entry whose DACL keeps even SYSTEM out is foreign (never a crash)."""
        try:
            handle = _open_handle(
                path, _READ_CONTROL | (_WRITE_DAC if repair else 0), _OPEN_EXISTING, _FLAG_BACKUP_SEMANTICS, None
            )
        except OSError as exc:
            if exc.winerror != _ACCESS_DENIED:
                raise
            return "not readable by SYSTEM (its ACL denies it)", False
        try:
            info = _info(handle)
            folder = bool(info.dwFileAttributes & _ATTR_DIRECTORY)
            reparse = bool(info.dwFileAttributes & _ATTR_REPARSE_POINT)
            owner = _owner(_handle_sddl(handle))
            if owner and not _known(owner, _trusted()):
                return f"owned by {names([owner])}", folder and not reparse
            if reparse:
                return ("a junction or symbolic link (reparse point)" if suspicious else None), False
            if suspicious and not folder and info.nNumberOfLinks > 1:
                return f"a file with {info.nNumberOfLinks} hard links", False
            if not repair:
                return None, folder
            desc = _Descriptor("D:")
            try:
                rc = _SetSecurityInfo(
                    handle, _SE_FILE_OBJECT, _DACL_INFO | _UNPROTECTED_DACL, None, None, desc.dacl(), None
                )
            finally:
                desc.close()
            if rc:
                raise OSError(0, f"SetSecurityInfo {path}: {ctypes.FormatError(rc)}", path, rc)
            return None, folder
        finally:
            _CloseHandle(handle)

    def create_new(path: str) -> int:
        """A write descriptor on a file this call creates (``CREATE_NEW``; the reparse-point flag,
        so a link at ``path`` is an error, never followed); it inherits its folder's DACL."""
        try:
            handle = _open_handle(path, _GENERIC_WRITE, _CREATE_NEW, 0, None)
        except OSError as exc:
            if exc.winerror in (80, _ERROR_ALREADY_EXISTS):  # ERROR_FILE_EXISTS
                raise FileExistsError(17, f"{path} exists", path) from None
            raise
        return msvcrt.open_osfhandle(handle, os.O_WRONLY | os.O_BINARY)

    def open_file(path: str, flags: int, sddl: str) -> int:
        if flags & os.O_APPEND:
            access = _FILE_APPEND_DATA
        elif flags & os.O_RDWR:
            access = _GENERIC_READ | _GENERIC_WRITE
        else:
            access = _GENERIC_READ
        disposition = _OPEN_ALWAYS if flags & os.O_CREAT else _OPEN_EXISTING
        try:
            handle = _open_handle(path, access | _READ_CONTROL, disposition, 0, sddl)
        except OSError as exc:
            if exc.winerror in (2, 3):  # ERROR_FILE_NOT_FOUND, ERROR_PATH_NOT_FOUND
                raise FileNotFoundError(2, f"{path} does not exist", path) from None
            raise
        try:
            info = _info(handle)
            if info.dwFileAttributes & _ATTR_REPARSE_POINT:
                raise UnsafePath(path, "is a reparse point (a symbolic link)")
            if info.dwFileAttributes & _ATTR_DIRECTORY:
                raise UnsafePath(path, "is a folder")
            if info.nNumberOfLinks > 1:
                raise UnsafePath(
                    path, f"has {info.nNumberOfLinks} hard links (another name could point at a file of ours)"
                )
            why = _owner_problem(_handle_sddl(handle))
            if why:
                raise UnsafePath(path, why)
            _reached(handle, path)
            return msvcrt.open_osfhandle(handle, (flags & (os.O_WRONLY | os.O_RDWR | os.O_APPEND)) | os.O_BINARY)
        except BaseException:
            _CloseHandle(handle)
            raise

    def _apply(path: str, sddl: str, what: int, seen: tuple[int, int, int] | None = None) -> bool:
        """Set the owner and DACL of ``sddl`` on ``path``; False (nothing done) for a reparse point.
        ``seen``: the file a check found at ``path`` (``_identity``), which this must still be:
        UnsafePath when a link or another folder was put in its place in between."""
        handle = _open_handle(
            path, _READ_CONTROL | _WRITE_DAC | _WRITE_OWNER, _OPEN_EXISTING, _FLAG_BACKUP_SEMANTICS, None
        )
        desc = _Descriptor(sddl)
        try:
            info = _info(handle)
            if seen is not None and _identity(info) != seen:
                raise UnsafePath(
                    path,
                    "was replaced while it was being checked (a junction or another folder put in its place)",
                    "nothing was done through it: check who can write its parent",
                )
            if info.dwFileAttributes & _ATTR_REPARSE_POINT:
                return False
            owner, defaulted = _PVOID(), wintypes.BOOL()
            _check(_GetSDOwner(desc.ptr, ctypes.byref(owner), ctypes.byref(defaulted)), "GetSecurityDescriptorOwner")
            rc = _SetSecurityInfo(handle, _SE_FILE_OBJECT, what, owner, None, desc.dacl(), None)
            if rc:
                raise OSError(0, f"SetSecurityInfo {path}: {ctypes.FormatError(rc)}", path, rc)
            return True
        finally:
            desc.close()
            _CloseHandle(handle)

    def seize_tree(path: str, sddl: str) -> None:
        """Owner Administrators and ``sddl`` (protected) on the folder ``path`` and every folder
        below, each parent before its children, so an entry is listed only once nobody else
        can add or rename one beside it; a reparse point is left as it is, never entered."""
        pending = [path]
        while pending:
            folder = pending.pop()
            try:
                if not _apply(folder, "O:BA" + sddl, _OWNER_INFO | _DACL_INFO | _PROTECTED_DACL):
                    continue
            except FileNotFoundError:  # its owner deleted it: nothing to take
                continue
            with os.scandir(folder) as entries:
                pending += [
                    e.path
                    for e in entries
                    if e.is_dir(follow_symlinks=False)
                    and not e.stat(follow_symlinks=False).st_file_attributes & _ATTR_REPARSE_POINT
                ]

    def writers(path: str) -> str | None:
        handle = _open_handle(path, _READ_CONTROL, _OPEN_EXISTING, _FLAG_BACKUP_SEMANTICS, None)
        try:
            if _info(handle).dwFileAttributes & _ATTR_REPARSE_POINT:
                return "a reparse point (anyone who can write its parent can point it elsewhere)"
            who = sddl_writers(_handle_sddl(handle), _trusted())
        finally:
            _CloseHandle(handle)
        return names(who) if who else None

    def _writable(path: str) -> None:
        """Clear the read-only attribute a user may have set, which makes even SYSTEM's delete fail."""
        os.chmod(path, 0o666)

    def _retry_writable(func, path: str, _exc) -> None:
        _writable(path)
        func(path)

    class Folder:
        """``safefs.Folder`` on Windows: the folder held by a pinned handle (``pin``), so neither
        it nor a folder above it can be renamed, deleted or swapped for a junction while install
        works in it; names below it are taken by path from there, a final reparse point never
        followed (``FILE_FLAG_OPEN_REPARSE_POINT`` on every open; what is below was judged by
        ``entries``, and only administrators may write in it)."""

        def __init__(self, path: str, handle, seize: str) -> None:
            self.path, self._pin, self._seize = os.path.normpath(os.path.abspath(path)), handle, seize

        def close(self) -> None:
            if self._pin:
                _CloseHandle(self._pin)
                self._pin = None

        def _p(self, rel: str) -> str:
            return os.path.join(self.path, rel) if rel else self.path

        def lstat(self, rel: str):
            try:
                return os.lstat(self._p(rel))
            except (FileNotFoundError, NotADirectoryError):
                return None

        def scan(self, rel: str = "") -> list:
            st = self.lstat(rel)
            if st is None or st.st_file_attributes & _ATTR_REPARSE_POINT or not st.st_file_attributes & _ATTR_DIRECTORY:
                return []
            with os.scandir(self._p(rel)) as entries:
                return [(e.name, e.stat(follow_symlinks=False)) for e in entries]

        def open_read(self, rel: str) -> int | None:
            try:
                return open_plain(self._p(rel))
            except (FileNotFoundError, UnsafePath):  # absent, or a link: never followed
                return None

        def open_trusted(self, rel: str) -> int:
            return open_file(self._p(rel), os.O_RDONLY, "")

        def open_new(self, rel: str, mode: int = 0o644) -> int:
            return create_new(self._p(rel))

        def mkdir(self, rel: str, mode: int = 0o755, parents: bool = False) -> None:
            (os.makedirs(self._p(rel), exist_ok=True) if parents else os.mkdir(self._p(rel)))

        def unlink(self, rel: str) -> None:
            try:
                os.unlink(self._p(rel))
            except PermissionError:
                _writable(self._p(rel))
                os.unlink(self._p(rel))

        def rmdir(self, rel: str) -> None:
            os.rmdir(self._p(rel))

        def rename(self, src: str, dst: str, replace: bool = False) -> None:
            (os.replace if replace else os.rename)(self._p(src), self._p(dst))

        def purge(self, rel: str) -> None:
            """``safefs._purge_at`` on Windows: shutil.rmtree lists a folder, then enters each
            subfolder by path, so a user could swap one for a junction in between: every folder
            below is first taken over top down (``seize_tree``), after which nobody else can add
            or swap an entry anywhere in the tree; read-only files lose that attribute."""
            import shutil

            path = self._p(rel)
            seize_tree(path, self._seize)
            shutil.rmtree(path, onerror=_retry_writable)

        def entries(self, suspicious: bool, repair: bool) -> list[tuple[str, str]]:
            out: list[tuple[str, str]] = []
            pending = [self.path]
            while pending:
                with os.scandir(pending.pop()) as entries:
                    for entry in entries:
                        why, folder = entry_problem(entry.path, suspicious, repair)
                        if why:
                            out.append((entry.path, why))
                        elif folder:
                            pending.append(entry.path)
            return sorted(out)
