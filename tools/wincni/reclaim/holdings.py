"""What a node holds for its pods, read and freed for the sweep (``reclaim``): host-local's
reservations (with whether the sandbox recorded at their ADD still exists), the network's HNS
endpoints and flannel's saved delegate configs.

The imperative shell of ``wincni reclaim``: ``reclaim.plan`` decides from what this reads, and
``Holdings`` (here) and the test's fake do what it decided. Reservations are read and released
under host-local's store lock, the lock every ADD's IPAM step and every DEL's release take, held
for the whole pass: no ADD or DEL can reserve or release for any pod while the pass re-checks and
frees. HNS is opened once per pass, at the first question.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Mapping


@dataclass(frozen=True)
class Reservation:
    ip: str
    owner: str  # the container ID it was reserved for; "" when its file names none
    age: float
    sandbox_alive: bool = False  # the sandbox host-local recorded at its ADD still exists


@dataclass(frozen=True)
class HeldEndpoint:
    name: str
    id: str
    ips: tuple[str, ...]
    in_use: bool  # a namespace or a running container still holds it (``EndpointApi.in_use``)


@dataclass(frozen=True)
class Delegate:
    key: str  # flannel's sandbox ID, the file's name in its dataDir
    age: float


class Holdings:
    """The real node: ``network`` on HNS, host-local's store ``ipam_dir``, flannel's ``data_dir``
    ("" when the network's plugin is not flannel)."""

    def __init__(
        self,
        network: str,
        ipam_dir: str,
        data_dir: str,
        platform: str,
        env: Mapping[str, str],
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.network, self.ipam_dir, self.data_dir = network, ipam_dir, data_dir
        self.platform, self.env, self.clock = platform, env, clock
        self._api: Any = None
        self._found: dict[str, Any] = {}  # endpoint name -> the HNS object last read, to remove

    def _hns(self) -> Any:
        if self._api is None:
            from libhns.client import open_clients
            from plugins.winnet.hnsapi import HnsV1Api

            hcn, hnscall = open_clients(self.env)
            self._api = HnsV1Api(
                hcn=hcn, hnscall=hnscall, container_id="", netns=""
            )  # the V1 view says which sandbox holds each
        return self._api

    def _endpoint(self, ep: Any, in_use: bool) -> HeldEndpoint:
        self._found[ep.name or ""] = ep
        return HeldEndpoint(ep.name or "", ep.id, tuple(ep.ip_addresses), in_use)

    def endpoints(self) -> list[HeldEndpoint]:
        """The network's endpoints in one listing, and which a live sandbox holds in one more:
        a pass's reads are as many whatever the number of pods."""
        api = self._hns()
        network = api.network(self.network)
        found = api.endpoints_of(network) if network is not None else []
        return [self._endpoint(ep, used) for ep, used in zip(found, api.in_use_each(found))]

    def endpoint(self, name: str) -> HeldEndpoint | None:
        """Read again now (the re-check just before removing it)."""
        ep = self._hns().endpoint(name)
        return self._endpoint(ep, self._hns().in_use(ep)) if ep is not None else None

    def alive(self, sandboxes: Iterable[Any]) -> dict[Any, bool]:
        """Which of ``sandboxes`` (``sandboxes.Sandbox``) exist now; HNS asked only when there is one."""
        from tools.wincni.node.sandboxes import exists

        wanted = list(sandboxes)
        return exists(wanted, self._hns().hcn, self._hns().hnscall) if wanted else {}

    def remove_endpoint(self, name: str) -> None:
        self._hns().remove_stale(self._found[name])

    def _store(self) -> Any:
        from plugins.flannel.store import Store

        return Store(self.data_dir)

    def delegates(self) -> list[Delegate]:
        """This network's saved configs (a dataDir may be shared by several flannel networks)."""
        if not self.data_dir:
            return []
        from basics import jsontext

        store, out = self._store(), []
        for key in store.keys():
            try:
                doc = jsontext.loads(store.load(key) or b"")
            except ValueError:
                continue  # not a config flannel can use either: flannel's GC reports it
            found = self.delegate(key) if isinstance(doc, dict) and doc.get("name") == self.network else None
            if found is not None:
                out.append(found)
        return out

    def delegate(self, key: str) -> Delegate | None:
        try:
            return Delegate(key, self.clock() - os.lstat(os.path.join(self.data_dir, key)).st_mtime)
        except OSError:
            return None

    def remove_delegate(self, key: str) -> None:
        """Its config and every attachment marker beside it (flannel's GC with no attachment valid)."""
        self._store().prune(key, set())

    def locked(self) -> "_Locked":
        return _Locked(self)


class _Locked:
    """host-local's store, held: what it reserves now, and releasing."""

    def __init__(self, holdings: Holdings) -> None:
        self.holdings = holdings
        self._held: Any = None
        self._store: Any = None

    def __enter__(self) -> "_Locked":
        h = self.holdings
        if h.ipam_dir and os.path.isdir(h.ipam_dir):
            from plugins.ipam_host_local.store import open_store

            self._held = open_store(h.ipam_dir, h.platform)
            self._store = self._held.__enter__()
            self._store.index  # noqa: B018 - the index as written (rebuilt when stale), for rescan to compare
            self._store.rescan()  # every file, whatever wrote it: written back only when it differs
        return self

    def __exit__(self, *exc: object) -> None:
        if self._held is not None:
            self._held.__exit__(*exc)

    def reservations(self, pod: str | None = None) -> Iterator[Reservation]:
        """What host-local reserves now (``pod``: only that container's, the re-check of one
        candidate), each with whether the sandbox recorded at its ADD exists: every address of
        the attachment shares the record its first address names."""
        if self._store is None:
            return
        from tools.wincni.node.sandboxes import sandbox_of

        now = self.holdings.clock()
        held = [(ip, o) for ip, o in self._store.allocations() if pod is None or (o.container_id if o else "") == pod]
        recorded = {o: sandbox_of(o.container_id, netns) for o, netns in self._store.sandboxes().values()}
        sandboxes = {ip: recorded.get(o) for ip, o in held if o is not None}
        alive = self.holdings.alive({s for s in sandboxes.values() if s is not None})
        for ip, owner in held:
            sandbox = sandboxes.get(ip)
            yield Reservation(
                str(ip),
                owner.container_id if owner else "",
                now - self._store.reserved_at(ip),
                bool(sandbox is not None and alive.get(sandbox)),
            )

    def release(self, ip: str) -> None:
        self._store.release(ip)
