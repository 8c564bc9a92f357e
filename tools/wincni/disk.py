"""The file operations ``wincni install`` needs, with Windows' rules for files in use.

On Windows a running ``.exe`` (and a DLL a process loaded) can be renamed but neither replaced nor
deleted, and a folder holding such a file can be neither renamed nor deleted: those calls raise
``PermissionError``. Install relies on exactly that and nothing more; tests give it a ``Disk``
that enforces the same rules on Linux, where nothing is ever held.

Nothing here writes, deletes or lists through a link: files are written new (``safefs.open_new``)
and renamed into place; an entry to get rid of is unlinked, or renamed to a fresh trash name
beside it and deleted from there.
"""

from __future__ import annotations

import filecmp
import hashlib
import os
import shutil
import stat


class Disk:
    def listdir(self, path: str) -> tuple[list[str], list[str]]:
        """(files, folders) directly in ``path``; both empty when it does not exist. Links are
        neither: a link placed in a CNI directory is not ours to follow."""
        files, dirs = [], []
        if os.path.islink(path):
            return files, dirs
        try:
            with os.scandir(path) as entries:
                for e in entries:
                    if e.is_symlink():
                        continue
                    (dirs if e.is_dir(follow_symlinks=False) else files).append(e.name)
        except (FileNotFoundError, NotADirectoryError):
            pass
        return files, dirs

    def exists(self, path: str) -> bool:
        return os.path.lexists(path)

    def read(self, path: str, cap: int) -> bytes | None:
        """At most ``cap`` bytes; None when absent."""
        try:
            with open(path, "rb") as f:
                return f.read(cap)
        except FileNotFoundError:
            return None

    def read_entry(self, path: str, cap: int) -> bytes | None:
        """At most ``cap`` bytes of the file ``path`` in a CNI folder; None when absent, a link
        (never followed: in a dry run the folder may still be a user's) or not a regular file."""
        fd = _open_plain(path)
        if fd is None:
            return None
        with open(fd, "rb") as f:
            return f.read(cap) if stat.S_ISREG(os.fstat(fd).st_mode) else None

    def read_trusted(self, path: str, cap: int) -> bytes:
        """At most ``cap`` bytes of an administrator's own regular file, opened without following
        a link; ``UnsafePath`` for anything else (``safefs.open_read``)."""
        from basics.safefs import open_read

        with open(open_read(path), "rb") as f:
            return f.read(cap)

    def same(self, a: str, b: str) -> bool:
        """``b`` has ``a``'s bytes, and is a file of its own (a link never is the same)."""
        if os.path.islink(b):
            return False
        try:
            return filecmp.cmp(a, b, shallow=False)
        except OSError:
            return False

    def makedirs(self, path: str) -> None:
        """``path`` as an admin-only folder, reached without following a link (``safefs.secure_dir``)."""
        from basics.safefs import secure_dir

        secure_dir(path)

    def claim(self, path: str) -> tuple[str | None, list[tuple[str, str]]]:
        """Make ``path`` (and every folder on the way) admin-only: Administrators (root) alone
        may write, Users read and run (the ACL ``build.ps1 -Install`` sets); why it had to be
        taken over, and what in it an administrator did not lay (``safefs.claim_dir``)."""
        from basics.safefs import claim_dir

        return claim_dir(path)

    def survey(self, path: str) -> tuple[str | None, list[tuple[str, str]]]:
        """What ``claim`` would say, changing nothing (a dry run; ``safefs.survey_dir``)."""
        from basics.safefs import survey_dir

        return survey_dir(path)

    def discard(self, path: str) -> None:
        """Get rid of ``path`` without following it: a link or file is unlinked, a folder renamed
        to a fresh name beside it first (its owner can no longer swap it) and purged from there."""
        st = os.lstat(path)
        if _reparse_point(st):  # Windows: a junction or symbolic link itself, folder- or file-like
            (os.rmdir if st.st_file_attributes & stat.FILE_ATTRIBUTE_DIRECTORY else os.unlink)(path)
            return
        if not stat.S_ISDIR(st.st_mode):
            os.unlink(path)
            return
        from .layout import DISCARDED

        trash = self.fresh_name(path + DISCARDED)  # a later install's cleanup finishes it
        os.rename(path, trash)
        self.purge(trash)

    def purge(self, path: str) -> None:
        """Delete the folder ``path`` another user may own, never through a link or junction
        swapped in while it is deleted (``safefs.purge``)."""
        from basics.safefs import purge

        purge(path)

    def fresh_name(self, base: str) -> str:
        """``base`` or ``base.1``, ``base.2``…: the first name nothing holds."""
        path, n = base, 0
        while os.path.lexists(path):
            n += 1
            path = f"{base}.{n}"
        return path

    def fresh_dir(self, path: str) -> None:
        """Create the admin-only folder ``path``, which must not exist (``safefs.fresh_dir``)."""
        from basics.safefs import fresh_dir

        fresh_dir(path)

    def digest(self, path: str) -> str:
        """sha256 over the folder ``path``: every name, kind and file content below it, links
        not followed (a link counts as one, so it never matches a folder install copied)."""
        h = hashlib.sha256()
        pending = [""]
        while pending:
            rel = pending.pop()
            with os.scandir(os.path.join(path, rel)) as it:
                entries = sorted(it, key=lambda e: e.name)
            for e in entries:
                name = os.path.join(rel, e.name)
                st = e.stat(follow_symlinks=False)
                if stat.S_ISLNK(st.st_mode) or _reparse_point(st):  # a junction too
                    h.update(b"L" + name.encode("utf-8", "surrogateescape") + b"\0")
                elif stat.S_ISDIR(st.st_mode):
                    h.update(b"D" + name.encode("utf-8", "surrogateescape") + b"\0")
                    pending.append(name)
                else:
                    content = _file_digest(os.path.join(path, name))
                    h.update((b"F" if content else b"S") + name.encode("utf-8", "surrogateescape") + b"\0")
                    h.update(content)
        return h.hexdigest()

    def copy_file(self, src: str, dst: str) -> None:
        """``dst`` created new (never through what was there), with ``src``'s bytes and mode less
        any write bit for group and others (a release folder others may write is no reason)."""
        from basics.safefs import open_new

        mode = stat.S_IMODE(os.stat(src).st_mode) & 0o755
        with open(src, "rb") as f_src, open(open_new(dst, mode), "wb") as f_dst:
            shutil.copyfileobj(f_src, f_dst)
            if hasattr(os, "fchmod"):  # POSIX: the umask may have taken the execute bits
                os.fchmod(f_dst.fileno(), mode)

    def copy_tree(self, src: str, dst: str) -> None:
        """``dst`` made new (an existing one is an error), so nobody else put anything in it, with
        ``src``'s files and folders (links in the release followed), made under a umask taking
        write from others whatever ours was (0 in some containers), and never opened up after:
        not ``shutil.copytree``, which copies each folder's mode once it is filled."""
        old = os.umask(0o022)
        try:
            _copy_tree(src, dst)
        finally:
            os.umask(old)

    def replace(self, src: str, dst: str) -> None:
        os.replace(src, dst)

    def rename(self, src: str, dst: str) -> None:
        """Never overwrites (``os.rename`` replaces on POSIX, so check first)."""
        if os.path.lexists(dst):
            raise FileExistsError(dst)
        os.rename(src, dst)

    def remove(self, path: str) -> None:
        os.remove(path)

    def rmdir(self, path: str) -> None:
        os.rmdir(path)

    def rmtree(self, path: str) -> None:
        shutil.rmtree(path)

    def write_atomic(self, path: str, data: bytes) -> None:
        """A reader sees the old file or the new one, never a part: a temp file beside it made
        new (a leftover of an interrupted run is unlinked first), then renamed over it."""
        from basics.safefs import open_new

        tmp = os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.wincni-tmp")
        if os.path.lexists(tmp):
            os.unlink(tmp)
        with open(open_new(tmp), "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)


def _copy_tree(src: str, dst: str) -> None:
    # copyfile, not copy2: on Windows copy2 calls CopyFile2, which adds nothing here (metadata)
    # and which Wine lacks (the Windows test lane).
    os.mkdir(dst)
    with os.scandir(src) as entries:
        for e in entries:
            (_copy_tree if e.is_dir() else shutil.copyfile)(e.path, os.path.join(dst, e.name))


def _reparse_point(st: os.stat_result) -> bool:
    """Windows: ``st`` (an ``lstat``'s) is a junction or link itself; never on POSIX."""
    return bool(getattr(st, "st_file_attributes", 0) & stat.FILE_ATTRIBUTE_REPARSE_POINT)


def _open_plain(path: str) -> int | None:
    """A read descriptor on ``path`` opened without following a final link and without waiting
    (``O_NONBLOCK``: a FIFO a user planted never hangs us); None when absent or a link (Windows:
    a reparse point, judged by ``lstat`` as os.open has no no-follow flag there)."""
    try:
        if os.name == "nt" and _reparse_point(os.lstat(path)):
            return None
        return os.open(
            path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
        )
    except FileNotFoundError:
        return None
    except OSError:
        if os.path.islink(path):
            return None
        raise


def _file_digest(path: str) -> bytes:
    """sha256 of the regular file ``path``, read in chunks; b"" for anything else (a FIFO, a
    device, a link put there since the folder was listed), never followed nor waited on."""
    try:
        fd = _open_plain(path)
    except OSError:
        return b""
    if fd is None:
        return b""
    with open(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return b""
        return hashlib.file_digest(f, "sha256").digest()
