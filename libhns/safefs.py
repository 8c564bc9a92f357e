"""Files and folders a SYSTEM/root process may trust on a node it shares with local users.

The plugins run as SYSTEM (root on Linux) with paths an unprivileged user may reach first: a lock
folder, a debug log, an HNS journal. The rules, kept here once for every writer:

- a folder we write or lock in is admin-only: created so (mode 0755 owned by us on POSIX; a
  protected DACL, SYSTEM and Administrators only, on Windows) and, when it already exists,
  accepted only if it is a real folder (not a symlink or reparse point) owned by root/SYSTEM/
  Administrators or by us; write access left to others on a folder we own is taken back;
- a file is opened without following a final link (``O_NOFOLLOW``;
  ``FILE_FLAG_OPEN_REPARSE_POINT``), then refused when it is not a regular file, has other hard
  links, or is owned by someone else; a file we create is owner-only (0600; a protected DACL).

Each check is a few system calls on the already-open handle. Refusals raise ``UnsafePath`` (a
``PermissionError`` naming the path, what is wrong and the fix); callers turn it into their own
error. ``protect_dir`` is the operator-side tool: it gives an existing folder the install ACL.
Standard library and ctypes only (no pywin32), and nothing heavy on a plugin's start-up path.
"""
from __future__ import annotations

import os
import stat
import sys

from libhns.errors import UnsafePath  # noqa: F401 - raised here, caught by the callers

#: SDDL of the folders the plugins write or lock in, and of the files they create: SYSTEM and
#: Administrators full control, nobody else, nothing inherited from above (``P``).
ADMIN_ONLY = "D:P(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)"
#: The plugin (install) folder: as ``ADMIN_ONLY`` plus read and execute for Users, so the
#: runtime's executables and their contents folder (``_wincni-<build>``) cannot be replaced by a user.
ADMIN_WRITE_USERS_READ = "D:P(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)(A;OICI;0x1200a9;;;BU)"

_FILE_SDDL = "D:P(A;;FA;;;SY)(A;;FA;;;BA)"


def secure_dir(path: str, mode: int = 0o755) -> None:
    """Create ``path`` admin-only (parents as usual; ``mode`` on POSIX, never group/other
    writable), or accept an existing one we can trust."""
    try:
        _secure_dir(path, mode & 0o755)  # the usual case, the folder exists: two system calls
    except FileNotFoundError:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        _secure_dir(path, mode & 0o755)


def check_dir(path: str) -> None:
    """Refuse the existing folder ``path`` unless it is admin-only: a real folder owned by
    root/SYSTEM/Administrators or us, that nobody else may write. For folders whose *contents*
    are trusted (saved configs): write access for others is refused, not repaired."""
    if sys.platform == "win32":  # pragma: no cover - exercised in the Windows lane
        _win.check_dir(path)
        return
    _check_posix_dir(path, repair=False)


def open_append(path: str) -> int:
    """A descriptor appending to ``path`` (created owner-only), refused when it is not ours."""
    return _open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)


def open_lock(path: str) -> int:
    """A read-write descriptor on the lock file ``path`` (created owner-only), as ``open_append``."""
    return _open(path, os.O_RDWR | os.O_CREAT)


def open_read(path: str) -> int:
    """A read-only descriptor on the existing file ``path``, refused when it is not ours."""
    return _open(path, os.O_RDONLY)


def protect_dir(path: str, sddl: str = ADMIN_WRITE_USERS_READ) -> None:
    """Give the existing folder ``path`` admin-only write access: on Windows owner Administrators
    and the ``sddl`` DACL, protected (inheritance from above removed), everything inside owned by
    Administrators and inheriting only that; on POSIX owner root (when we are root) and no
    group/other write, on the folder and everything in it. Links are neither followed nor changed.
    For ``wincni install`` and the like; the plugins use ``secure_dir``."""
    if sys.platform == "win32":  # pragma: no cover - exercised in the Windows lane
        _win.protect(path, sddl)
        return
    for top, dirs, files in os.walk(path):
        for name in [top] + [os.path.join(top, n) for n in dirs + files]:
            st = os.lstat(name)
            if stat.S_ISLNK(st.st_mode):
                continue
            if os.geteuid() == 0 and st.st_uid != 0:
                os.chown(name, 0, 0)
            if st.st_mode & 0o022:
                os.chmod(name, stat.S_IMODE(st.st_mode) & ~0o022)


def writable_by_others(path: str) -> str | None:
    """Who besides root/SYSTEM/Administrators (and the owner, when trusted) may write ``path``,
    or None; the doctor's check. POSIX: the owner and the mode bits; Windows: the owner and DACL."""
    if sys.platform == "win32":  # pragma: no cover - exercised in the Windows lane
        return _win.writers(path)
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        return "a symbolic link (anyone who can write its parent can point it elsewhere)"
    if not _trusted_uid(st.st_uid):
        return f"its owner (uid {st.st_uid})"
    who = [w for bit, w in ((0o020, "its group"), (0o002, "every user")) if st.st_mode & _open_bits(st) & bit]
    return " and ".join(who) or None


# ---------------------------------------------------------------- POSIX

def _trusted_uid(uid: int) -> bool:
    return uid == 0 or uid == os.geteuid()


def _open_bits(st: os.stat_result) -> int:
    """The write bits that let someone other than root (or us) write: group root is admin-only."""
    return 0o002 if st.st_gid == 0 else 0o022


def _check_posix_dir(path: str, repair: bool) -> None:
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        raise UnsafePath(path, "is a symbolic link")
    if not stat.S_ISDIR(st.st_mode):
        raise UnsafePath(path, "is not a directory")
    if not _trusted_uid(st.st_uid):
        raise UnsafePath(path, f"is owned by uid {st.st_uid}, not by root or this user")
    if st.st_mode & _open_bits(st) and not repair:
        raise UnsafePath(path, f"is writable by others (mode {stat.S_IMODE(st.st_mode):04o})",
                         f"what is in it cannot be trusted: chmod go-w {path}, and check what others put there")
    if repair and st.st_mode & 0o022:  # ours, left writable by a umask of 0 or an older version: take it back
        os.chmod(path, stat.S_IMODE(st.st_mode) & ~0o022)


def _check_posix_file(fd: int, path: str) -> None:
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        raise UnsafePath(path, "is not a regular file")
    if st.st_nlink > 1:
        raise UnsafePath(path, f"has {st.st_nlink} hard links (another name could point at a file of ours)")
    if not _trusted_uid(st.st_uid):
        raise UnsafePath(path, f"is owned by uid {st.st_uid}, not by root or this user")
    if st.st_mode & 0o077:
        os.fchmod(fd, 0o600)


if sys.platform == "win32":  # pragma: no cover - exercised in the Windows lane
    from libhns import _winsec as _win

    def _secure_dir(path: str, mode: int) -> None:
        _win.secure_dir(path, ADMIN_ONLY)

    def _open(path: str, flags: int) -> int:
        return _win.open_file(path, flags, _FILE_SDDL)
else:
    def _secure_dir(path: str, mode: int) -> None:
        try:
            os.mkdir(path, mode)
        except FileExistsError:
            pass
        _check_posix_dir(path, repair=True)

    def _open(path: str, flags: int) -> int:
        try:
            fd = os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            if os.path.islink(path):
                raise UnsafePath(path, "is a symbolic link") from exc
            raise
        try:
            _check_posix_file(fd, path)
        except BaseException:
            os.close(fd)
            raise
        return fd
