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
    _TOKEN_QUERY, _TOKEN_USER = 0x8, 1

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

    def _open_handle(path: str, access: int, disposition: int, flags: int, sddl: str | None):
        desc = _Descriptor(sddl) if sddl else None
        try:
            sa = desc.attributes() if desc else None
            handle = _CreateFileW(
                path,
                access,
                _SHARE_ALL,
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

    def walk(path: str, sddl: str | None, create: bool, last: str) -> str | None:
        """``safefs._walk_posix`` on Windows: each component from the drive's root opened itself
        (``FILE_FLAG_OPEN_REPARSE_POINT``), a junction or symbolic link refused, one another
        user owns refused or (``last == "claim"``) given to Administrators with ``sddl``; the
        final folder others may write repaired ("repair", "claim") or refused. Folders on the way
        are judged by their owner alone (an administrator's folder under C:\\ inherits "modify"
        for Authenticated Users), except that "claim" takes over one others may write too
        ("survey": says why the final one would be, changing nothing); the drive's root, where
        every user may add folders, is never judged."""
        drive, rest = os.path.splitdrive(os.path.abspath(path))
        parts = [p for p in rest.replace("/", "\\").split("\\") if p]
        here, claimed = drive + "\\", None
        for i, part in enumerate(parts):
            here = os.path.join(here, part)
            final = i == len(parts) - 1
            try:  # the common case first: it exists (a failed CreateDirectoryW per component is dear)
                why, seen = _component_problem(here, final or last in ("claim", "survey"))
            except FileNotFoundError:
                if not create:
                    raise
                if _make_dir(here, sddl):
                    continue
                why, seen = _component_problem(here, final or last in ("claim", "survey"))  # made meanwhile
            if why is None:
                continue
            if last == "claim":
                _apply(here, "O:BA" + sddl, _OWNER_INFO | _DACL_INFO | _PROTECTED_DACL, seen)
            if last in ("claim", "survey"):
                claimed = why if final else claimed
            elif final and last == "repair" and why.startswith("is writable"):
                _apply(here, sddl, _DACL_INFO | _PROTECTED_DACL, seen)
            elif why.startswith("is writable"):
                raise UnsafePath(
                    here,
                    why,
                    "what is in it cannot be trusted: give it an admin-only ACL "
                    f"(icacls {here} /inheritance:r /grant:r SYSTEM:(OI)(CI)F Administrators:(OI)(CI)F)",
                )
            else:
                raise UnsafePath(here, why)
        return claimed

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
        """``safefs._posix_entry_problem`` on Windows; a kept entry inherits only its folder's DACL."""
        handle = _open_handle(
            path, _READ_CONTROL | (_WRITE_DAC if repair else 0), _OPEN_EXISTING, _FLAG_BACKUP_SEMANTICS, None
        )
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

    def fresh_dir(path: str, sddl: str) -> None:
        if not _make_dir(path, sddl):
            raise FileExistsError(17, f"{path} exists", path)
        why, _ = _component_problem(path, True)
        if why:
            raise UnsafePath(path, why)

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
