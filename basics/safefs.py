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
error. ``claim_dir`` and ``survey_dir`` are the operator side (``wincni install``): a folder a user
may have prepared is moved aside and made anew, never reused; an administrator's that others may
write is closed; both answer a ``Folder``, the judged folder held open, through which every later
step (list, read, create, rename, delete) is taken relative to that descriptor or pinned handle,
never by a path looked up again (a folder swapped for a link after the check is never reached).
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
    Administrators (or we) own: a user's link or folder anywhere on the way is refused, named.
    On Windows the folder then stays held until the process exits (``_HELD``)."""
    if sys.platform == "win32":  # pragma: no cover - exercised in the Windows lane
        _HELD.append(_win.secure(path, ADMIN_ONLY))
        return
    os.close(_walk_posix(path, mode & 0o755, "repair")[0])


#: Windows: the folders ``secure_dir`` and ``check_dir`` judged, pinned (``Folder``) for the rest of
#: this (short) process. The folders above one are judged by their owner alone there (C:\\ hands
#: "modify" down to every user), so a user could rename one and put a junction in its place
#: between the walk and the plugin's later opens by path; a pinned folder, and every folder above
#: it, cannot be renamed while the pin is held. POSIX needs none: only root can change a chain
#: of folders the walk trusted.
_HELD: list = []


def secure_folder(path: str, mode: int = 0o755) -> Folder:
    """``secure_dir``, the folder then held open (``Folder``) for what a tool writes in it."""
    if sys.platform == "win32":  # pragma: no cover - exercised in the Windows lane
        return _win.secure(path, ADMIN_ONLY)
    fd, _ = _walk_posix(path, mode & 0o755, "repair")
    return _PosixFolder(path, fd)


def check_dir(path: str) -> None:
    """Refuse the existing folder ``path`` unless it is admin-only: a real folder owned by
    root/SYSTEM/Administrators or us, that nobody else may write, reached without a link through
    folders as trusted. For folders whose *contents* are trusted (saved configs): write access
    for others is refused, not repaired. FileNotFoundError when a component is missing. On
    Windows the folder then stays held until the process exits (``_HELD``)."""
    if sys.platform == "win32":  # pragma: no cover - exercised in the Windows lane
        _HELD.append(_win.checked(path))
        return
    os.close(_walk_posix(path, None, "refuse")[0])


def claim_dir(path: str, sddl: str = ADMIN_WRITE_USERS_READ) -> tuple[Folder, list, list[tuple[str, str]]]:
    """Make the folder ``path`` install's, for ``wincni install``: missing components are created
    admin-only; one another user owns is moved aside and made anew (a home folder, or any folder
    a user's home lies in, is refused instead); an administrator's others may write loses that
    write access (``sddl`` on Windows). A link on the way is refused, never followed. Returns the
    folder held open (the caller closes it), what had to be done on the way (``takeover.Takeover``s)
    and what in the folder an administrator did not lay (``Folder.entries``), whose write access
    for others is taken back (on Windows: they inherit only the folder's DACL)."""
    if sys.platform == "win32":  # pragma: no cover - exercised in the Windows lane
        folder, done = _win.claim(path, sddl, ADMIN_ONLY)
    else:
        fd, done = _walk_posix(path, 0o755, "claim")
        folder = _PosixFolder(path, fd)
    try:
        return folder, done, folder.entries(bool(done), repair=True)
    except BaseException:
        folder.close()
        raise


def survey_dir(path: str) -> tuple[Folder | None, list, list[tuple[str, str]]]:
    """What ``claim_dir`` would do, changing nothing (``wincni install --dry-run``): the same walk,
    so a link on the way is refused as the real run refuses it, never followed to list what lies
    behind it. The folder is None (and nothing listed) when a component does not exist yet or
    would be moved aside (the real run lays into a fresh, empty one)."""
    try:
        if sys.platform == "win32":  # pragma: no cover - exercised in the Windows lane
            folder, done = _win.survey(path)
        else:
            fd, done = _walk_posix(path, None, "survey")
            folder = None if fd is None else _PosixFolder(path, fd)
    except FileNotFoundError:
        return None, [], []
    if folder is None:
        return None, done, []
    try:
        return folder, done, folder.entries(bool(done), repair=False)
    except BaseException:
        folder.close()
        raise


def open_append(path: str) -> int:
    """A descriptor appending to ``path`` (created owner-only), refused when it is not ours."""
    return _open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)


def open_lock(path: str) -> int:
    """A read-write descriptor on the lock file ``path`` (created owner-only), as ``open_append``."""
    return _open(path, os.O_RDWR | os.O_CREAT)


def open_read(path: str) -> int:
    """A read-only descriptor on the existing file ``path``, refused when it is not ours; a FIFO
    is not waited on (it is then refused as no regular file)."""
    return _open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))


