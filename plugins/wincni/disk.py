"""The file operations ``wincni install`` needs, with Windows' rules for files in use.

On Windows a running ``.exe`` (and a DLL a process loaded) can be renamed but neither replaced nor
deleted, and a folder holding such a file can be neither renamed nor deleted: those calls raise
``PermissionError``. Install relies on exactly that and nothing more; tests give it a ``Disk``
that enforces the same rules on Linux, where nothing is ever held.
"""
from __future__ import annotations

import filecmp
import os
import shutil


class Disk:
    def listdir(self, path: str) -> tuple[list[str], list[str]]:
        """(files, folders) directly in ``path``; both empty when it does not exist. Links are
        neither: a link placed in a CNI directory is not ours to follow."""
        files, dirs = [], []
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

    def same(self, a: str, b: str) -> bool:
        try:
            return filecmp.cmp(a, b, shallow=False)
        except OSError:
            return False

    def makedirs(self, path: str) -> None:
        os.makedirs(path, exist_ok=True)

    def protect(self, path: str) -> None:
        """Administrators (root) alone may write ``path`` and what is in it; Users read and run
        (the ACL ``build.ps1 -Install`` sets): the plugins run from here as SYSTEM."""
        from libhns.safefs import protect_dir
        protect_dir(path)

    def copy_file(self, src: str, dst: str) -> None:
        shutil.copyfile(src, dst)
        shutil.copymode(src, dst)

    def copy_tree(self, src: str, dst: str) -> None:
        # copyfile, not copytree's default copy2: on Windows copy2 calls CopyFile2, which adds
        # nothing here (metadata) and which Wine lacks (the Windows test lane).
        shutil.copytree(src, dst, symlinks=False, copy_function=shutil.copyfile)

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
        """A reader sees the old file or the new one, never a part: temp file beside it, then rename."""
        tmp = os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.wincni-tmp")
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
