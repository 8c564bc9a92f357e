"""The folder ``wincni install`` works in, on POSIX: ``PosixFolder``, held open on the descriptor
the walk (``posixfs``) judged, every step in it taken relative to that descriptor; what it holds
judged entry by entry; a tree another user may own deleted without following a link.
"""

from __future__ import annotations

import errno
import os
import stat

from basics.errors import UnsafePath
from basics.posixfs import DIR, check_file, lstat_at, rename_at, trusted_uid, walk


def secure_folder(path: str, mode: int = 0o755) -> PosixFolder:
    """``secure_dir``, the folder then held open (``Folder``) for what a tool writes in it."""
    fd, _ = walk(path, mode & 0o755, "repair")
    return PosixFolder(path, fd)


def claim(path: str, sddl: str) -> tuple[PosixFolder, list]:
    """``safefs.claim_dir``'s walk on POSIX (``sddl`` is Windows'): the folder and what was done."""
    fd, done = walk(path, 0o755, "claim")
    return PosixFolder(path, fd), done


def survey(path: str) -> tuple[PosixFolder | None, list]:
    """``safefs.survey_dir``'s walk: None for a folder that does not exist yet or would be made anew."""
    fd, done = walk(path, None, "survey")
    return (None if fd is None else PosixFolder(path, fd)), done


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


def _purge_at(parent: int, name: str) -> None:
    """Delete ``name`` in ``parent`` and all below it, which another user may own: each folder
    opened relative to the one above without following a link, and taken (root's, 0700) before
    it is listed, so nobody can add or swap an entry in it any more; a link is unlinked itself."""
    try:
        fd = os.open(name, DIR, dir_fd=parent)
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
    flags = (DIR if stat.S_ISDIR(st.st_mode) else os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC) | os.O_NONBLOCK
    fd = os.open(name, flags, dir_fd=parent)
    now = os.fstat(fd)
    if (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
        os.close(fd)
        raise UnsafePath(name, "was replaced while it was being checked", "run install again")
    return fd


class PosixFolder:
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
                child = os.open(part, DIR, dir_fd=fd)
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
            return lstat_at(fd, name)
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
            return [(n, st) for n in names if (st := lstat_at(fd, n)) is not None]
        finally:
            self._done(fd)

    def _open_dir(self, rel: str) -> int:
        if not rel:
            return self.fd
        fd, name = self._at(rel)
        try:
            return os.open(name, DIR, dir_fd=fd)
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
            check_file(fd, where)
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
                st = lstat_at(fd, name)
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
        """``src`` to ``dst``, both below this folder (``rename_at``)."""
        sfd, sname = self._at(src)
        try:
            dfd, dname = self._at(dst)
            try:
                rename_at(sfd, sname, dname, replace, dfd)
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
                    st = lstat_at(fd, name)
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


Folder = PosixFolder  # safefs.Folder on POSIX
