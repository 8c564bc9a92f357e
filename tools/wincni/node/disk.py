"""The file operations ``wincni install`` needs, with Windows' rules for files in use.

On Windows a running ``.exe`` (and a DLL a process loaded) can be renamed but neither replaced nor
deleted, and a folder holding such a file can be neither renamed nor deleted: those calls raise
``PermissionError``. Install relies on exactly that and nothing more; tests give it a ``Disk``
that enforces the same rules on Linux, where nothing is ever held.

A folder install writes in is judged once (``claim``, ``secure``) and then held open
(``safefs.Folder``): every later step at or below it, reads included, goes through that
descriptor (a pinned handle on Windows), never through the path looked up again, so a folder a
user swaps for a link after the check is never reached. Writing anywhere else is refused, but
for the scratch folder a package zip is unpacked into (``unpack``: made new and private, deleted
at ``close``). Paths outside the held folders (the package folder, the files flags name) are
only read. Nothing here writes, deletes or lists through a link: files are written new and renamed
into place; deleting has two forms, ``remove`` (an entry that is not a folder, a link itself) and
``purge`` (a folder and all in it).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
from typing import Callable

from basics.errors import UnsafePath


class Disk:
    def __init__(self) -> None:
        #: The folders judged so far, by path; None: one a dry run found missing or would make anew.
        self._held: dict[str, object] = {}
        self._scratch: list[str] = []  # private temp folders of this run (``unpack``), gone at ``close``

    # ------------------------------------------------------------------ held folders

    def claim(self, path: str) -> tuple[list, list[tuple[str, str]]]:
        """Make ``path`` (and every folder on the way) install's: another user's folder moved
        aside and made anew, an administrator's closed to others, Users left to read and run
        (the ACL ``build.ps1 -Install`` sets); then hold it. What had to be done on the way
        (``safefs.Takeover``), and what in it an administrator did not lay (``safefs.claim_dir``)."""
        from basics.safefs import claim_dir

        folder, done, foreign = claim_dir(path)
        self._hold(path, folder)
        return done, foreign

    def survey(self, path: str) -> tuple[list, list[tuple[str, str]]]:
        """What ``claim`` would say, changing nothing (a dry run; ``safefs.survey_dir``); the folder
        is held for reading, or read as empty where the real run would lay into a new one."""
        from basics.safefs import survey_dir

        folder, done, foreign = survey_dir(path)
        self._hold(path, folder)
        return done, foreign

    def secure(self, path: str) -> None:
        """Make ``path`` an admin-only folder (created when missing, reached without following a
        link: ``safefs.secure_folder``) and hold it, for a tool's own output file."""
        from basics.safefs import secure_folder

        self._hold(path, secure_folder(path))

    def close(self) -> None:
        """Close every held folder and delete the scratch folders (the end of a run)."""
        for folder in self._held.values():
            if folder is not None:
                folder.close()
        self._held.clear()
        while self._scratch:
            shutil.rmtree(self._scratch.pop(), ignore_errors=True)

    def unpack(self, path: str, max_bytes: int, max_entries: int, executable: Callable[[str], bool]) -> str:
        """The zip ``path`` unpacked into a new private temp folder (``mkdtemp``: ours, 0700, made
        where nobody else can have put it), deleted at ``close``; opened as ``basics.inputfile``
        opens what a flag names (a regular file, never waited on, no user's link followed).
        ValueError when it holds more than ``max_entries`` entries or ``max_bytes`` unpacked;
        top-level names ``executable`` says are commands get their execute bits (zip keeps none)."""
        import tempfile
        import zipfile

        from basics.inputfile import open_file

        fd, _ = open_file(path, max_bytes)
        with open(fd, "rb") as f, zipfile.ZipFile(f) as zf:
            infos = zf.infolist()
            if len(infos) > max_entries or sum(i.file_size for i in infos) > max_bytes:
                raise ValueError(f"more than {max_entries} entries or {max_bytes >> 20} MiB")
            tmp = tempfile.mkdtemp(prefix="wincni-package-")
            self._scratch.append(tmp)
            zf.extractall(tmp)  # drops absolute paths and ".." from member names
        if os.name != "nt":
            for name in os.listdir(tmp):
                p = os.path.join(tmp, name)
                if os.path.isfile(p) and executable(name):
                    os.chmod(p, 0o755)
        return tmp

    def _hold(self, path: str, folder: object) -> None:
        key = _key(path)
        old = self._held.pop(key, None)
        if old is not None:
            old.close()
        self._held[key] = folder

    def _where(self, path: str) -> tuple[object, str] | None:
        """(the held folder ``path`` lies in, the rest of the path), the deepest one; None when it
        lies in none. The folder is None for one a dry run reads as empty."""
        full = _key(path)
        best = None
        for key, folder in self._held.items():
            if full == key or full.startswith(key.rstrip(os.sep) + os.sep):
                if best is None or len(key) > len(best[0]):
                    best = (key, folder)
        if best is None:
            return None
        rest = os.path.normpath(os.path.abspath(path))[len(best[0]) :]  # as given: its case kept
        return best[1], rest.lstrip(os.sep)

    def _inside(self, path: str):
        """(folder, rest) for a change at ``path``: only ever inside a folder judged and held."""
        found = self._where(path)
        if found is None or found[0] is None:
            raise UnsafePath(path, "lies outside the folders install judged", "nothing is written there")
        return found

    # ------------------------------------------------------------------ reading

    def _scan(self, path: str) -> list[tuple[str, os.stat_result]]:
        """(name, lstat) of each entry of the folder ``path``; [] when there is none."""
        found = self._where(path)
        if found is not None:
            return found[0].scan(found[1]) if found[0] is not None else []
        if os.path.islink(path):
            return []
        try:
            with os.scandir(path) as entries:
                return [(e.name, e.stat(follow_symlinks=False)) for e in entries]
        except (FileNotFoundError, NotADirectoryError):
            return []

    def listdir(self, path: str) -> tuple[list[str], list[str]]:
        """(files, folders) directly in ``path``; both empty when it does not exist. Links are
        neither: a link placed in a CNI directory is not ours to follow."""
        files, dirs = [], []
        for name, st in self._scan(path):
            if stat.S_ISLNK(st.st_mode) or _reparse_point(st):
                continue
            (dirs if stat.S_ISDIR(st.st_mode) else files).append(name)
        return files, dirs

    def exists(self, path: str) -> bool:
        found = self._where(path)
        if found is None:
            return os.path.lexists(path)
        return found[0] is not None and found[0].lstat(found[1]) is not None

    def is_folder(self, path: str) -> bool:
        """Inside a held folder: ``path`` is a folder itself (a link or junction is not, whatever it
        points to). Elsewhere: a folder is there, a link to one too (the claim judges the link)."""
        found = self._where(path)
        if found is None:
            return os.path.isdir(path)
        st = found[0].lstat(found[1]) if found[0] is not None else None
        return st is not None and stat.S_ISDIR(st.st_mode) and not _reparse_point(st)

    def _open_plain(self, path: str) -> int | None:
        """A read descriptor on ``path``: no final link followed, nothing waited on; None when
        absent or a link. Inside a held folder, relative to it."""
        found = self._where(path)
        if found is None:
            return _open_plain(path)
        return found[0].open_read(found[1]) if found[0] is not None else None

    def read_entry(self, path: str, cap: int) -> bytes | None:
        """At most ``cap`` bytes of the file ``path`` in a CNI folder; None when absent, a link
        (never followed: in a dry run the folder may still be a user's) or not a regular file."""
        fd = self._open_plain(path)
        if fd is None:
            return None
        with open(fd, "rb") as f:
            return f.read(cap) if stat.S_ISREG(os.fstat(fd).st_mode) else None

    def read_trusted(self, path: str, cap: int) -> bytes:
        """At most ``cap`` bytes of an administrator's own regular file, opened without following
        a link; ``UnsafePath`` for anything else (``safefs.open_read``'s rules). Inside a held
        folder, relative to it; elsewhere (the doctor's audit, which holds nothing) by path."""
        found = self._where(path)
        if found is None or found[0] is None:
            from basics.safefs import open_read

            fd = open_read(path)
        else:
            fd = found[0].open_trusted(found[1])
        with open(fd, "rb") as f:
            return f.read(cap)

    def same(self, a: str, b: str) -> bool:
        """``b`` has ``a``'s bytes, and is a file of its own (a link never is the same)."""
        fd = self._open_plain(b)
        if fd is None:
            return False
        with open(fd, "rb") as f_b:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return False
            try:
                if os.path.getsize(a) != os.fstat(fd).st_size:
                    return False
                with open(a, "rb") as f_a:
                    return _same_stream(f_a, f_b)
            except OSError:
                return False

    def digest(self, path: str) -> str:
        """sha256 over the folder ``path``: every name, kind and file content below it, links
        not followed (a link counts as one, so it never matches a folder install copied)."""
        h = hashlib.sha256()
        pending = [""]
        while pending:
            rel = pending.pop()
            for e_name, st in sorted(self._scan(os.path.join(path, rel))):
                name = os.path.join(rel, e_name)
                label = name.encode("utf-8", "surrogateescape") + b"\0"
                if stat.S_ISLNK(st.st_mode) or _reparse_point(st):  # a junction too
                    h.update(b"L" + label)
                elif stat.S_ISDIR(st.st_mode):
                    h.update(b"D" + label)
                    pending.append(name)
                else:
                    content = self._file_digest(os.path.join(path, name))
                    h.update((b"F" if content else b"S") + label)
                    h.update(content)
        return h.hexdigest()

    def _file_digest(self, path: str) -> bytes:
        """sha256 of the regular file ``path``, read in chunks; b"" for anything else (a FIFO, a
        device, a link put there since the folder was listed), never followed nor waited on."""
        try:
            fd = self._open_plain(path)
        except OSError:
            return b""
        if fd is None:
            return b""
        with open(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return b""
            return hashlib.file_digest(f, "sha256").digest()

    def fresh_name(self, base: str) -> str:
        """``base`` or ``base.1``, ``base.2``…: the first name nothing holds."""
        from basics.takeover import fresh

        return fresh(base, self.exists)

    # ------------------------------------------------------------------ changing (held folders only)

    def makedirs(self, path: str) -> None:
        """``path`` and the folders on the way to it below the held folder, never through a link."""
        folder, rel = self._inside(path)
        if rel:
            folder.mkdir(rel, 0o755, parents=True)

    def fresh_dir(self, path: str) -> None:
        """Create the admin-only folder ``path``, which must not exist (a quarantine folder:
        nobody else may have put a folder or link there first)."""
        folder, rel = self._inside(path)
        folder.mkdir(rel, 0o700)

    def purge(self, path: str) -> None:
        """Delete the folder ``path`` and all in it, which another user may own, never through a
        link or junction swapped in while it is deleted (``safefs.Folder.purge``). One of the two
        ways install deletes, with ``remove``."""
        folder, rel = self._inside(path)
        folder.purge(rel)

    def copy_file(self, src: str, dst: str) -> None:
        """``dst`` created new (never through what was there), with ``src``'s bytes and mode less
        any write bit for group and others (a package folder others may write is no reason)."""
        folder, rel = self._inside(dst)
        mode = stat.S_IMODE(os.stat(src).st_mode) & 0o755
        with open(src, "rb") as f_src, open(folder.open_new(rel, mode), "wb") as f_dst:
            shutil.copyfileobj(f_src, f_dst)
            if hasattr(os, "fchmod"):  # POSIX: the umask may have taken the execute bits
                os.fchmod(f_dst.fileno(), mode)

    def copy_tree(self, src: str, dst: str) -> None:
        """``dst`` made new (an existing one is an error), so nobody else put anything in it, with
        ``src``'s files and folders (links in the package followed), made under a umask taking
        write from others whatever ours was (0 in some containers), and never opened up after."""
        folder, rel = self._inside(dst)
        old = os.umask(0o022)
        try:
            _copy_tree(folder, src, rel)
        finally:
            os.umask(old)

    def replace(self, src: str, dst: str) -> None:
        folder, rel = self._inside(src)
        folder.rename(rel, self._sibling(folder, dst), replace=True)

    def rename(self, src: str, dst: str) -> None:
        """Never overwrites (``os.rename`` replaces on POSIX, so ``Folder.rename`` looks first)."""
        folder, rel = self._inside(src)
        folder.rename(rel, self._sibling(folder, dst))

    def _sibling(self, folder: object, path: str) -> str:
        """``path`` relative to ``folder``, which it must lie in (a rename never leaves it)."""
        other, rel = self._inside(path)
        if other is not folder:
            raise UnsafePath(path, "lies in another folder than what is moved there", "nothing was moved")
        return rel

    def remove(self, path: str) -> None:
        """Delete the entry ``path`` that is not a folder: a file, or a link itself, never
        followed (on Windows a folder-like junction or link is removed as the folder it poses as)."""
        folder, rel = self._inside(path)
        st = folder.lstat(rel)
        if st is not None and _reparse_point(st) and st.st_file_attributes & stat.FILE_ATTRIBUTE_DIRECTORY:
            folder.rmdir(rel)
            return
        folder.unlink(rel)

    def write_atomic(self, path: str, data: bytes) -> None:
        """A reader sees the old file or the new one, never a part: a temp file beside it made
        new (a leftover of an interrupted run is unlinked first), then renamed over it."""
        folder, rel = self._inside(path)
        tmp = os.path.join(os.path.dirname(rel), f".{os.path.basename(rel)}.wincni-tmp")
        if folder.lstat(tmp) is not None:
            folder.unlink(tmp)
        with open(folder.open_new(tmp), "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        folder.rename(tmp, rel, replace=True)


def _key(path: str) -> str:
    """``path`` as the held folders are looked up by: absolute, normalised, and on Windows in one
    case with one separator (``c:/x`` and ``C:\\X`` are the same folder there; normcase keeps the
    length, so the rest of a path is cut from it as given)."""
    return os.path.normcase(os.path.normpath(os.path.abspath(path)))


def _copy_tree(folder, src: str, rel: str) -> None:
    """``src`` (a package folder, read by path) into the new folder ``rel`` of ``folder``."""
    folder.mkdir(rel, 0o755)
    with os.scandir(src) as entries:
        for e in entries:
            if e.is_dir():
                _copy_tree(folder, e.path, os.path.join(rel, e.name))
                continue
            with open(e.path, "rb") as f_src, open(folder.open_new(os.path.join(rel, e.name)), "wb") as f_dst:
                shutil.copyfileobj(f_src, f_dst)


def _same_stream(a, b) -> bool:
    while True:
        x, y = a.read(1 << 16), b.read(1 << 16)
        if x != y:
            return False
        if not x:
            return True


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
