"""Windows folders ``safefs`` hands out: a folder judged by the walk (``winwalk``) and pinned
(``WindowsFolder``), what it holds judged entry by entry, and a tree taken over before it is
deleted."""

from __future__ import annotations

import ctypes
import os

from basics import win32sec as w32
from basics.errors import UnsafePath
from basics.sddl import ADMIN_ONLY, known, names, owner_of
from basics.winhandle import (
    SecurityDescriptor,
    apply_sddl,
    create_new,
    enable_privileges,
    file_info,
    handle_sddl,
    open_file,
    open_handle,
    open_plain,
    pin,
    trusted,
)
from basics.winwalk import walk


def secure(path: str, sddl: str) -> WindowsFolder:
    """The folder ``path`` made (``sddl``) or accepted as admin-only, write access for others on
    the last one taken back, then pinned."""
    return WindowsFolder(path, pin(path, walk(path, sddl, create=True, last="repair")[1]), sddl)


def checked(path: str) -> WindowsFolder:
    """The existing folder ``path``, refused unless admin-only all the way, then pinned."""
    return WindowsFolder(path, pin(path, walk(path, None, create=False, last="refuse")[1]), "")


def secure_folder(path: str, mode: int = 0o755) -> WindowsFolder:
    """``safefs.secure_folder`` on Windows (``mode`` is POSIX's: the DACL is ``ADMIN_ONLY``)."""
    return secure(path, ADMIN_ONLY)


def claim(path: str, sddl: str) -> tuple[WindowsFolder, list]:
    """``safefs.claim_dir`` on Windows: the walk, then the folder pinned (a folder to delete below
    it is given ``ADMIN_ONLY`` first)."""
    enable_privileges()
    done, seen = walk(path, sddl, create=True, last="claim")
    return WindowsFolder(path, pin(path, seen), ADMIN_ONLY), done


def survey(path: str) -> tuple[WindowsFolder | None, list]:
    done, seen = walk(path, None, create=False, last="survey")
    return (WindowsFolder(path, pin(path, seen), "") if seen is not None else None), done


def entry_problem(path: str, suspicious: bool, repair: bool) -> tuple[str | None, bool]:
    """``posixfolder._entry_problem`` on Windows; a kept entry inherits only its folder's DACL. An
    entry whose DACL keeps even SYSTEM out is foreign (never a crash)."""
    try:
        handle = open_handle(
            path,
            w32.READ_CONTROL | (w32.WRITE_DAC if repair else 0),
            w32.OPEN_EXISTING,
            w32.FLAG_BACKUP_SEMANTICS,
            None,
        )
    except OSError as exc:
        if exc.winerror != w32.ACCESS_DENIED:
            raise
        return "not readable by SYSTEM (its ACL denies it)", False
    try:
        info = file_info(handle)
        folder = bool(info.dwFileAttributes & w32.ATTR_DIRECTORY)
        reparse = bool(info.dwFileAttributes & w32.ATTR_REPARSE_POINT)
        owner = owner_of(handle_sddl(handle))
        if owner and not known(owner, trusted()):
            return f"owned by {names([owner])}", folder and not reparse
        if reparse:
            return ("a junction or symbolic link (reparse point)" if suspicious else None), False
        if suspicious and not folder and info.nNumberOfLinks > 1:
            return f"a file with {info.nNumberOfLinks} hard links", False
        if not repair:
            return None, folder
        desc = SecurityDescriptor("D:")
        try:
            rc = w32.SetSecurityInfo(
                handle, w32.SE_FILE_OBJECT, w32.DACL_INFO | w32.UNPROTECTED_DACL, None, None, desc.dacl(), None
            )
        finally:
            desc.close()
        if rc:
            raise OSError(0, f"SetSecurityInfo {path}: {ctypes.FormatError(rc)}", path, rc)
        return None, folder
    finally:
        w32.CloseHandle(handle)


def seize_tree(path: str, sddl: str) -> None:
    """Owner Administrators and ``sddl`` (protected) on the folder ``path`` and every folder
    below, each parent before its children, so an entry is listed only once nobody else
    can add or rename one beside it; a reparse point is left as it is, never entered."""
    pending = [path]
    while pending:
        folder = pending.pop()
        try:
            if not apply_sddl(folder, "O:BA" + sddl, w32.OWNER_INFO | w32.DACL_INFO | w32.PROTECTED_DACL):
                continue
        except FileNotFoundError:  # its owner deleted it: nothing to take
            continue
        with os.scandir(folder) as entries:
            pending += [
                e.path
                for e in entries
                if e.is_dir(follow_symlinks=False)
                and not e.stat(follow_symlinks=False).st_file_attributes & w32.ATTR_REPARSE_POINT
            ]


def _writable(path: str) -> None:
    """Clear the read-only attribute a user may have set, which makes even SYSTEM's delete fail."""
    os.chmod(path, 0o666)


def _retry_writable(func, path: str, _exc) -> None:
    _writable(path)
    func(path)


class WindowsFolder:
    """``safefs.Folder`` on Windows: the folder held by a pinned handle (``pin``), so neither
    it nor a folder above it can be renamed, deleted or swapped for a junction while install
    works in it; names below it are taken by path from there, a final reparse point never
    followed (``FILE_FLAG_OPEN_REPARSE_POINT`` on every open; what is below was judged by
    ``entries``, and only administrators may write in it)."""

    def __init__(self, path: str, handle, seize: str) -> None:
        self.path, self._pin, self._seize = os.path.normpath(os.path.abspath(path)), handle, seize

    def close(self) -> None:
        if self._pin:
            w32.CloseHandle(self._pin)
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
        if (
            st is None
            or st.st_file_attributes & w32.ATTR_REPARSE_POINT
            or not st.st_file_attributes & w32.ATTR_DIRECTORY
        ):
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
        """``posixfolder._purge_at`` on Windows: shutil.rmtree lists a folder, then enters each
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


Folder = WindowsFolder  # safefs.Folder on Windows
