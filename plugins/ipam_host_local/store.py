"""The disk store, byte-compatible with the Go plugin's ``backend/disk``.

``<dataDir>/<network>/``: one file per reserved IP holding ``<id>\\r\\n<ifname>`` (``:`` -> ``_``
in names on Windows), ``last_reserved_ip.<set index>``, and ``lock``. Creating the IP file with
O_EXCL is the commit point of a reservation; the index (``index.py``) is updated afterwards and
heals itself when a crash or another writer leaves it behind.

Beside them, ``SANDBOXES/<reservation file name>`` records each attachment's sandbox: its
``CNI_NETNS`` (a namespace GUID on containerd, ``none`` or ``container:<pause container>`` on
dockershim), named after the attachment's first address. A reservation names only its container,
and CNI_NETNS is seen only while a command runs, so without it nothing on the node can tell,
once a pod's HNS endpoint is gone, that the pod still runs (its namespace or pause container
exists) and must be recreated, its address kept (``wincni doctor``, ``wincni reclaim``). It is
kept here because the reservation is: written by the same ADD under the same lock, released with
it (``release``), for every runtime and delegate (flannel's saved configs are keyed by the sandbox
only on dockershim, and a config without flannel has none). The Go plugin's format is untouched:
it reserves and reads only ``<store>/<ip>``, and all it does with files further down (its
``filepath.Walk``) is compare their content with ``<id>\\r\\n<ifname>`` or ``<id>``, which a record,
starting with ``SANDBOX_MAGIC``, never equals. A folder rather than files beside the
reservations: rebuilding the index lists the store's folder, one entry per reservation. A record
the Go plugin's DEL left behind goes at the next rebuild.
"""

from __future__ import annotations

import os
import stat

from plugins.cni import log
from plugins.cni.lock import LOCK_NAME, FileLock, secure_dir

from . import index as idx
from .allocator import Owner
from .ranges import IPAddress, parse_ip

LAST_RESERVED = "last_reserved_ip."
SANDBOXES = ".wincni-sandboxes"
SANDBOX_MAGIC = "wincni-sandbox 1"
#: More than a record holds: CNI_NETNS is capped by skel's environment checks.
MAX_SANDBOX_RECORD = 8192
_O_BINARY = idx.O_BINARY
_NOT_RESERVATIONS = (LOCK_NAME, idx.INDEX_NAME)


