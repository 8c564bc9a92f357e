"""Files and folders a SYSTEM/root process may trust on a node it shares with local users.

The plugins run as SYSTEM (root on Linux) with paths an unprivileged user may reach first: a lock
folder, a debug log, an HNS journal. The rules, kept here once for every writer:

- a folder we write or lock in is admin-only: created so (mode 0755 owned by us on POSIX; a
  protected DACL, SYSTEM and Administrators only, on Windows) and, when it already exists,
  accepted only if it is a real folder (not a symlink or reparse point) owned by root/SYSTEM/
  Administrators or by us; write access left to others on a folder we own is taken back. The
  same holds for every folder on the way: a path is opened component by component from the
  root without following links, so a link a user planted higher up is refused, not followed;
- a file is opened without following a final link (``O_NOFOLLOW``;
  ``FILE_FLAG_OPEN_REPARSE_POINT``), then refused when it is not a regular file, has other hard
  links, or is owned by someone else; a file we create is owner-only (0600; a protected DACL);
  a file we write in full is created new (``open_new``: exclusive, no-follow) and renamed.

Each check is a few system calls on the already-open handle. Refusals raise ``UnsafePath`` (a
``PermissionError`` naming the path, what is wrong and the fix); callers turn it into their own
error. ``claim_dir`` and ``foreign_entries`` are the operator side (``wincni install``): take a
folder a user may have prepared over, and list what in it an administrator did not lay.
Standard library and ctypes only (no pywin32), and nothing heavy on a plugin's start-up path.
"""

from __future__ import annotations

import errno
import os
import stat
import sys

from basics.errors import UnsafePath

#: SDDL of the folders the plugins write or lock in, and of the files they create: SYSTEM and
#: Administrators full control, nobody else, nothing inherited from above (``P``).
ADMIN_ONLY = "D:P(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)"
#: The plugin (install) folder: as ``ADMIN_ONLY`` plus read and execute for Users, so the
#: runtime's executables and their contents folder (``_wincni-<build>``) cannot be replaced by a user.
ADMIN_WRITE_USERS_READ = "D:P(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)(A;OICI;0x1200a9;;;BU)"

_FILE_SDDL = "D:P(A;;FA;;;SY)(A;;FA;;;BA)"


def secure_dir(path: str, mode: int = 0o755) -> None:
    """Create ``path`` admin-only (missing parents too; ``mode`` on POSIX, never group/other
    writable), or accept an existing one we can trust. Every component is opened from the root
    without following a link, and each existing one must be a real folder root/SYSTEM/
    Administrators (or we) own: a user's link or folder anywhere on the way is refused, named."""
    if sys.platform == "win32":  # pragma: no cover - exercised in the Windows lane
        _win.walk(path, ADMIN_ONLY, create=True, last="repair")
        return
    _walk_posix(path, mode & 0o755, "repair")


def check_dir(path: str) -> None:
    """Refuse the existing folder ``path`` unless it is admin-only: a real folder owned by
    root/SYSTEM/Administrators or us, that nobody else may write, reached without a link through
    folders as trusted. For folders whose *contents* are trusted (saved configs): write access
    for others is refused, not repaired. FileNotFoundError when a component is missing."""
    if sys.platform == "win32":  # pragma: no cover - exercised in the Windows lane
        _win.walk(path, None, create=False, last="refuse")
        return
    _walk_posix(path, None, "refuse")


def claim_dir(path: str, sddl: str = ADMIN_WRITE_USERS_READ) -> tuple[str | None, list[tuple[str, str]]]:
    """Take the folder ``path`` over for ``wincni install``: missing components are created
    admin-only; an existing one another user owns (or may write) becomes root/Administrators'
    with no write for others (``sddl`` on Windows for ``path`` itself), before anything is laid
    in it. A link on the way is refused, never followed. Returns why ``path`` had to be taken
    over (None: it was admin-only) and ``foreign_entries`` of it, the entries kept losing write
    access for others (on Windows: inheriting only the folder's DACL)."""
    if sys.platform == "win32":  # pragma: no cover - exercised in the Windows lane
        why = _win.walk(path, sddl, create=True, last="claim")
    else:
        why = _walk_posix(path, 0o755, "claim")
    return why, _entries(path, why is not None, repair=True)


