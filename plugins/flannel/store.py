"""Saved delegate configs: ``dataDir/<sandboxID>``, byte-compatible with the reference plugin.

The file holds exactly the delegate config (the reference's DEL feeds it to the delegate as-is),
so a node can switch between the Go plugin and this one with pods running. Who uses a file is
kept beside it: one empty marker per attachment in ``dataDir/.attachments/``, named
``<sandboxID>@<containerID>@<ifname, %-quoted>``. A sidecar rather than a key inside the JSON
because delegates with strict schemas would reject an unknown key, and files the Go plugin wrote
have none anyway. Marker files rather than one index file because creating or removing a file is
atomic without a lock, and dockershim attaches several containers (pause + app containers with
``CNI_NETNS=container:<sandbox>``) to one sandbox: the config is kept until the last one is gone.
Dot-names never collide with saved configs: a container ID cannot start with a dot.

A saved config is run as SYSTEM/root at DEL, so ``dataDir`` is checked before anything in it is
believed or written (``basics.safefs``: a real folder, owned by root/SYSTEM/Administrators, that
nobody else may write; created so when absent) and held open while it is used; each config is
read without following a link or waiting (a FIFO), up to the delegate's stdin cap, and refused
when it is no regular file or another user owns it; configs and markers are written new (by
rename, or created exclusively), never through what stands at their name. A failed check is
code 5 naming the folder and the fix.
"""

from __future__ import annotations

import os
import stat

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Callable

    from basics.safefs import Folder

from plugins.cni.errors import IO_FAILURE, TRY_AGAIN_LATER, CniError
from plugins.cni.names import CHARS
from plugins.cni.record import FrozenRecord
from plugins.cni.skel import MAX_STDIN

MARKERS = ".attachments"
#: Saves of one ADD whose files vanished before it gives up with code 11.
_SAVE_TRIES = 3


class Attachment(FrozenRecord):
    __slots__ = ("container_id", "ifname")

    def __init__(self, container_id: str, ifname: str) -> None:
        self.container_id = container_id
        self.ifname = ifname


class Store:
    def __init__(self, data_dir: str) -> None:
        self.dir = data_dir
        self._markers = os.path.join(data_dir, MARKERS)

    def _held(self, create: bool = False) -> Folder | None:
        """``dataDir`` held open (``basics.safefs.Folder``, the caller closes it), after refusing
        one that others own or may write (code 5); None when absent, unless ``create`` (ADD),
        which makes it admin-only."""
        from basics.safefs import UnsafePath, checked_folder, secure_folder

        try:
            return checked_folder(self.dir)
        except FileNotFoundError:
            if not create:
                return None
            with _io("create", self.dir):
                return secure_folder(self.dir, 0o700)
        except UnsafePath as exc:
            raise CniError(
                IO_FAILURE,
                f"refusing the saved delegate configs in {self.dir}: {exc.problem}",
                f'{exc.fix}; or point "dataDir" at an admin-only folder',
            ) from exc

    def path(self, key: str) -> str:
        return os.path.join(self.dir, key)

    def save(self, key: str, data: bytes, owner: Attachment) -> None:
        """Write the config (0600, fsync, atomic rename: ``safefs.replace_file``), then record
        ``owner`` as one of its users; nothing at either name is followed or written through.

        A file removed under our feet (the temporary one, by a process that ignores the ownership
        rule) is written again; when it keeps vanishing the ADD is asked for again later (code 11).
        """
        from basics.safefs import replace_file

        folder = self._held(create=True)
        try:
            for _ in range(_SAVE_TRIES):
                try:
                    with _io("save the delegate config as", self.path(key)):
                        folder.mkdir(MARKERS, 0o700, parents=True)
                        replace_file(folder, key, data, durable=True)
                        _touch(folder, os.path.join(MARKERS, self._marker_name(key, owner)))
                    return
                except FileNotFoundError as exc:
                    gone = os.path.join(self.dir, exc.filename) if exc.filename else self.path(key)
        finally:
            folder.close()
        raise CniError(
            TRY_AGAIN_LATER,
            f"cannot save the delegate config as {self.path(key)}: {gone} vanished while it was written "
            f"({_SAVE_TRIES} tries)",
            'another process removes files in "dataDir" while ADD writes them (the runtime retries the ADD); '
            "if this persists, find what cleans that folder",
        )

    def load(self, key: str) -> bytes | None:
        """The saved config (at most the delegate's stdin cap and a byte: more is its code 6),
        read without following a link or waiting; one that is no regular file of an
        administrator's is refused (code 5)."""
        from basics.safefs import UnsafePath

        folder = self._held()
        if folder is None:
            return None
        path = self.path(key)
        try:
            with _io("read the saved delegate config", path):
                if folder.lstat(key) is None:
                    return None
                try:
                    fd = folder.open_trusted(key)
                except UnsafePath as exc:
                    raise CniError(
                        IO_FAILURE, f"refusing the saved delegate config {path}: {exc.problem}", exc.fix
                    ) from exc
                with open(fd, "rb") as f:
                    return f.read(MAX_STDIN + 1)
        except FileNotFoundError:
            return None
        finally:
            folder.close()

    def keys(self) -> list[str]:
        """Saved configs, ours and the Go plugin's (every regular file whose name is not a dot-name;
        a link or anything else there is nobody's config)."""
        folder = self._held()
        if folder is None:
            return []
        try:
            with _io("list", self.dir):
                return sorted(n for n, st in folder.scan() if not n.startswith(".") and stat.S_ISREG(st.st_mode))
        finally:
            folder.close()

    def owners(self, key: str) -> set[Attachment]:
        """Recorded users of ``key``; empty for a file the Go plugin wrote."""
        try:
            with _io("list", self._markers):
                names = os.listdir(self._markers)
        except FileNotFoundError:
            return set()
        out = set()
        for name in names:
            parts = name.split("@")
            if len(parts) == 3 and parts[0] == key:
                out.add(Attachment(parts[1], _unquote(parts[2])))
        return out

    def release(self, key: str, owner: Attachment) -> None:
        """``owner`` is gone (its delegate DEL succeeded): drop the config once nobody else uses it."""
        _remove(self._marker(key, owner))
        if not self.owners(key):
            self._drop(key, "DEL")

    def prune(self, key: str, valid: set[Attachment]) -> bool:
        """GC: keep ``key`` only for valid attachments; True when the config was removed.

        A file without markers (written by the Go plugin) is keyed by its sandbox ID, which is the
        pod's container ID for every runtime that does GC, so it is kept when that ID is valid.
        """
        owners = self.owners(key)
        live = owners & valid if owners else {a for a in valid if a.container_id == key}
        for stale in owners - live:
            _remove(self._marker(key, stale))
        if live:
            return False
        self._drop(key, "flannel GC")
        return True

    def _drop(self, key: str, who: str) -> None:
        """Remove the config and what an ADD killed while saving it left (``.<key>.<pid>.tmp``)."""
        _remove(self.path(key))
        self._drop_partial(lambda k: k == key, who)

    def drop_orphans(self, live: set[str]) -> None:
        """GC: the half-saved configs of ADDs killed before their first save completed (so no
        config names them) whose sandbox is not in ``live``."""
        self._drop_partial(lambda k: k not in live, "flannel GC")

    def _drop_partial(self, doomed: Callable[[str], bool], who: str) -> None:
        """Temporary files of ``doomed`` keys, except those a live writer may still be writing
        (the ownership rule: an ADD that began after the runtime listed its pods is one)."""
        try:
            names = os.listdir(self.dir)
        except OSError:
            return
        for name in names:
            key, _, pid = name[1:-4].rpartition(".")
            if name.startswith(".") and name.endswith(".tmp") and key and pid.isdigit() and doomed(key):
                path = os.path.join(self.dir, name)
                why = _temporary_gone(path, int(pid))
                if why:
                    from plugins.cni.ownership import freed

                    freed(who, f"the half-saved delegate config {path}", why)
                    _remove(path)

    def _marker(self, key: str, owner: Attachment) -> str:
        return os.path.join(self._markers, self._marker_name(key, owner))

    @staticmethod
    def _marker_name(key: str, owner: Attachment) -> str:
        return f"{key}@{owner.container_id}@{_quote(owner.ifname)}"