def writable_by_others(path: str) -> str | None:
    """Who besides root/SYSTEM/Administrators (and the owner, when trusted) may write ``path``,
    or None; the doctor's check. POSIX: the owner and the mode bits; Windows: the owner and DACL."""
    if sys.platform == "win32":  # pragma: no cover - exercised in the Windows lane
        return _win.writers(path)
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        return "a symbolic link (anyone who can write its parent can point it elsewhere)"
    if not trusted_uid(st.st_uid):
        return f"its owner (uid {st.st_uid})"
    who = [w for bit, w in ((0o020, "its group"), (0o002, "every user")) if st.st_mode & _open_bits(st) & bit]
    return " and ".join(who) or None


# ---------------------------------------------------------------- POSIX


def trusted_uid(uid: int) -> bool:
    """An owner whose files and folders we trust: root, or the user this runs as."""
    return uid == 0 or uid == os.geteuid()


def _open_bits(st: os.stat_result) -> int:
    """The write bits that let someone other than root (or us) write: group root is admin-only."""
    return 0o002 if st.st_gid == 0 else 0o022


def _untrusted_dir(path: str, why: str) -> UnsafePath:
    """The refusal of a folder ``_component_problem`` found ``why`` untrusted, with its fix."""
    if why.startswith("is writable"):
        return UnsafePath(
            path, why, f"what is in it cannot be trusted: chmod go-w {path}, and check what others put there"
        )
    return UnsafePath(path, why)


_DIR = (os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC) if hasattr(os, "O_DIRECTORY") else 0


def _walk_posix(path: str, create: int | None, last: str) -> tuple[int | None, list]:
    """Open ``path`` from ``/`` one component at a time (``O_NOFOLLOW``, each relative to the
    folder before), so no link anywhere on the way is followed and every check runs on what is
    then opened; the final folder's descriptor is returned open. An existing component must be a
    folder we trust: root's (or ours), not writable by others unless sticky (``/tmp``).
    ``create``: make missing ones with that mode. ``last`` says what an untrusted folder gets:
    "refuse"; "repair" (the final one, ours but writable by others: taken back); "claim" (another
    user's moved aside and made anew, an administrator's closed to others; on the way too);
    "survey" (what "claim" would do, changing nothing: None instead of a descriptor when a
    component would be made anew). UnsafePath names the component at fault; what was done on
    the way comes back as ``takeover.Takeover``s (``_take``)."""
    parts = [p for p in os.path.abspath(path).split(os.sep) if p]
    fd: int | None = os.open("/", _DIR)
    here, done = "/", []
    try:
        for i, part in enumerate(parts):
            here = os.path.join(here, part)
            final = i == len(parts) - 1
            parent, fd = fd, None
            if parent is None:  # a survey past a folder claim would make anew: nothing below it exists yet
                continue
            try:
                fd = _open_component(parent, part, here, create, final)
                why = _component_problem(os.fstat(fd), here, final)
                if why is None:
                    continue
                if last in ("claim", "survey"):
                    opened, fd = fd, None
                    fd, taken = _take(parent, part, here, opened, why, create, last == "survey")
                    done.append(taken)
                elif final and last == "repair" and why.startswith("is writable"):
                    os.fchmod(fd, stat.S_IMODE(os.fstat(fd).st_mode) & ~0o022)
                else:
                    raise _untrusted_dir(here, why)
            finally:
                os.close(parent)
    except BaseException:
        if fd is not None:
            os.close(fd)
        raise
    return fd, done


def _take(parent: int, name: str, here: str, fd: int, why: str, create: int | None, survey: bool) -> tuple:
    """What a claim does to the component ``fd`` it found untrusted for ``why`` (a survey: would
    do): an administrator's folder closed to others where it stands; another user's moved aside
    and made anew, unless a user lives in it (refused). (The descriptor to go on with, or None
    where a survey would make it anew; the ``takeover.Takeover``.) ``fd`` is this call's to close."""
    from basics.takeover import Takeover, refuse_home

    if why.startswith("is writable"):
        try:
            if not survey:
                _close_to_others(fd)
        except BaseException:
            os.close(fd)
            raise
        return fd, Takeover(here, why)
    os.close(fd)
    refuse_home(here, why, _homes())
    fd, aside = _make_anew(parent, name, here, create, survey)
    return fd, Takeover(here, why, aside)