def survey_dir(path: str) -> tuple[str | None, list[tuple[str, str]]]:
    """What ``claim_dir`` would return, changing nothing (``wincni install --dry-run``): the
    same walk, so a link on the way is refused as the real run refuses it, never followed to
    list what lies behind it. (None, []) when a folder of the path does not exist yet."""
    try:
        if sys.platform == "win32":  # pragma: no cover - exercised in the Windows lane
            why = _win.walk(path, None, create=False, last="survey")
        else:
            why = _walk_posix(path, None, "survey")
    except FileNotFoundError:
        return None, []
    return why, foreign_entries(path, why is not None)


def foreign_entries(path: str, suspicious: bool) -> list[tuple[str, str]]:
    """(path, why) for each entry under the admin-only folder ``path`` that an administrator did
    not lay: owned by anyone else, and when ``suspicious`` (a folder just taken over) also a link,
    junction or other reparse point, a hard-linked file or anything not a file or folder. Such
    entries are listed, never followed, opened or descended into; the rest are descended into."""
    return _entries(path, suspicious, repair=False)


def _entries(path: str, suspicious: bool, repair: bool) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    pending = [path]
    while pending:
        with os.scandir(pending.pop()) as entries:
            for entry in entries:
                why, folder = _entry_problem(entry.path, suspicious, repair)
                if why:
                    out.append((entry.path, why))
                elif folder:
                    pending.append(entry.path)
    return sorted(out)


def open_new(path: str, mode: int = 0o644) -> int:
    """A write descriptor on the file ``path``, which this call creates: an existing name, a
    link or junction included, is an error (``O_CREAT|O_EXCL|O_NOFOLLOW``; ``CREATE_NEW`` with
    ``FILE_FLAG_OPEN_REPARSE_POINT``), so nothing placed there before is ever written through."""
    if sys.platform == "win32":  # pragma: no cover - exercised in the Windows lane
        return _win.create_new(path)
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode)


def fresh_dir(path: str) -> None:
    """Create the folder ``path`` admin-only, which must not exist yet, and check what was made
    (a quarantine or trash folder: nobody else may have put a folder or link there first)."""
    if sys.platform == "win32":  # pragma: no cover - exercised in the Windows lane
        _win.fresh_dir(path, ADMIN_ONLY)
        return
    os.mkdir(path, 0o700)
    _check_posix_dir(path)


def purge(path: str) -> None:
    """Delete the folder ``path`` (already renamed aside) and all in it, which another user may
    own. POSIX ``shutil.rmtree`` works on descriptors and never follows a link swapped in; on
    Windows it lists a folder, then enters each subfolder by path, so a user could swap one for
    a junction in between and make SYSTEM delete elsewhere: every folder below is first taken
    over top down (owner Administrators, admin-only DACL; each opened itself, a reparse point
    never entered), after which nobody else can add or swap an entry anywhere in the tree."""
    import shutil

    if sys.platform == "win32":  # pragma: no cover - exercised in the Windows lane
        _win.seize_tree(path, ADMIN_ONLY)
    shutil.rmtree(path)


def open_append(path: str) -> int:
    """A descriptor appending to ``path`` (created owner-only), refused when it is not ours."""
    return _open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)


def open_lock(path: str) -> int:
    """A read-write descriptor on the lock file ``path`` (created owner-only), as ``open_append``."""
    return _open(path, os.O_RDWR | os.O_CREAT)


def open_read(path: str) -> int:
    """A read-only descriptor on the existing file ``path``, refused when it is not ours."""
    return _open(path, os.O_RDONLY)


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


def _check_posix_dir(path: str) -> None:
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        raise UnsafePath(path, "is a symbolic link")
    if not stat.S_ISDIR(st.st_mode):
        raise UnsafePath(path, "is not a directory")
    why = _component_problem(st, path, True)
    if why:
        raise _untrusted_dir(path, why)


def _untrusted_dir(path: str, why: str) -> UnsafePath:
    """The refusal of a folder ``_component_problem`` found ``why`` untrusted, with its fix."""
    if why.startswith("is writable"):
        return UnsafePath(
            path, why, f"what is in it cannot be trusted: chmod go-w {path}, and check what others put there"
        )
    return UnsafePath(path, why)


