"""Reading the file an operator's flag names, as root/SYSTEM, so that another user cannot steer it.

A flag may name anything: a FIFO (a plain ``open`` waits for a writer forever, and a readiness
probe that hangs takes the node's CNI DaemonSet down with it), a device (``/dev/zero`` never ends),
a folder, or a link a user planted to a root-only file that an error would then quote. So:

- the file is opened without waiting (``O_NONBLOCK``), then must be a regular file no larger
  than the caller's cap (``fstat`` on the open descriptor), and at most cap + 1 bytes are read;
- a link anywhere on the way is followed only when an administrator (root / SYSTEM /
  Administrators, or the running user) owns it, and then the file it leads to must be an
  administrator's too. kubelet lays ConfigMap files as such links (``f -> ..data/f``, ``..data ->
  ..<timestamp>``), which is why an administrator's are followed. POSIX walks the path one
  component at a time from ``/`` (``O_NOFOLLOW`` relative to the folder before), so what is
  checked is what is opened; Windows examines each component with ``lstat`` (reparse points)
  and asks ``winfolder`` who owns a link.

``Input.owner`` says whose file it was: an error may quote what is in it only when that is an
administrator's. Refusals raise ``UnsafePath`` naming the path; absence is ``None``.
"""

from __future__ import annotations

import os
import stat
import sys

from basics.errors import UnsafePath
from basics.posixfs import trusted_uid

MAX_LINKS = 40  # as the kernel's ELOOP limit
#: ``open_file``'s cap for a caller that reads no more than its own cap and judges a longer file itself.
ANY_SIZE = 1 << 62
LINK_FIX = "a link is followed only when an administrator owns it and the file it leads to: name such a file"
_KINDS = (
    (stat.S_ISDIR, "folder"),
    (stat.S_ISFIFO, "FIFO"),
    (stat.S_ISCHR, "character device"),
    (stat.S_ISBLK, "block device"),
    (stat.S_ISSOCK, "socket"),
)


class Input:
    """What ``read`` found. A plain slotted class, not a dataclass: flannel's pod path reads its
    lease through this module, and dataclasses costs a pod command its import."""

    __slots__ = ("path", "data", "owner")

    def __init__(self, path: str, data: bytes, owner: str = "") -> None:
        self.path, self.data = path, data
        self.owner = owner  # who owns the file when it is not an administrator ("uid 1000"); "" when one is

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Input) and (self.path, self.data, self.owner) == (other.path, other.data, other.owner)

    @property
    def admins(self) -> bool:
        """An administrator's own file: an error may quote what is in it."""
        return not self.owner


def read(path: str, cap: int) -> Input | None:
    """At most ``cap`` bytes of the regular file ``path`` (``open_file``); None when nothing is there."""
    try:
        fd, owner = open_file(path, cap)
    except FileNotFoundError:
        return None
    with open(fd, "rb") as f:
        data = f.read(cap + 1)
    if len(data) > cap:  # it grew since fstat
        raise _too_large(path, cap)
    return Input(path, data, owner)


def open_file(path: str, cap: int) -> tuple[int, str]:
    """A read descriptor on the regular file ``path`` of at most ``cap`` bytes, and who owns it
    when that is not an administrator ("" when one does). UnsafePath when it is not a regular
    file, is larger, or is reached through a link that is not an administrator's (or leads to a
    file that is not); FileNotFoundError when nothing is there."""
    fd, followed = _open(path)
    try:
        st = os.fstat(fd)
        kind = "" if stat.S_ISREG(st.st_mode) else next((k for test, k in _KINDS if test(st.st_mode)), "special file")
        if kind:
            raise UnsafePath(path, f"is a {kind}, not a regular file", "name the file itself")
        owner = _owner(followed or path, st)
        if followed and owner:
            raise UnsafePath(path, f"is reached through a link but owned by {owner}, not by an administrator", LINK_FIX)
        if st.st_size > cap:
            raise _too_large(path, cap)
    except BaseException:
        os.close(fd)
        raise
    return fd, owner


def open_folder(path: str) -> int:
    """A descriptor on the existing folder ``path``, reached as ``open_file`` reaches a file (no
    link a user planted followed, nothing waited on), for a file of ours to be made in it
    (``basics.outputfile``); the folder itself is only read. UnsafePath when it is no folder.
    POSIX's: Windows pins the folder (``winhandle.pin``)."""
    fd, _ = _open_posix(path)
    if not stat.S_ISDIR(os.fstat(fd).st_mode):
        os.close(fd)
        raise UnsafePath(path, "is not a folder", "name the folder to write in")
    return fd