def _make_anew(parent: int, name: str, here: str, mode: int | None, survey: bool) -> tuple[int | None, str]:
    """Another user's folder ``name`` in ``parent`` renamed to a fresh quarantine name beside it
    (whatever stands there now: a link swapped in is moved as it is, never followed) and a new
    admin-only one made in its place; (its descriptor, where the old one went). A survey only
    names where it would go."""
    from basics.takeover import ASIDE_TRIES, QUARANTINED, fresh, remade

    for _ in range(ASIDE_TRIES):
        aside = fresh(name + QUARANTINED, lambda n: _lstat_at(parent, n) is not None)
        if survey:
            return None, os.path.join(os.path.dirname(here), aside)
        try:
            _rename_at(parent, name, aside, replace=False)
        except OSError as exc:  # the aside name taken meanwhile: another one
            if exc.errno not in (errno.EEXIST, errno.ENOTEMPTY, errno.ENOTDIR, errno.EISDIR):
                raise
            continue
        try:
            os.mkdir(name, 0o700, dir_fd=parent)
        except FileExistsError:  # made again before ours: move that aside too
            continue
        fd = os.open(name, _DIR, dir_fd=parent)
        st = os.fstat(fd)
        if not (stat.S_ISDIR(st.st_mode) and trusted_uid(st.st_uid)):  # pragma: no cover - mkdir made it
            os.close(fd)
            raise UnsafePath(here, "was replaced as it was made anew")
        os.fchmod(fd, (0o755 if mode is None else mode) & 0o755)
        _drop_acls(fd)
        return fd, os.path.join(os.path.dirname(here), aside)
    raise remade(here)


def _homes() -> list[tuple[str, str]]:
    """(user, home folder) of every user of the system."""
    import pwd

    return [(u.pw_name, u.pw_dir) for u in pwd.getpwall()]


def _close_to_others(fd: int) -> None:
    """An administrator's folder others could write (or ours): write access for others taken
    back, and its POSIX ACLs dropped (a default ACL a user set would reach what is made in it)."""
    if os.geteuid() == 0:
        os.fchown(fd, os.fstat(fd).st_uid, 0)  # group root: a group write bit left is admin-only
    _drop_acls(fd)
    os.fchmod(fd, stat.S_IMODE(os.fstat(fd).st_mode) & ~0o022)


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
    try:
        return os.open(name, _DIR, dir_fd=parent)
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
    if not trusted_uid(st.st_uid):
        return f"is owned by uid {st.st_uid}, not by root or this user"
    if st.st_mode & _open_bits(st) and (final or not (st.st_mode & stat.S_ISVTX and st.st_uid == 0)):
        return f"is writable by others (mode {stat.S_IMODE(st.st_mode):04o})"
    return None


def _entry_problem(st: os.stat_result, suspicious: bool) -> str | None:
    """Why an entry of a claimed folder is not an administrator's to keep (``Folder.entries``)."""
    if not trusted_uid(st.st_uid):
        return f"owned by uid {st.st_uid}"
    if suspicious and stat.S_ISLNK(st.st_mode):
        return "a symbolic link"
    if suspicious and not (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)):
        return "not a file or folder"
    if suspicious and not stat.S_ISDIR(st.st_mode) and st.st_nlink > 1:
        return f"a file with {st.st_nlink} hard links"
    return None


def _lstat_at(parent: int, name: str) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=parent, follow_symlinks=False)
    except FileNotFoundError:
        return None


def _rename_at(parent: int, src: str, dst: str, replace: bool, dst_parent: int | None = None) -> None:
    """``src`` to ``dst`` within the open folders (a link is renamed as it is); without ``replace``
    an existing ``dst`` is an error (``os.rename`` replaces on POSIX, so look first: nobody but us
    writes a folder we hold)."""
    target = parent if dst_parent is None else dst_parent
    if not replace and _lstat_at(target, dst) is not None:
        raise FileExistsError(17, "exists", dst)
    os.rename(src, dst, src_dir_fd=parent, dst_dir_fd=target)