class DiskStore:
    """One network's reservations; use through ``open_store`` so the lock is held (``locked``:
    then a rebuild of the index also removes stale sandbox records). ``netns``: an ADD's
    CNI_NETNS, recorded as its attachment's sandbox at the first address it reserves or renews
    (``SANDBOXES``); None records nothing."""

    def __init__(self, directory: str, platform: str, netns: str | None = None, locked: bool = False) -> None:
        self.directory = directory
        self._escape = platform == "win32"
        self._index: idx.Index | None = None
        self._dirty = False
        self._locked = locked
        self._netns = netns

    # ---- allocator.Store ----
    def reserve(self, owner: Owner, ip: IPAddress, range_id: int) -> bool:
        name = str(ip)
        path = self._path(name)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_BINARY, 0o600)
        except FileExistsError:
            if not _empty(path):
                return False
            # Every writer (the Go plugin too) creates and fills a reservation under the lock we
            # hold, so an empty one is what a writer killed in between left: nobody holds it.
            fd = os.open(path, os.O_WRONLY | os.O_TRUNC | _O_BINARY)
        try:
            try:
                os.write(fd, reservation_content(owner))
            finally:
                os.close(fd)
        except OSError:
            _unlink(path)
            raise
        self.index.add(name, owner)
        self._dirty = True
        self._write(LAST_RESERVED + str(range_id), name.encode())
        self._record_sandbox(name, owner)
        return True

    def release(self, ip: IPAddress | str) -> None:
        """The reservation, and the sandbox record named after it (``SANDBOXES``) with it."""
        name = str(ip)
        _unlink(self._path(name))
        self._drop_record(self._record_name(name))
        self.index.remove(name)
        self._dirty = True

    def last_reserved(self, range_id: int) -> IPAddress | None:
        try:
            with open(self._path(LAST_RESERVED + str(range_id)), "rb") as f:
                return parse_ip(f.read().decode().strip())
        except (OSError, ValueError):
            return None  # absent or unreadable: round-robin restarts, as in the reference

    def owned_by(self, owner: Owner) -> list[IPAddress]:
        """Exact (id, ifname) matches; every hit is checked against its file, and a mismatch
        (the index was stale without our noticing) triggers a rebuild."""
        ips = self.index.owned_by(owner)
        if not all(self._holds(ip, owner) for ip in ips):
            self.rescan()
            ips = self.index.owned_by(owner)
        return [parse_ip(ip) for ip in ips]

    def renew(self, ip: IPAddress | str, owner: Owner) -> None:
        name = str(ip)
        try:
            os.utime(self._path(name))
        except FileNotFoundError:
            return
        self._record_sandbox(name, owner)

    # ---- commands ----
    def find(self, owner: Owner) -> list[IPAddress]:
        """(id, ifname)'s addresses, else the id's legacy id-only ones (the reference's two-step match)."""
        return self.owned_by(owner) or self.owned_by(Owner(owner.container_id))

    def release_owner(self, owner: Owner) -> list[IPAddress]:
        """Release what ``find`` finds (ReleaseByID)."""
        ips = self.find(owner)
        for ip in ips:
            self.release(ip)
        return ips

    def reserved_at(self, ip: IPAddress | str) -> float:
        """When the reservation file was last written (epoch seconds; 0 when it is gone)."""
        try:
            return os.stat(self._path(str(ip))).st_mtime
        except OSError:
            return 0.0

    def allocations(self) -> list[tuple[IPAddress, Owner | None]]:
        return [(parse_ip(ip), owner) for ip, owner in self.index.items()]

    def rescan(self) -> None:
        """Rebuild the index from the reservation files: O(files), the reference's DEL cost. Under
        the lock, sandbox records whose reservation is gone (the Go plugin released it) go too (a
        reader without it, STATUS or the doctor, removes nothing)."""
        with os.scandir(self.directory) as entries:
            names = [e.name for e in entries if e.is_file()]
        fresh = idx.Index.of((ip, self.owner_of(ip)) for ip in map(self._ip_of, names) if ip is not None)
        self._index, self._dirty = fresh, True
        if self._locked:
            self._prune_records(set(names))
        log.event("index-rebuilt", directory=self.directory, reservations=len(fresh))

    # ---- sandbox records (``SANDBOXES``) ----
    def _record_sandbox(self, ip: str, owner: Owner) -> None:
        """Record ``owner``'s sandbox (the ADD's CNI_NETNS) beside its reservation of ``ip``, once
        per ADD (its first address names it): one small file, written in full and renamed into
        place (readers see the old record or the new one). Best effort: a failure is logged and
        the ADD goes on (the doctor then says the sandbox is not known)."""
        netns, self._netns = self._netns, None
        if netns is None:
            return
        try:
            _write_new(self._records(), self._record_name(ip), sandbox_content(owner, netns))
        except OSError as exc:
            log.warning(f"cannot record the sandbox of {owner.container_id} in {self._records()}: {exc}")

    def sandboxes(self) -> dict[str, tuple[Owner, str]]:
        """Reserved address -> (its attachment, its CNI_NETNS), for records whose reservation file
        holds that same attachment now (anything else is a leftover, and ignored). Reads only: the
        doctor calls it without the lock."""
        folder = self._records()
        try:
            names = os.listdir(folder)
        except OSError:
            return {}
        out = {}
        for name in names:
            ip = self._ip_of(name)
            found = sandbox_record(_read_small(os.path.join(folder, name))) if ip is not None else None
            if found is not None and self.owner_of(ip) == found[0]:
                out[ip] = found
        return out

    def _records(self) -> str:
        return os.path.join(self.directory, SANDBOXES)

    def _record_name(self, ip: str) -> str:
        return ip.replace(":", "_") if self._escape else ip

    def _drop_record(self, name: str) -> None:
        """Best effort, as the writing: a record left behind goes at the next rebuild's ``flush``."""
        try:
            _unlink(os.path.join(self._records(), name))
        except OSError as exc:
            log.warning(f"cannot remove the sandbox record {name} in {self._records()}: {exc}")

    def _prune_records(self, reservation_files: set[str]) -> None:
        """Records of released reservations, and temporary files of writers killed before their
        rename (every writer holds the store's lock, as the caller does: none is still writing)."""
        try:
            names = os.listdir(self._records())
        except OSError:
            return
        for name in names:
            if name not in reservation_files:
                self._drop_record(name)

    @property
    def index(self) -> idx.Index:
        if self._index is None:
            self._index = idx.load(self.directory)
            if self._index is None:
                self.rescan()
        return self._index

    def flush(self) -> None:
        if self._dirty and self._index is not None:
            try:
                idx.save(self.directory, self._index)
            except OSError as exc:  # the next call sees a stale index and rebuilds it
                log.warning(f"cannot save the reservation index in {self.directory}: {exc}")
            self._dirty = False

    # ---- files ----
    def _path(self, name: str) -> str:
        return os.path.join(self.directory, name.replace(":", "_") if self._escape else name)

    def _ip_of(self, filename: str) -> str | None:
        if filename in _NOT_RESERVATIONS or filename.startswith(LAST_RESERVED):
            return None
        name = filename.replace("_", ":") if self._escape else filename
        try:
            ip = parse_ip(name)
        except ValueError:
            return None
        # Only canonical names are reservations (the Go plugin writes ip.String()).
        return name if str(ip) == name else None

    def owner_of(self, ip: IPAddress | str) -> Owner | None:
        """The reservation file's owner as it is on disk now (None: gone or unreadable)."""
        try:
            fd = os.open(self._path(str(ip)), os.O_RDONLY | _O_BINARY)
        except OSError:
            return None
        try:
            return reservation_owner(os.read(fd, 4096))
        except OSError:
            return None
        finally:
            os.close(fd)

    def _holds(self, ip: str, owner: Owner) -> bool:
        return self.owner_of(ip) == owner

    def _write(self, name: str, data: bytes) -> None:
        fd = os.open(self._path(name), os.O_WRONLY | os.O_CREAT | os.O_TRUNC | _O_BINARY, 0o600)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)