def size(n: int) -> str:
    """``n`` bytes as people write a cap: 1 MiB, 64 KiB, 100 bytes."""
    for shift, unit in ((20, "MiB"), (10, "KiB")):
        if n >= 1 << shift and not n % (1 << shift):
            return f"{n >> shift} {unit}"
    return f"{n} bytes"


def _too_large(path: str, cap: int) -> UnsafePath:
    return UnsafePath(path, f"is over {size(cap)}, more than is read of it", "it is not the file wanted: name that")


def _link_owner_problem(where: str, owner: str) -> UnsafePath:
    return UnsafePath(where, f"is a link owned by {owner}, not by an administrator", LINK_FIX)


# ---------------------------------------------------------------- POSIX


def _posix_owner(path: str, st: os.stat_result) -> str:
    if not trusted_uid(st.st_uid):
        return f"uid {st.st_uid}"
    # Another name of the file may be a user's hard link to it: not known to be an admin's own.
    return f"uid {st.st_uid}, with {st.st_nlink} hard links" if st.st_nlink > 1 else ""


def _open_posix(path: str) -> tuple[int, str]:
    """A read descriptor on ``path`` (not waiting: ``O_NONBLOCK``) and, when a link was followed,
    the path it came to ("" when none was). Each component is opened relative to the folder before without following a link
    (folders by ``O_PATH``: search permission is enough, as for a plain open); a link found is
    followed only when an administrator owns it, by putting what it holds in front of the rest."""
    pending = [p for p in os.path.join(os.getcwd(), path).split("/") if p not in ("", ".")]
    fd = os.open("/", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    here, followed, hops = "/", False, 0
    try:
        while pending:
            name = pending.pop(0)
            last = not pending
            flags = os.O_NOFOLLOW | os.O_CLOEXEC
            flags |= os.O_RDONLY | os.O_NONBLOCK if last else getattr(os, "O_PATH", os.O_RDONLY) | os.O_DIRECTORY
            try:
                child = os.open(name, flags, dir_fd=fd)
            except OSError as exc:  # ELOOP, or ENOTDIR for a link where a folder is due
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                if not stat.S_ISLNK(st.st_mode):
                    exc.filename = path
                    raise
                if not trusted_uid(st.st_uid):
                    raise _link_owner_problem(os.path.join(here, name), f"uid {st.st_uid}") from None
                hops += 1
                if hops > MAX_LINKS:
                    raise UnsafePath(path, f"leads through more than {MAX_LINKS} links", LINK_FIX) from None
                target = os.readlink(name, dir_fd=fd)
                pending[:0] = [p for p in target.split("/") if p not in ("", ".")]
                followed = True
                if target.startswith("/"):
                    os.close(fd)
                    fd = os.open("/", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
                    here = "/"
                continue
            os.close(fd)
            fd, here = child, os.path.join(here, name)
    except BaseException:
        os.close(fd)
        raise
    return fd, here if followed else ""


if sys.platform == "win32":  # pragma: no cover - exercised in the Windows lane
    import ntpath

    from basics.winfolder import entry_problem
    from basics.winhandle import open_plain

    def _win_owner(path: str) -> str:
        """Who owns ``path`` itself (a link is not followed) when not an administrator, else ""."""
        why, _ = entry_problem(path, False, False)
        return why.removeprefix("owned by ") if why and why.startswith("owned by ") else ""

    def _open(path: str) -> tuple[int, str]:
        """Each component from the drive's root examined by ``lstat`` (a reparse point: a link or
        junction, followed only when an administrator owns it), then the file opened where that
        led, never through a reparse point (``winhandle.open_plain``: a link swapped in since the
        look is refused by the handle's own attributes and final path)."""
        full, followed, hops = ntpath.abspath(path), False, 0
        drive, rest = ntpath.splitdrive(full)
        here, pending = drive + "\\", [p for p in rest.split("\\") if p]
        while pending:
            here = ntpath.join(here, pending.pop(0))
            if not os.lstat(here).st_file_attributes & stat.FILE_ATTRIBUTE_REPARSE_POINT:
                continue
            owner = _win_owner(here)
            if owner:
                raise _link_owner_problem(here, owner)
            hops += 1
            if hops > MAX_LINKS:
                raise UnsafePath(path, f"leads through more than {MAX_LINKS} links", LINK_FIX)
            target = ntpath.join(ntpath.dirname(here), os.readlink(here).removeprefix("\\\\?\\"))
            drive, rest = ntpath.splitdrive(ntpath.abspath(target))
            here, pending, followed = drive + "\\", [p for p in rest.split("\\") if p] + pending, True
        return open_plain(here), here if followed else ""

    def _owner(path: str, st: os.stat_result) -> str:
        owner = _win_owner(path)
        return owner or (f"an account, with {st.st_nlink} hard links" if st.st_nlink > 1 else "")

else:
    _open = _open_posix
    _owner = _posix_owner
