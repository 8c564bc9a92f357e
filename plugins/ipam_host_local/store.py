"""The disk store, byte-compatible with the Go plugin's ``backend/disk``.

``<dataDir>/<network>/``: one file per reserved IP holding ``<id>\\r\\n<ifname>`` (``:`` -> ``_``
in names on Windows), ``last_reserved_ip.<set index>``, and ``lock``. Creating the IP file with
O_EXCL is the commit point of a reservation; the index (``index.py``) is updated afterwards and
heals itself when a crash or another writer leaves it behind.
"""

from __future__ import annotations

import os

from plugins.cni import log
from plugins.cni.lock import LOCK_NAME, FileLock, secure_dir

from . import index as idx
from .allocator import Owner
from .ranges import IPAddress, parse_ip

LAST_RESERVED = "last_reserved_ip."
_O_BINARY = idx.O_BINARY
_NOT_RESERVATIONS = (LOCK_NAME, idx.INDEX_NAME)


class DiskStore:
    """One network's reservations; use through ``open_store`` so the lock is held."""

    def __init__(self, directory: str, platform: str) -> None:
        self.directory = directory
        self._escape = platform == "win32"
        self._index: idx.Index | None = None
        self._dirty = False

    # ---- allocator.Store ----
    def reserve(self, owner: Owner, ip: IPAddress, range_id: int) -> bool:
        path = self._path(str(ip))
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
        self.index.add(str(ip), owner)
        self._dirty = True
        self._write(LAST_RESERVED + str(range_id), str(ip).encode())
        return True

    def release(self, ip: IPAddress | str) -> None:
        _unlink(self._path(str(ip)))
        self.index.remove(str(ip))
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

    def renew(self, ip: IPAddress | str) -> None:
        try:
            os.utime(self._path(str(ip)))
        except FileNotFoundError:
            pass

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
        """Rebuild the index from the reservation files: O(files), the reference's DEL cost."""
        with os.scandir(self.directory) as entries:
            names = [e.name for e in entries if e.is_file()]
        fresh = idx.Index.of((ip, self.owner_of(ip)) for ip in map(self._ip_of, names) if ip is not None)
        self._index, self._dirty = fresh, True
        log.event("index-rebuilt", directory=self.directory, reservations=len(fresh))

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
    an existing one, hold ``<dir>/lock`` for the block, save the index on exit. (A class: with
    ``contextlib`` every pod command would import one module more.)"""

    __slots__ = ("directory", "platform", "_lock", "_store")

    def __init__(self, directory: str, platform: str) -> None:
        self.directory, self.platform = directory, platform

    def __enter__(self) -> DiskStore:
        secure_dir(self.directory)
        self._lock = FileLock(self.directory)
        self._lock.__enter__()
        self._store = DiskStore(self.directory, self.platform)
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


def _empty(path: str) -> bool:
    try:
        return os.stat(path).st_size == 0
    except OSError:
        return False


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
