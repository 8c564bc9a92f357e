"""ADD, DEL, CHECK, GC and STATUS of host-local. Each command but STATUS holds the store lock once."""

from __future__ import annotations

import os

from plugins.cni import log
from plugins.cni.config import valid_attachments
from plugins.cni.errors import INVALID_CONFIG, IO_FAILURE, NOT_AVAILABLE, UNKNOWN_CONTAINER, CniError
from plugins.cni.result import DNS, Result
from plugins.cni.skel import Handlers, Request

from . import config
from .allocator import Owner, allocate_all
from .ranges import parse_ip
from .store import DiskStore, open_store


def add(req: Request) -> Result:
    cfg = config.load(req.conf, req.cni_args, req.cni_version, req.platform)
    dns = _dns(cfg.resolv_conf)
    owner = Owner(req.container_id, req.ifname)
    with _store(cfg.directory, req.platform, req.netns) as store:
        allocations = allocate_all(cfg.range_sets, store, owner, cfg.requested)
    log.event("allocated", ips=[str(a.ip) for a in allocations])
    return Result(
        cni_version=req.cni_version, ips=[a.ip_config() for a in allocations], routes=list(cfg.routes), dns=dns
    )


def delete(req: Request) -> None:
    """Release the container's addresses; unknown containers and missing stores are success."""
    cfg = config.load_location(req.conf, req.platform, req.command)
    if not os.path.isdir(cfg.directory):
        return
    with _store(cfg.directory, req.platform) as store:
        released = store.release_owner(Owner(req.container_id, req.ifname))
    log.event("released", ips=[str(ip) for ip in released])


def check(req: Request) -> None:
    """The container still holds an address, and every address of prevResult that lies in our
    ranges is still reserved to it."""
    cfg = config.load(req.conf, req.cni_args, req.cni_version, req.platform)
    owner = Owner(req.container_id, req.ifname)
    with _store(cfg.directory, req.platform) as store:
        held = store.find(owner)
        if not held:
            store.rescan()  # a miss is rare and decisive: confirm it against the files
            held = store.find(owner)
    if not held:
        raise CniError(
            UNKNOWN_CONTAINER,
            f"host-local: Failed to find address added by container {req.container_id}",
            f"no reservation for ifname {req.ifname} in {cfg.directory}",
        )
    prev = req.prev_result
    expected = [parse_ip(ip.address.split("/")[0]) for ip in (prev.ips if prev else [])]
    missing = [str(ip) for ip in expected if ip not in held and any(s.contains(ip) for s in cfg.range_sets)]
    if missing:
        raise CniError(
            UNKNOWN_CONTAINER,
            f"host-local: addresses {', '.join(missing)} are no longer reserved to container {req.container_id}",
            f"it holds {', '.join(map(str, held))} in {cfg.directory}; delete and re-add the container",
        )


def gc(req: Request) -> None:
    """Release every reservation whose (container ID, ifname) is not a valid attachment, by the
    node's one ownership rule (``plugins.cni.ownership.gc_keeps``): legacy id-only reservations
    stay while any attachment of that container is valid; the node's own always stay. Every file
    here is written under the store's lock, which GC holds too, so it never meets one a live
    writer is still writing (an empty reservation is a killed writer's: no owner, released).
    """
    from plugins.cni import ownership

    cfg = config.load_location(req.conf, req.platform, req.command)
    valid = valid_attachments(req.conf)
    if valid is None:
        log.warning("GC without cni.dev/valid-attachments: nothing released")
        return
    if not os.path.isdir(cfg.directory):
        return
    with _store(cfg.directory, req.platform) as store:
        store.rescan()  # GC is rare and must see every file, whatever wrote it
        stale = [
            (ip, owner)
            for ip, owner in store.allocations()
            if owner is None or not ownership.gc_keeps(owner.container_id, owner.ifname, valid)
        ]
        for ip, owner in stale:
            store.release(ip)
            ownership.freed(
                "host-local GC",
                f"the reservation of {ip} in {cfg.directory}",
                f"reserved for {_who(owner)}, which the runtime no longer lists",
            )
    log.event("gc", released=[str(ip) for ip, _ in stale], valid_attachments=len(valid))


