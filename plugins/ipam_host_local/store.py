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

Every file here is reached through the store's folder held open (``basics.safefs.Folder``): read
without following a link or waiting (a FIFO), only when it is a regular file and only up to its
cap; written anew and renamed into place (``safefs.replace_file``) or created exclusively (a
reservation), so nothing planted at a name is ever written through. A reservation whose file
names no owner (empty, NULs, garbage, a link, a FIFO) is malformed: a warning names it, and it is
any pod's reservation without a live pod to the ownership rule (``plugins.cni.ownership``).
"""

from __future__ import annotations

import os
import stat

from plugins.cni import log
from plugins.cni.lock import LOCK_NAME, FileLock

from . import index as idx
from .allocator import Owner
from .ranges import IPAddress, parse_ip

TYPE_CHECKING = False
if TYPE_CHECKING:
    from basics.safefs import Folder

LAST_RESERVED = "last_reserved_ip."
SANDBOXES = ".wincni-sandboxes"
SANDBOX_MAGIC = "wincni-sandbox 1"
#: What is read of each file at most. A reservation: a container ID (skel caps CNI_CONTAINERID)
#: and an interface name; a sandbox record: that and CNI_NETNS (capped by skel's checks too).
MAX_RESERVATION = 4096
MAX_SANDBOX_RECORD = 8192
MAX_LAST_RESERVED = 64
_NOT_RESERVATIONS = (LOCK_NAME, idx.INDEX_NAME)


class DiskStore:
    """One network's reservations; use through ``open_store`` so the lock is held (``locked``:
    then a rebuild of the index also removes stale sandbox records). ``netns``: an ADD's
    CNI_NETNS, recorded as its attachment's sandbox at the first address it reserves or renews
    (``SANDBOXES``); None records nothing. ``folder``: the store's folder, held (``open_store``
    passes the one it judged); without it a reader (STATUS, the doctor) checks it at first use
    (``safefs.checked_folder``: admin-only, or refused) and ``close`` lets it go."""

    def __init__(
        self,
        directory: str,
        platform: str,
        netns: str | None = None,
        locked: bool = False,
        folder: Folder | None = None,
    ) -> None:
        self.directory = directory
        self._escape = platform == "win32"
        self._index: idx.Index | None = None
        self._dirty = False
        self._locked = locked
        self._netns = netns
        self._folder = folder
        self._warned: set[str] = set()

    @property
    def folder(self) -> Folder:
        if self._folder is None:
            from basics.safefs import checked_folder

            self._folder = checked_folder(self.directory)
        return self._folder

    def close(self) -> None:
        if self._folder is not None:
            self._folder.close()
            self._folder = None

    # ---- allocator.Store ----
    def reserve(self, owner: Owner, ip: IPAddress, range_id: int) -> bool:
        from basics.safefs import replace_file

        text = str(ip)
        name = self._name(text)
        try:
            fd = self.folder.open_new(name, 0o600)
        except FileExistsError:
            # Every writer (the Go plugin too) creates and fills a reservation under the lock we
            # hold, so an empty one is what a writer killed in between left: nobody holds it. It
            # is replaced, never written through; anything else there holds the address.
            if not _empty(self.folder.lstat(name)):
                return False
            replace_file(self.folder, name, reservation_content(owner))
        else:
            try:
                _write_all(fd, reservation_content(owner))
            except OSError:
                self._remove(name)
                raise
        self.index.add(text, owner)
        self._dirty = True
        replace_file(self.folder, LAST_RESERVED + str(range_id), text.encode())
        self._record_sandbox(text, owner)
        return True

    def release(self, ip: IPAddress | str) -> None:
        """The reservation (whatever is at its name: a link or FIFO itself), and the sandbox
        record named after it (``SANDBOXES``) with it."""
        name = str(ip)
        self._remove(self._name(name))
        self._drop_record(self._name(name))
        self.index.remove(name)
        self._dirty = True

    def last_reserved(self, range_id: int) -> IPAddress | None:
        data = _read(self.folder, LAST_RESERVED + str(range_id), MAX_LAST_RESERVED, "round-robin starts again")
        try:
            return parse_ip(data.decode().strip()) if data is not None else None
        except (UnicodeDecodeError, ValueError):
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
        name = self._name(str(ip))
        st = self.folder.lstat(name)
        if st is None or not stat.S_ISREG(st.st_mode):
            return
        os.utime(os.path.join(self.folder.path, name), **_NOFOLLOW)
        self._record_sandbox(str(ip), owner)

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
        """When the reservation was last written (epoch seconds; 0 when it is gone)."""
        st = self.folder.lstat(self._name(str(ip)))
        return st.st_mtime if st is not None else 0.0

    def allocations(self, warn: bool = True) -> list[tuple[IPAddress, Owner | None]]:
        """Every reservation and its owner, None for a malformed one (``warn``: named in a
        warning, which the readiness probe, asked every few seconds, leaves out)."""
        try:
            found = [(parse_ip(ip), owner) for ip, owner in self.index.items()]
        except ValueError:  # a line no writer of ours wrote: the files decide
            self.rescan()
            found = [(parse_ip(ip), owner) for ip, owner in self.index.items()]
        for ip, owner in found if warn else ():
            if owner is None:
                self._warn_malformed(str(ip))
        return found

    def rescan(self) -> None:
        """Rebuild the index from the reservation files: O(files), the reference's DEL cost; it is
        written back only when it differs from the one held (the sweep reads the index first, so
        its pass writes nothing). Under
        the lock, sandbox records whose reservation is gone (the Go plugin released it) go too,
        and temporary files of writers killed before their rename (a reader without it, STATUS
        or the doctor, removes nothing)."""
        with os.scandir(self.folder.path) as entries:
            names = [e.name for e in entries if not e.is_dir(follow_symlinks=False)]
        fresh = idx.Index.of((ip, self.owner_of(ip)) for ip in map(self._ip_of, names) if ip is not None)
        held = self._index
        self._index, self._dirty = fresh, self._dirty or held is None or fresh != held
        if self._locked:
            self._prune_records(set(names))
            for name in names:
                if name.startswith(".") and name.endswith(".tmp"):
                    self._remove(name)
        log.event("index-rebuilt", directory=self.directory, reservations=len(fresh))

    # ---- malformed reservations ----
    def problem(self, ip: IPAddress | str) -> str:
        """Why the reservation of ``ip`` names no owner ("" when it names one, or is gone)."""
        from basics.safefs import UnsafePath, read_regular

        try:
            data = read_regular(self.folder, self._name(str(ip)), MAX_RESERVATION)
        except FileNotFoundError:
            return ""
        except UnsafePath as exc:
            return exc.problem
        except OSError as exc:
            return f"cannot be read ({exc.strerror or exc})"
        if len(data) > MAX_RESERVATION:
            return f"is over {MAX_RESERVATION} bytes"
        if reservation_owner(data) is not None:
            return ""
        if not data:
            return "is empty (its writer was killed before it wrote it)"
        what = "NUL bytes" if data.count(b"\0") == len(data) else "bytes"
        return f"holds {len(data)} {what}, not '<container ID>\\r\\n<interface>'"

    def _warn_malformed(self, ip: str) -> None:
        """Once per store opened and address, however often it is listed."""
        why = "" if ip in self._warned else self.problem(ip)
        if not why:
            return
        self._warned.add(ip)
        from plugins.cni.ownership import IN_FLIGHT_SECONDS

        path = os.path.join(self.directory, self._name(ip))
        log.warning(
            f"malformed reservation {path}: it {why}; no pod owns it: it keeps {ip} from other pods until "
            f"it is {IN_FLIGHT_SECONDS:g} s old, then wincni reclaim (or the runtime's GC) releases it"
        )
        log.event("malformed-reservation", path=path, why=why)

    # ---- sandbox records (``SANDBOXES``) ----
    def _record_sandbox(self, ip: str, owner: Owner) -> None:
        """Record ``owner``'s sandbox (the ADD's CNI_NETNS) beside its reservation of ``ip``, once
        per ADD (its first address names it): one small file, written in full and renamed into
        place (readers see the old record or the new one). Best effort: a failure is logged and
        the ADD goes on (the doctor then says the sandbox is not known)."""
        from basics.safefs import replace_file

        netns, self._netns = self._netns, None
        if netns is None:
            return
        record = self._record(self._name(ip))
        try:
            try:
                replace_file(self.folder, record, sandbox_content(owner, netns))
            except FileNotFoundError:  # the store's first record
                self.folder.mkdir(SANDBOXES, 0o700)
                replace_file(self.folder, record, sandbox_content(owner, netns))
        except OSError as exc:
            log.warning(f"cannot record the sandbox of {owner.container_id} in {self._records()}: {exc}")

    def sandboxes(self) -> dict[str, tuple[Owner, str]]:
        """Reserved address -> (its attachment, its CNI_NETNS), for records whose reservation file
        holds that same attachment now (anything else is a leftover, and ignored). Reads only: the
        doctor calls it without the lock, on a store of its own whose folder is held only
        meanwhile (the sweep gathers the doctor's facts every pass)."""
        opened = self._folder is None
        try:
            records = self._records()  # the folder judged: one no plugin may use is UnsafePath
            try:
                names = os.listdir(records)
            except OSError:
                return {}
            out = {}
            for name in names:
                ip = self._ip_of(name)
                data = _read(self.folder, self._record(name), MAX_SANDBOX_RECORD) if ip is not None else None
                found = sandbox_record(data) if data is not None else None
                if found is not None and self.owner_of(ip) == found[0]:
                    out[ip] = found
            return out
        finally:
            if opened:
                self.close()

    def _records(self) -> str:
        return os.path.join(self.folder.path, SANDBOXES)

    @staticmethod
    def _record(name: str) -> str:
        return os.path.join(SANDBOXES, name)

    def _drop_record(self, name: str) -> None:
        """Best effort, as the writing: a record left behind goes at the next rebuild's ``flush``."""
        try:
            self._remove(self._record(name))
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
            self._index = load_index(self.folder)
            if self._index is None:
                self.rescan()
        return self._index

    def flush(self) -> None:
        if self._dirty and self._index is not None:
            try:
                save_index(self.folder, self._index)
            except OSError as exc:  # the next call sees a stale index and rebuilds it
                log.warning(f"cannot save the reservation index in {self.directory}: {exc}")
            self._dirty = False

    # ---- files ----
    def _name(self, ip: str) -> str:
        return ip.replace(":", "_") if self._escape else ip

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
        """The reservation's owner as it is on disk now (None: gone, or malformed)."""
        data = _read(self.folder, self._name(str(ip)), MAX_RESERVATION)
        return reservation_owner(data) if data is not None else None

    def _holds(self, ip: str, owner: Owner) -> bool:
        return self.owner_of(ip) == owner

    def _remove(self, rel: str) -> None:
        try:
            self.folder.unlink(rel)
        except (FileNotFoundError, NotADirectoryError):  # nothing there (a folder on the way is a file)
            pass


class open_store:
    """Create the directory (admin-only: 0755 owned by us; a protected DACL on Windows) or check
    an existing one, and hold it (``safefs.Folder``) and ``<dir>/lock`` for the block, save the
    index on exit; ``netns``: ADD's, for ``DiskStore``. A folder or lock the plugins may not use
    is ``UnsafePath``, an OSError as every other failure to use the store. (A class: with
    ``contextlib`` every pod command would import one module more.)"""

    __slots__ = ("directory", "platform", "netns", "_lock", "_store")

    def __init__(self, directory: str, platform: str, netns: str | None = None) -> None:
        self.directory, self.platform, self.netns = directory, platform, netns

    def __enter__(self) -> DiskStore:
        from basics.safefs import open_lock, secure_folder

        folder = secure_folder(self.directory)
        try:
            path = os.path.join(folder.path, LOCK_NAME)
            self._lock = FileLock(path, fd=open_lock(path))
            self._lock.__enter__()
        except BaseException:
            folder.close()
            raise
        self._store = DiskStore(self.directory, self.platform, self.netns, locked=True, folder=folder)
        return self._store

    def __exit__(self, kind: type | None, exc: BaseException | None, tb: object) -> bool:
        try:
            self._store.flush()
        finally:
            self._store.close()
            self._lock.__exit__(kind, exc, tb)
        return False


def load_index(folder: Folder) -> idx.Index | None:
    """The index of the store ``folder`` when it is one and current (``index.decode``)."""
    data = _read(folder, idx.INDEX_NAME, idx.MAX_INDEX, "rebuilt from the reservations, then written anew")
    return idx.decode(data, os.stat(folder.path).st_mtime_ns) if data is not None else None


def save_index(folder: Folder, index: idx.Index) -> None:
    """Rewrite it in place (the directory's mtime stays; ``safefs.open_rewrite``: no link
    followed, nothing waited on, only a regular file of ours written); anything else standing at
    its name is first replaced by an empty file (a rename: a link goes itself, never its
    target). The directory is dated after the file exists, so making the index does not make
    it stale."""
    from basics.safefs import UnsafePath, open_rewrite, replace_file

    try:
        fd = open_rewrite(folder, idx.INDEX_NAME)
    except UnsafePath as exc:
        log.warning(f"{exc.path} {exc.problem}: replaced, and the index written anew")
        replace_file(folder, idx.INDEX_NAME, b"")
        fd = open_rewrite(folder, idx.INDEX_NAME)
    try:
        data = index.encode(_date_before_now(folder.path))
        os.ftruncate(fd, 0)
        os.lseek(fd, 0, os.SEEK_SET)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


def _date_before_now(directory: str) -> int:
    """Set the directory's mtime just below the one it has and return it as the file system
    keeps it (NTFS: in 100 ns steps), or -1 (stale) when that is not below."""
    try:
        seen = os.stat(directory)
        os.utime(directory, ns=(seen.st_atime_ns, seen.st_mtime_ns - 1))
        kept = os.stat(directory).st_mtime_ns
    except OSError:
        return -1
    return kept if kept < seen.st_mtime_ns else -1


def reservation_content(owner: Owner) -> bytes:
    """A reservation file's bytes, CRLF on every OS like the reference."""
    return f"{owner.container_id.strip()}\r\n{owner.ifname}".encode()


def reservation_owner(data: bytes) -> Owner | None:
    """A reservation file's owner; None when the content is not one we could ever match (a
    malformed reservation). An owner is printable text, whatever the file held."""
    try:
        text = data.decode().strip()
    except UnicodeDecodeError:
        return None
    cid, sep, ifname = text.partition("\r\n")
    if text.split() != ([cid, ifname] if sep else [cid]):  # no whitespace inside either field
        return None
    if not (cid.isprintable() and ifname.isprintable()):  # NULs, control characters: a leftover
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


def _read(folder: Folder, rel: str, cap: int, instead: str = "") -> bytes | None:
    """The regular file ``rel``'s bytes; None when it is absent, no regular file or over ``cap``
    (``instead``: what happens then, said in a warning naming the file)."""
    from basics.safefs import UnsafePath, read_regular

    try:
        data = read_regular(folder, rel, cap)
    except UnsafePath as exc:
        if instead:
            log.warning(f"{exc.path} {exc.problem}: not read ({instead})")
        return None
    except OSError:
        return None
    if len(data) <= cap:
        return data
    if instead:
        log.warning(f"{os.path.join(folder.path, rel)} is over {cap} bytes: not read ({instead})")
    return None


def _write_all(fd: int, data: bytes) -> None:
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


def _empty(st: os.stat_result | None) -> bool:
    """An empty regular file of one name: a killed writer's reservation, nobody's."""
    return st is not None and stat.S_ISREG(st.st_mode) and st.st_size == 0 and st.st_nlink == 1


#: ``os.utime`` on the name itself where the OS can (never a link's target).
_NOFOLLOW = {"follow_symlinks": False} if os.utime in os.supports_follow_symlinks else {}