def _temporary_gone(path: str, pid: int) -> str:
    """Why the temporary file ``path`` written by ``pid`` may go, by the ownership rule ("" when
    it stays or is already gone)."""
    import time

    from plugins.cni.ownership import temporary_kept
    from plugins.cni.procs import alive

    try:
        age = time.time() - os.lstat(path).st_mtime
    except OSError:
        return ""
    running = alive(pid)
    if temporary_kept(age, running):
        return ""
    return f"written {age:.0f} s ago by PID {pid}, " + ("longer than any ADD runs" if running else "which is gone")


def _touch(folder: Folder, rel: str) -> None:
    """An empty marker ``rel``, created new (never through a link); one already there stays."""
    try:
        os.close(folder.open_new(rel, 0o600))
    except FileExistsError:
        pass


def _remove(path: str) -> None:
    try:
        with _io("remove", path):
            os.remove(path)
    except FileNotFoundError:
        pass


class _io:
    """OS errors become code 5 naming the file; FileNotFoundError passes through for callers to
    decide (a plain context manager: ``contextlib`` is one more import on every flannel command)."""

    __slots__ = ("action", "path")

    def __init__(self, action: str, path: str) -> None:
        self.action, self.path = action, path

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type | None, exc: BaseException | None, tb: object) -> bool:
        if isinstance(exc, OSError) and not isinstance(exc, FileNotFoundError):
            raise CniError(
                IO_FAILURE,
                f"cannot {self.action} {self.path}: {exc.strerror or exc}",
                'flannel keeps delegate configs in "dataDir": it must be a directory this plugin can write',
            ) from exc
        return False


def _quote(text: str) -> str:
    """An ifname may hold characters Windows forbids in file names, or '@': those are %-quoted."""
    if CHARS.issuperset(text):  # every ordinary ifname: no urllib on the way (quote keeps these too)
        return text
    from urllib.parse import quote

    return quote(text, safe="")


def _unquote(text: str) -> str:
    if "%" not in text:  # every ordinary ifname: no urllib on the way
        return text
    from urllib.parse import unquote

    return unquote(text)
