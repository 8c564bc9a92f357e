"""Writing the file an operator's flag names (``wincni bundle --out``, ``wincni metrics
--textfile``) as root/SYSTEM into a folder as it is: the counterpart of ``inputfile``.

Such a folder may be shared (``/tmp`` 1777, a group's 2775, a Windows folder whose DACL lets users
add files): it is never changed, neither its mode, owner nor ACL. It is reached as ``inputfile``
reaches what a flag names (a link followed only when an administrator owns it) and held: POSIX by
its descriptor, Windows by a pinned handle (``winhandle.pin``: reached through no junction, and
neither it nor a folder above can be renamed while held). The file is one of ours: created new in
that folder without following a link (``O_CREAT|O_EXCL|O_NOFOLLOW``; ``CREATE_NEW`` through no
reparse point) under a random name, admin-only (0600; a protected SYSTEM + Administrators DACL,
so nothing is inherited from the folder), filled through its own descriptor and renamed over the
name within the same folder. Whatever a user put at that name, a link too, is replaced, never
written through. On Windows the rename is the file's own handle's; on POSIX the name renamed is
first proven to be the file written (a user may unlink ours in a folder they can write, and put
something else there). A folder that does not exist is made admin-only by the walk that refuses
(``posixfs.walk`` / ``winwalk.walk``), never one that repairs.
"""

from __future__ import annotations

import os
import sys

from basics.errors import UnsafePath

TRIES = 8  # random temp names tried before giving up: each taken means someone made that very name


def write(path: str, data: bytes) -> None:
    """``path`` := ``data``, a new admin-only file of ours renamed into place; the folder is
    left exactly as it was. OSError (``UnsafePath`` naming what was refused) when it cannot be."""
    folder, name = os.path.split(os.path.abspath(path))
    if not name:
        raise UnsafePath(path, "names a folder, not a file", "name the file to write")
    (_write_windows if sys.platform == "win32" else _write_posix)(folder, name, data)


def _temp_names(name: str):
    """Names for the temp file beside ``name``: hidden, random, never ending like ``name``."""
    for _ in range(TRIES):
        yield f".{name}.{os.urandom(8).hex()}.tmp"


def _fill(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    os.fsync(fd)


# ---------------------------------------------------------------- POSIX


def _write_posix(folder: str, name: str, data: bytes) -> None:
    from basics.inputfile import open_folder
    from basics.posixfs import lstat_at, rename_at, walk

    try:
        dfd = open_folder(folder)
    except FileNotFoundError:
        dfd = walk(folder, 0o755, "refuse")[0]
    try:
        fd, tmp = _create_posix(dfd, folder, name)
        try:
            _fill(fd, data)
            if not _same(os.fstat(fd), lstat_at(dfd, tmp)):
                raise UnsafePath(
                    os.path.join(folder, tmp),
                    "was replaced before it could be renamed into place",
                    "others may write the folder: write into one only administrators can",
                )
            rename_at(dfd, tmp, name, replace=True)
        except BaseException:
            if _same(os.fstat(fd), lstat_at(dfd, tmp)):
                os.unlink(tmp, dir_fd=dfd)
            raise
        finally:
            os.close(fd)
    finally:
        os.close(dfd)


def _create_posix(dfd: int, folder: str, name: str) -> tuple[int, str]:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    for tmp in _temp_names(name):
        try:
            return os.open(tmp, flags, 0o600, dir_fd=dfd), tmp
        except FileExistsError:
            continue
    raise _taken(folder, name)


def _same(a: os.stat_result, b: os.stat_result | None) -> bool:
    return b is not None and (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def _taken(folder: str, name: str) -> UnsafePath:
    return UnsafePath(
        os.path.join(folder, name),
        f"could not be written: {TRIES} random temp names beside it were all taken",
        "someone is filling the folder: write into one only administrators can",
    )


# ---------------------------------------------------------------- Windows


def _write_windows(folder: str, name: str, data: bytes) -> None:  # pragma: no cover - the Windows lane
    import msvcrt

    from basics import win32sec as w32
    from basics.sddl import ADMIN_ONLY, ADMIN_ONLY_FILE
    from basics.winhandle import create_new, pin, reached, rename_handle
    from basics.winwalk import walk

    try:
        held = pin(folder)
    except FileNotFoundError:
        held = pin(folder, walk(folder, ADMIN_ONLY, create=True, last="refuse")[1])
    try:
        for tmp in _temp_names(name):
            try:
                fd = create_new(os.path.join(folder, tmp), ADMIN_ONLY_FILE, w32.DELETE)
                break
            except FileExistsError:
                continue
        else:
            raise _taken(folder, name)
        try:
            reached(msvcrt.get_osfhandle(fd), os.path.join(folder, tmp))
            _fill(fd, data)
            rename_handle(msvcrt.get_osfhandle(fd), os.path.join(folder, name), replace=True)
        except BaseException:
            _delete_handle(msvcrt.get_osfhandle(fd))
            raise
        finally:
            os.close(fd)
    finally:
        w32.CloseHandle(held)


def _delete_handle(handle) -> None:  # pragma: no cover - the Windows lane
    """The file a handle (opened with DELETE) is on, deleted when it closes: ours, whatever its name."""
    import ctypes

    from basics import win32sec as w32

    w32.SetFileInformationByHandle(handle, w32.FILE_DISPOSITION_INFO, ctypes.create_string_buffer(b"\x01", 1), 1)
