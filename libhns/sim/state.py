"""The simulator's loaded state: one table of typed records per kind, and what spans kinds.

Everything here works on one loaded state (inside a store transaction or on a snapshot); a kind's
own rules live in its module (``network.py``, ``endpoint.py``, ``namespace.py``,
``loadbalancer.py``, ``container.py``) and raise ``Reject(hresult)`` for what HNS refuses; the
surfaces in ``simulator.py`` turn that into an HRESULT + ErrorRecord (V2) or a ``Success:false``
envelope (V1). ``kinds`` (``libhns.sim.kinds.KINDS``) maps each kind's name to its record
class; a table is turned into records when first used and back into JSON by ``dump``.
"""

from __future__ import annotations

from libhns.networks import NON_PERSISTENT
from libhns.sim.adapters import adapter_address
from libhns.sim.validate import Reject
from libhns.sim.versions import DEFAULT_VERSION

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Iterator, Mapping

    from libhns.sim.adapters import Adapters


class HnsState:
    """The loaded store; ``adapters`` are the node's host adapters, whose address a network bound
    to one reports as its management IP only ``mgmt_delay`` seconds after its creation (HNS sets
    it up late); ``version`` is the HNS version answering (``versions.py``: what it implements)."""

    def __init__(
        self,
        data: dict[str, Any],
        kinds: Mapping[str, Any],
        adapters: Adapters = (),
        mgmt_delay: float = 0.0,
        version: tuple[int, int] = DEFAULT_VERSION,
    ) -> None:
        self.data = data
        self.kinds = kinds
        self.adapters = adapters
        self.mgmt_delay = mgmt_delay
        self.version = version
        self._tables: dict[str, dict[str, Any]] = {}

    def table(self, kind: str) -> dict[str, Any]:
        """The records of ``kind`` by key (loaded from the store on first use)."""
        table = self._tables.get(kind)
        if table is None:
            cls = self.kinds[kind]
            table = self._tables[kind] = {key: cls.load(stored) for key, stored in self.data.get(cls.TABLE, {}).items()}
        return table

    def dump(self) -> dict[str, Any]:
        """The state as the store keeps it, with every table used written back."""
        for kind, table in self._tables.items():
            self.data[self.kinds[kind].TABLE] = {key: rec.dump() for key, rec in table.items()}
        return self.data

    # --- lookups ---------------------------------------------------------------------------------
    def adapter_address(self, name: str | None) -> str:
        """The address of the node's adapter ``name`` (None: the default one)."""
        return adapter_address(self.adapters, name)

    def find(self, kind: str, id_: str) -> Any:
        """The record of that ID, or None (also for an ID that is no GUID)."""
        try:
            return self.table(kind).get(self.kinds[kind].key(id_))
        except Reject:
            return None

    def get(self, kind: str, id_: str, code: int | None = None) -> Any:
        """The record of that ID; a missing one is Reject(``code``, else the kind's not-found)."""
        cls = self.kinds[kind]
        rec = self.table(kind).get(cls.key(id_))
        if rec is None:
            raise Reject(code if code is not None else cls.NOT_FOUND)
        return rec

    def enumerate(self, kind: str, filt: Mapping[str, Any]) -> list[str]:
        """IDs matching a HostComputeQuery filter (keys are the V1 field names, case-insensitive)."""
        return [key for key, rec in self.table(kind).items() if all(rec.matches(self, k, v) for k, v in filt.items())]

    def endpoints_of(self, network_id: str) -> Iterator[Any]:
        for ep in self.table("Endpoint").values():
            if ep.network_id.upper() == network_id.upper():
                yield ep

    # --- changes ---------------------------------------------------------------------------------
    def add(self, rec: Any) -> Any:
        self.table(rec.KIND)[rec.key(rec.id)] = rec
        return rec

    def delete(self, kind: str, id_: str, code: int | None = None) -> Any:
        """Delete by HNS's rules for the kind (which may refuse); the deleted record."""
        rec = self.get(kind, id_, code)
        rec.delete(self)
        return self.table(kind).pop(rec.key(rec.id))

    def next(self, counter: str) -> int:
        """The next value of a host-wide sequence (compartments, DR MACs)."""
        seq = self.data.setdefault("seq", {})
        seq[counter] = int(seq.get(counter, 0)) + 1
        return seq[counter]

    def restart(self) -> list[str]:
        """What restarting the HNS service does: networks created with EnableNonPersistent are
        gone, with their endpoints, remote ones too (detached from namespaces and containers);
        load balancers stay, referencing what went (HNS rehydrates them: kubernetes#139519).
        The dropped networks' names."""
        dropped = [net for net in self.table("Network").values() if int(net.doc.get("Flags") or 0) & NON_PERSISTENT]
        for net in dropped:
            self.delete("Network", net.id)
        return [net.name for net in dropped]