def _walk_posix(path: str, create: int | None, last: str) -> str | None:
    """Open ``path`` from ``/`` one component at a time (``O_NOFOLLOW``, each relative to the
    folder before), so no link anywhere on the way is followed and every check runs on what is
    then opened. An existing component must be a folder we trust: root's (or ours), not writable
    by others unless sticky (``/tmp``). ``create``: make missing ones with that mode. ``last``
    says what an untrusted final folder gets: "refuse", "repair" (ours but writable by others:
    take it back) or "claim" (make it root's, no write for others; every component on the way
    likewise); "claim" returns why it was needed, "survey" why it would be, changing nothing.
    UnsafePath names the component at fault."""
    parts = [p for p in os.path.abspath(path).split(os.sep) if p]
    fd = os.open("/", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    here, claimed = "/", None
    try:
        for i, part in enumerate(parts):
            here = os.path.join(here, part)
            final = i == len(parts) - 1
            child = _open_component(fd, part, here, create, final)
            os.close(fd)
            fd = child
            why = _component_problem(os.fstat(fd), here, final)
            if why is None:
                continue
            if last == "claim":
                if os.geteuid() == 0:
                    os.fchown(fd, 0, 0)
                _drop_acls(fd)
                st = os.fstat(fd)
                os.fchmod(fd, stat.S_IMODE(st.st_mode) & ~0o022)
            if last in ("claim", "survey"):
                claimed = why if final else claimed
            elif final and last == "repair" and why.startswith("is writable"):
                os.fchmod(fd, stat.S_IMODE(os.fstat(fd).st_mode) & ~0o022)
            else:
                raise _untrusted_dir(here, why)
    finally:
        os.close(fd)
    return claimed


def _drop_acls(fd: int) -> None:
    """Remove the POSIX ACLs of a folder taken over: its user may have set a default ACL that
    would give them access to everything made in it later (chown and chmod leave it; the mask
    chmod sets tames only the folder's own access ACL)."""
    for name in ("system.posix_acl_default", "system.posix_acl_access"):
        try:
            os.removexattr(fd, name)
        except OSError as exc:  # none there, or a file system without ACLs
            if exc.errno not in (errno.ENODATA, errno.ENOTSUP, errno.EOPNOTSUPP):
                raise


def _open_component(parent: int, name: str, here: str, create: int | None, final: bool) -> int:
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        return os.open(name, flags, dir_fd=parent)
    except FileNotFoundError:
        if create is None:
            raise FileNotFoundError(2, f"{here} does not exist", here) from None
        try:
            os.mkdir(name, create, dir_fd=parent)
        except FileExistsError:
            pass
        return _open_component(parent, name, here, None, final)
    except OSError as exc:  # ELOOP / ENOTDIR: a link is refused, so is a file where the folder should be
        if stat.S_ISLNK(os.lstat(name, dir_fd=parent).st_mode):
            raise UnsafePath(here, "is a symbolic link", UnsafePath.LINK_FIX) from None
        if final:
            raise UnsafePath(here, "is not a directory") from None
        exc.filename = here
        raise


def _component_problem(st: os.stat_result, here: str, final: bool) -> str | None:
    """Why a folder on the way cannot be trusted, or None. A folder others may write is fine on
    the way when sticky and root's (``/tmp``: nobody may rename what is not theirs)."""
    if not _trusted_uid(st.st_uid):
        return f"is owned by uid {st.st_uid}, not by root or this user"
    if st.st_mode & _open_bits(st) and (final or not (st.st_mode & stat.S_ISVTX and st.st_uid == 0)):
        return f"is writable by others (mode {stat.S_IMODE(st.st_mode):04o})"
    return None


def _posix_entry_problem(path: str, suspicious: bool, repair: bool) -> tuple[str | None, bool]:
    st = os.lstat(path)
    folder = stat.S_ISDIR(st.st_mode)
    if not _trusted_uid(st.st_uid):
        return f"owned by uid {st.st_uid}", folder
    if suspicious and stat.S_ISLNK(st.st_mode):
        return "a symbolic link", False
    if suspicious and not (folder or stat.S_ISREG(st.st_mode)):
        return "not a file or folder", False
    if suspicious and not folder and st.st_nlink > 1:
        return f"a file with {st.st_nlink} hard links", False
    if repair and not stat.S_ISLNK(st.st_mode) and st.st_mode & 0o022:
        os.chmod(path, stat.S_IMODE(st.st_mode) & ~0o022, follow_symlinks=False)
    return None, folder


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
    from basics import _winsec as _win

    def _open(path: str, flags: int) -> int:
        return _win.open_file(path, flags, _FILE_SDDL)

    _entry_problem = _win.entry_problem
else:
    _entry_problem = _posix_entry_problem

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