def _who(owner: Owner | None) -> str:
    return f"{owner.container_id} ({owner.ifname or 'any interface'})" if owner else "an unreadable owner"


def status(req: Request) -> None:
    """Code 50 when ADD cannot succeed: the store is unusable or a range set is exhausted. It only
    reads, without the store's lock: an ADD hung while holding it must not hold up the runtime's
    readiness probe, and a count a concurrent ADD changes is as good as one taken a moment later.
    The folder is judged first, as ADD judges it (``checked_folder``): one ADD refuses is 50 here, and
    one others may write (which ADD makes admin-only again) is not read, as what is in it could be
    anything (a FIFO would hang the runtime's probe)."""
    from basics.safefs import UnsafePath, checked_folder

    cfg = config.load(req.conf, req.cni_args, req.cni_version, req.platform)
    try:
        store = DiskStore(cfg.directory, req.platform, folder=checked_folder(cfg.directory))
        try:
            taken = [ip for ip, _ in store.allocations(warn=False)]
        finally:
            store.close()
    except FileNotFoundError:
        taken = []  # no reservation yet: the first ADD creates the directory
    except UnsafePath as exc:
        mine = os.path.normpath(exc.path) == os.path.normpath(os.path.abspath(cfg.directory))
        if not (mine and exc.problem.startswith("is writable")):
            raise CniError(
                NOT_AVAILABLE, f"host-local: refusing data directory {exc.path}: {exc.problem}", exc.fix
            ) from exc
        taken = []  # not counted: the next ADD takes the folder back, then counts
    except OSError as exc:
        raise _unusable(NOT_AVAILABLE, cfg.directory, exc) from exc
    if os.path.isdir(cfg.directory) and not os.access(cfg.directory, os.W_OK):
        raise CniError(
            NOT_AVAILABLE,
            f"host-local: cannot use data directory {cfg.directory}: not writable",
            "ipam.dataDir must be a writable local directory",
        )
    for rset in cfg.range_sets:
        used = sum(1 for ip in taken if rset.contains(ip) and all(ip != r.gateway for r in rset.ranges))
        if used >= rset.size():
            raise CniError(
                NOT_AVAILABLE,
                f"no IP addresses available in range set: {rset}",
                f"all {rset.size()} addresses are reserved; delete pods or widen the range",
            )


def _dns(path: str) -> DNS:
    if not path:
        return DNS()
    from . import resolvconf  # only configs that name a resolv.conf pay for the parser

    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return resolvconf.parse(f.read())
    except OSError as exc:
        raise CniError(
            INVALID_CONFIG,
            f"ipam.resolvConf: cannot read {path}: {exc.strerror or exc}",
            "point ipam.resolvConf at a readable resolv.conf-style file, or remove it",
        ) from exc


class _store(open_store):
    """open_store with I/O failures, in the block too, as CNI code 5 naming the directory."""

    __slots__ = ()

    def __enter__(self) -> DiskStore:
        try:
            return super().__enter__()
        except OSError as exc:
            raise self._failure(exc) from exc

    def __exit__(self, kind: type | None, exc: BaseException | None, tb: object) -> bool:
        try:
            super().__exit__(kind, exc, tb)
        except OSError as release:
            raise self._failure(release) from release
        if isinstance(exc, OSError):
            raise self._failure(exc) from exc
        return False

    def _failure(self, exc: OSError) -> CniError:
        from basics.errors import UnsafePath

        if isinstance(exc, UnsafePath):  # the folder, or a file in it, that no plugin may use
            return CniError(IO_FAILURE, f"host-local: refusing {exc.path}: {exc.problem}", exc.fix)
        return _unusable(IO_FAILURE, self.directory, exc)


def _unusable(code: int, directory: str, exc: OSError) -> CniError:
    return CniError(
        code,
        f"host-local: cannot use data directory {directory}: {exc.strerror or exc}",
        "ipam.dataDir must be a writable local directory",
    )


#: What ``__main__``'s ``handlers`` hands skel.
HANDLERS = Handlers(add=add, delete=delete, check=check, gc=gc, status=status)