class open_store:
    """Create the directory (admin-only: 0755 owned by us; a protected DACL on Windows) or check
    an existing one, hold ``<dir>/lock`` for the block, save the index on exit; ``netns``: ADD's,
    for ``DiskStore``. (A class: with ``contextlib`` every pod command would import one module
    more.)"""

    __slots__ = ("directory", "platform", "netns", "_lock", "_store")

    def __init__(self, directory: str, platform: str, netns: str | None = None) -> None:
        self.directory, self.platform, self.netns = directory, platform, netns

    def __enter__(self) -> DiskStore:
        secure_dir(self.directory)
        self._lock = FileLock(self.directory)
        self._lock.__enter__()
        self._store = DiskStore(self.directory, self.platform, self.netns, locked=True)
        return self._store

    def __exit__(self, kind: type | None, exc: BaseException | None, tb: object) -> bool:
        try:
            self._store.flush()
        finally:
            self._lock.__exit__(kind, exc, tb)
        return False


def reservation_content(owner: Owner) -> bytes:
    """A reservation file's bytes, CRLF on every OS like the reference."""
    return f"{owner.container_id.strip()}\r\n{owner.ifname}".encode()


def reservation_owner(data: bytes) -> Owner | None:
    """A reservation file's owner; None when the content is not one we could ever match."""
    try:
        text = data.decode().strip()
    except UnicodeDecodeError:
        return None
    cid, sep, ifname = text.partition("\r\n")
    if text.split() != ([cid, ifname] if sep else [cid]):  # no whitespace inside either field
        return None
    return Owner(cid, ifname)


def sandbox_content(owner: Owner, netns: str) -> bytes:
    """A sandbox record's bytes (CRLF, like a reservation's): ``SANDBOX_MAGIC``, container ID,
    ifname, CNI_NETNS."""
    return f"{SANDBOX_MAGIC}\r\n{owner.container_id.strip()}\r\n{owner.ifname}\r\n{netns}".encode()


def sandbox_record(data: bytes) -> tuple[Owner, str] | None:
    """A sandbox record's attachment and CNI_NETNS; None for anything that is not a whole record."""
    try:
        lines = data.decode().split("\r\n")
    except UnicodeDecodeError:
        return None
    if len(lines) != 4 or lines[0] != SANDBOX_MAGIC or not lines[1] or lines[1].split() != [lines[1]]:
        return None
    if any("\n" in line or "\r" in line for line in lines):
        return None
    return Owner(lines[1], lines[2]), lines[3]


def _write_new(folder: str, name: str, data: bytes) -> None:
    """``folder/name`` := ``data``, through a temporary file renamed over it. ``folder`` lies in the
    store's admin-only folder (``open_store`` judged it), so only an administrator could have put
    anything there; still nothing is followed: on POSIX every step is relative to the folder's
    descriptor, opened without following a link, and the file is opened no-follow."""
    tmp = f".{name}.{os.getpid()}.tmp"
    try:
        os.mkdir(folder, 0o700)
    except FileExistsError:
        pass
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | _O_BINARY | getattr(os, "O_NOFOLLOW", 0)
    if not hasattr(os, "O_DIRECTORY"):  # Windows: the store's folder is held (``secure_dir``)
        fd = os.open(os.path.join(folder, tmp), flags, 0o600)
        _write_all(fd, data)
        os.replace(os.path.join(folder, tmp), os.path.join(folder, name))
        return
    dfd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        _write_all(os.open(tmp, flags, 0o600, dir_fd=dfd), data)
        os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
    finally:
        os.close(dfd)


def _write_all(fd: int, data: bytes) -> None:
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def _read_small(path: str) -> bytes:
    """A record's bytes (no link followed, never waiting on a FIFO: b"" for anything but a
    regular file, or when it cannot be read; the doctor reads without the store's lock)."""
    flags = os.O_RDONLY | _O_BINARY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return b""
    try:
        return os.read(fd, MAX_SANDBOX_RECORD) if stat.S_ISREG(os.fstat(fd).st_mode) else b""
    except OSError:
        return b""
    finally:
        os.close(fd)


def _empty(path: str) -> bool:
    try:
        return os.stat(path).st_size == 0
    except OSError:
        return False


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except (FileNotFoundError, NotADirectoryError):  # nothing there (a folder on the way is a file)
        pass
