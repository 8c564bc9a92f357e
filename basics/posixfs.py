"""``safefs`` on POSIX: folders opened component by component from ``/`` without following a
link (``O_NOFOLLOW``, each relative to the folder before), judged on the descriptor then opened;
files opened no-follow and owner-checked. What the plugins write and lock in goes through here;
``posixfolder`` holds the folder ``wincni install`` works in.
"""

from __future__ import annotations

import errno
import os
import stat

from basics.errors import UnsafePath


def secure_dir(path: str, mode: int = 0o755) -> None:
    """Create ``path`` admin-only (missing parents too; ``mode`` on POSIX, never group/other
    writable), or accept an existing one we can trust. Every component is opened from the root
    without following a link, and each existing one must be a real folder root/SYSTEM/
    Administrators (or we) own: a user's link or folder anywhere on the way is refused, named.
    On Windows the folder then stays held until the process exits (``winfs.HELD``)."""
    os.close(walk(path, mode & 0o755, "repair")[0])


def check_dir(path: str) -> None:
    """Refuse the existing folder ``path`` unless it is admin-only: a real folder owned by
    root/SYSTEM/Administrators or us, that nobody else may write, reached without a link through
    folders as trusted. For folders whose *contents* are trusted (saved configs): write access
    for others is refused, not repaired. FileNotFoundError when a component is missing. On
    Windows the folder then stays held until the process exits (``winfs.HELD``)."""
    os.close(walk(path, None, "refuse")[0])


def open_append(path: str) -> int:
    """A descriptor appending to ``path`` (created owner-only), refused when it is not ours."""
    return _open_file(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)


def open_lock(path: str) -> int:
    """A read-write descriptor on the lock file ``path`` (created owner-only), as ``open_append``."""
    return _open_file(path, os.O_RDWR | os.O_CREAT)


def open_read(path: str) -> int:
    """A read-only descriptor on the existing file ``path``, refused when it is not ours."""
    return _open_file(path, os.O_RDONLY)


def writable_by_others(path: str) -> str | None:
    """Who besides root/SYSTEM/Administrators (and the owner, when trusted) may write ``path``,
    or None; the doctor's check. POSIX: the owner and the mode bits; Windows: the owner and DACL."""
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        return "a symbolic link (anyone who can write its parent can point it elsewhere)"
    if not trusted_uid(st.st_uid):
        return f"its owner (uid {st.st_uid})"
    who = [w for bit, w in ((0o020, "its group"), (0o002, "every user")) if st.st_mode & _open_bits(st) & bit]
    return " and ".join(who) or None


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


DIR = (os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC) if hasattr(os, "O_DIRECTORY") else 0


def walk(path: str, create: int | None, last: str) -> tuple[int | None, list]:
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
    fd: int | None = os.open("/", DIR)
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
        aside = fresh(name + QUARANTINED, lambda n: lstat_at(parent, n) is not None)
        if survey:
            return None, os.path.join(os.path.dirname(here), aside)
        try:
            rename_at(parent, name, aside, replace=False)
        except OSError as exc:  # the aside name taken meanwhile: another one
            if exc.errno not in (errno.EEXIST, errno.ENOTEMPTY, errno.ENOTDIR, errno.EISDIR):
                raise
            continue
        try:
            os.mkdir(name, 0o700, dir_fd=parent)
        except FileExistsError:  # made again before ours: move that aside too
            continue
        fd = os.open(name, DIR, dir_fd=parent)
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
        return os.open(name, DIR, dir_fd=parent)
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


def lstat_at(parent: int, name: str) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=parent, follow_symlinks=False)
    except FileNotFoundError:
        return None


def rename_at(parent: int, src: str, dst: str, replace: bool, dst_parent: int | None = None) -> None:
    """``src`` to ``dst`` within the open folders (a link is renamed as it is); without ``replace``
    an existing ``dst`` is an error (``os.rename`` replaces on POSIX, so look first: nobody but us
    writes a folder we hold)."""
    target = parent if dst_parent is None else dst_parent
    if not replace and lstat_at(target, dst) is not None:
        raise FileExistsError(17, "exists", dst)
    os.rename(src, dst, src_dir_fd=parent, dst_dir_fd=target)


def check_file(fd: int, path: str) -> None:
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        raise UnsafePath(path, "is not a regular file")
    if st.st_nlink > 1:
        raise UnsafePath(path, f"has {st.st_nlink} hard links (another name could point at a file of ours)")
    if not trusted_uid(st.st_uid):
        raise UnsafePath(path, f"is owned by uid {st.st_uid}, not by root or this user")
    if st.st_mode & 0o077:
        os.fchmod(fd, 0o600)


def _open_file(path: str, flags: int) -> int:
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        if os.path.islink(path):
            raise UnsafePath(path, "is a symbolic link") from exc
        raise
    try:
        check_file(fd, path)
    except BaseException:
        os.close(fd)
        raise
    return fd