def _purge_at(parent: int, name: str) -> None:
    """Delete ``name`` in ``parent`` and all below it, which another user may own: each folder
    opened relative to the one above without following a link, and taken (root's, 0700) before
    it is listed, so nobody can add or swap an entry in it any more; a link is unlinked itself."""
    try:
        fd = os.open(name, _DIR, dir_fd=parent)
    except FileNotFoundError:
        return
    except OSError as exc:
        if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
            raise
        os.unlink(name, dir_fd=parent)  # a link or a file (perhaps swapped in): itself, never followed
        return
    try:
        if os.geteuid() == 0:
            os.fchown(fd, 0, 0)
        os.fchmod(fd, 0o700)
        with os.scandir(fd) as entries:
            names = [(e.name, e.is_dir(follow_symlinks=False)) for e in entries]
        for child, folder in names:
            if folder:
                _purge_at(fd, child)
                continue
            try:
                os.unlink(child, dir_fd=fd)
            except FileNotFoundError:
                pass
            except IsADirectoryError:  # swapped for a folder since it was listed
                _purge_at(fd, child)
    finally:
        os.close(fd)
    os.rmdir(name, dir_fd=parent)


def _open_judged(parent: int, name: str, st: os.stat_result) -> int:
    """``name`` opened without following a link or waiting, proven to be the entry ``st`` judged."""
    flags = (_DIR if stat.S_ISDIR(st.st_mode) else os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC) | os.O_NONBLOCK
    fd = os.open(name, flags, dir_fd=parent)
    now = os.fstat(fd)
    if (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
        os.close(fd)
        raise UnsafePath(name, "was replaced while it was being checked", "run install again")
    return fd


class _PosixFolder:
    """A folder ``claim_dir`` or ``survey_dir`` judged, held open on its descriptor: every step in
    it goes relative to that descriptor, a relative name below it opened a folder at a time
    without following a link, so a folder swapped for a link after the check is never reached.
    ``path`` is for messages and for naming entries; it is never looked up again."""

    def __init__(self, path: str, fd: int) -> None:
        self.path, self.fd = os.path.normpath(os.path.abspath(path)), fd

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def _at(self, rel: str) -> tuple[int, str]:
        """(an open folder, a name in it) for ``rel``; the folder is ours to close unless it is
        ``self.fd`` (``_done``). FileNotFoundError / NotADirectoryError when a folder on the way
        is missing, or is a link or a file."""
        *parents, name = [p for p in rel.split(os.sep) if p] or [""]
        fd = self.fd
        try:
            for part in parents:
                child = os.open(part, _DIR, dir_fd=fd)
                self._done(fd)
                fd = child
        except OSError as exc:
            self._done(fd)
            if exc.errno == errno.ELOOP:
                raise NotADirectoryError(errno.ENOTDIR, "a link on the way", rel) from None
            raise
        return fd, name

    def _done(self, fd: int) -> None:
        if fd != self.fd:
            os.close(fd)

    def lstat(self, rel: str) -> os.stat_result | None:
        """What ``rel`` is, a link itself; None when it (or a folder on the way) is not there."""
        if not rel:
            return os.fstat(self.fd)
        try:
            fd, name = self._at(rel)
        except (FileNotFoundError, NotADirectoryError):
            return None
        try:
            return _lstat_at(fd, name)
        finally:
            self._done(fd)

    def scan(self, rel: str = "") -> list[tuple[str, os.stat_result]]:
        """(name, lstat) of each entry of the folder ``rel``; [] when no folder is there."""
        try:
            fd = self._open_dir(rel)
        except (FileNotFoundError, NotADirectoryError):
            return []
        try:
            with os.scandir(fd) as entries:
                names = [e.name for e in entries]
            return [(n, st) for n in names if (st := _lstat_at(fd, n)) is not None]
        finally:
            self._done(fd)

    def _open_dir(self, rel: str) -> int:
        if not rel:
            return self.fd
        fd, name = self._at(rel)
        try:
            return os.open(name, _DIR, dir_fd=fd)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise NotADirectoryError(errno.ENOTDIR, "a link", rel) from None
            raise
        finally:
            self._done(fd)

    def open_read(self, rel: str) -> int | None:
        """A read descriptor on ``rel``, a link never followed and nothing waited on (a FIFO);
        None when absent or a link. The caller checks what it opened (``os.fstat``)."""
        try:
            fd, name = self._at(rel)
        except (FileNotFoundError, NotADirectoryError):
            return None
        try:
            return os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=fd)
        except FileNotFoundError:
            return None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                return None
            raise
        finally:
            self._done(fd)

    def open_trusted(self, rel: str) -> int:
        """A read descriptor on an administrator's own regular file ``rel`` (``open_read``'s
        rules: not a link, no other hard link, root's or ours); ``UnsafePath`` for anything else."""
        where = os.path.join(self.path, rel)
        fd = self.open_read(rel)
        if fd is None:
            raise UnsafePath(where, "is a symbolic link or is missing")
        try:
            _check_posix_file(fd, where)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def open_new(self, rel: str, mode: int = 0o644) -> int:
        """A write descriptor on ``rel``, which this call creates: any existing name, a link
        included, is an error (``O_CREAT|O_EXCL|O_NOFOLLOW``), never written through."""
        return self._call(os.open, rel, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode)

    def mkdir(self, rel: str, mode: int = 0o755, parents: bool = False) -> None:
        """Make the folder ``rel`` (``parents``: the missing ones on the way too, an existing
        folder accepted); never through a link."""
        parts = [p for p in rel.split(os.sep) if p]
        for i in range(0 if parents else len(parts) - 1, len(parts)):
            fd, name = self._at(os.sep.join(parts[: i + 1]))
            try:
                os.mkdir(name, mode, dir_fd=fd)
            except FileExistsError:
                st = _lstat_at(fd, name)
                if not (parents and st is not None and stat.S_ISDIR(st.st_mode)):
                    raise
            finally:
                self._done(fd)

    def _call(self, op, rel: str, *args):
        """``op(name, *args, dir_fd=...)`` on ``rel``, relative to the folder it lies in."""
        fd, name = self._at(rel)
        try:
            return op(name, *args, dir_fd=fd)
        finally:
            self._done(fd)

    def unlink(self, rel: str) -> None:
        self._call(os.unlink, rel)

    def rmdir(self, rel: str) -> None:
        self._call(os.rmdir, rel)

    def rename(self, src: str, dst: str, replace: bool = False) -> None:
        """``src`` to ``dst``, both below this folder (``_rename_at``)."""
        sfd, sname = self._at(src)
        try:
            dfd, dname = self._at(dst)
            try:
                _rename_at(sfd, sname, dname, replace, dfd)
            finally:
                self._done(dfd)
        finally:
            self._done(sfd)

    def purge(self, rel: str) -> None:
        """Delete the folder ``rel`` and all in it, which another user may own (``_purge_at``)."""
        fd, name = self._at(rel)
        try:
            _purge_at(fd, name)
        finally:
            self._done(fd)

    def entries(self, suspicious: bool, repair: bool) -> list[tuple[str, str]]:
        """(path, why) of each entry below that an administrator did not lay: owned by anyone
        else, and when ``suspicious`` (the folder was open to others) also a link, a hard-linked
        file or anything not a file or folder. Those are listed, never opened nor descended into;
        the rest are, each by the descriptor it was judged on, and with ``repair`` lose write
        access for others."""
        out: list[tuple[str, str]] = []
        pending = [(os.dup(self.fd), self.path)]
        try:
            self._judge(pending, out, suspicious, repair)
        finally:
            for fd, _ in pending:
                os.close(fd)
        return sorted(out)

    @staticmethod
    def _judge(pending: list[tuple[int, str]], out: list[tuple[str, str]], suspicious: bool, repair: bool) -> None:
        while pending:
            fd, path = pending.pop()
            try:
                with os.scandir(fd) as it:
                    names = [e.name for e in it]
                for name in names:
                    st = _lstat_at(fd, name)
                    if st is None:
                        continue
                    why = _entry_problem(st, suspicious)
                    if why:
                        out.append((os.path.join(path, name), why))
                        continue
                    folder = stat.S_ISDIR(st.st_mode)
                    opened = repair and st.st_mode & 0o022 and (folder or stat.S_ISREG(st.st_mode))
                    if not (folder or opened):
                        continue
                    child = _open_judged(fd, name, st)
                    if opened:
                        os.fchmod(child, stat.S_IMODE(st.st_mode) & ~0o022)
                    if folder:
                        pending.append((child, os.path.join(path, name)))
                    else:
                        os.close(child)
            finally:
                os.close(fd)


def _check_posix_file(fd: int, path: str) -> None:
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        raise UnsafePath(path, "is not a regular file")
    if st.st_nlink > 1:
        raise UnsafePath(path, f"has {st.st_nlink} hard links (another name could point at a file of ours)")
    if not trusted_uid(st.st_uid):
        raise UnsafePath(path, f"is owned by uid {st.st_uid}, not by root or this user")
    if st.st_mode & 0o077:
        os.fchmod(fd, 0o600)


if sys.platform == "win32":  # pragma: no cover - exercised in the Windows lane
    from basics import _winsec as _win

    def _open(path: str, flags: int) -> int:
        return _win.open_file(path, flags, _FILE_SDDL)

    Folder = _win.Folder
else:
    Folder = _PosixFolder

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
