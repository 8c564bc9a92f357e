"""host-local allocator + disk store under any sequence of ADD / DEL / GC, foreign writes (the
Go plugin) and crashes: no duplicates, addresses inside their ranges, gateway/network/broadcast
never handed out, rollback complete, and the index either detected stale or equal to the files."""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from basics import ipaddr
from basics.safefs import checked_folder
from plugins.cni.errors import CniError
from plugins.ipam_host_local.allocator import Owner, allocate_all
from plugins.ipam_host_local.ranges import Range, RangeSet
from plugins.ipam_host_local.store import DiskStore, load_index, open_store, reservation_content

SETS = (
    RangeSet.canonical([Range.canonical("10.0.0.0/29"), Range.canonical("10.0.1.0/30", gateway="10.0.1.2")]),
    RangeSet.canonical([Range.canonical("2001:db8::/125", "2001:db8::2", "2001:db8::6", "2001:db8::3")]),
)
NEVER = {
    ipaddr.ip_address(a)
    for a in ("10.0.0.0", "10.0.0.1", "10.0.0.7", "10.0.1.0", "10.0.1.2", "10.0.1.3", "2001:db8::3", "2001:db8::7")
}
owners = st.builds(Owner, st.sampled_from(["a", "b", "c", "d", "e", "f"]), st.sampled_from(["eth0", "eth1"]))


class HostLocalMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.dir = tempfile.mkdtemp(prefix="hl-sm-")
        self.model: dict[ipaddr.Address, Owner] = {}

    def teardown(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)

    def _held(self, owner: Owner, rset: RangeSet) -> bool:
        return any(o == owner and rset.contains(a) for a, o in self.model.items())

    def _add(self, store, owner: Owner) -> None:
        try:
            got = allocate_all(SETS, store, owner)
        except CniError:
            assert any(not self._held(owner, s) and sum(s.contains(a) for a in self.model) == s.size() for s in SETS)
            return
        for a in got:  # a retried ADD gets back what the owner holds; anything else was free
            assert self.model.get(a.ip, owner) == owner
            self.model[a.ip] = owner
        assert len([o for o in self.model.values() if o == owner]) == len(SETS)

    @rule(owner=owners)
    def add(self, owner: Owner) -> None:
        with open_store(self.dir, "linux") as store:
            self._add(store, owner)

    @rule(owner=owners)
    def add_then_crash(self, owner: Owner) -> None:
        """Reservation files committed, the process dies before the index is written."""
        self._add(DiskStore(self.dir, "linux"), owner)

    @rule(owner=owners)
    def delete(self, owner: Owner) -> None:
        with open_store(self.dir, "linux") as store:
            store.release_owner(owner)
        self.model = {a: o for a, o in self.model.items() if o != owner}

    @rule(valid=st.sets(owners, max_size=4))
    def gc(self, valid: set[Owner]) -> None:
        with open_store(self.dir, "linux") as store:
            store.rescan()
            for a, o in store.allocations():
                if o not in valid:
                    store.release(a)
        self.model = {a: o for a, o in self.model.items() if o in valid}

    @rule(owner=owners, pick=st.integers(min_value=0, max_value=20))
    def foreign_add(self, owner: Owner, pick: int) -> None:
        """The Go plugin reserves a free address: a file appears behind our index's back."""
        free = [
            a
            for s in SETS
            for r in s.ranges
            for a in (ipaddr.Address(n, r.version) for n in range(int(r.range_start), int(r.range_end) + 1))
            if a not in NEVER and a not in self.model and not self._held(owner, s)
        ]
        if free:
            a = free[pick % len(free)]
            with open(os.path.join(self.dir, str(a)), "wb") as f:
                f.write(reservation_content(owner))
            self.model[a] = owner

    @invariant()
    def files_match_model(self) -> None:
        if not os.path.isdir(self.dir):
            return
        scan = DiskStore(self.dir, "linux")
        scan.rescan()
        on_disk = dict(scan.allocations())
        assert on_disk == self.model
        for a in on_disk:
            assert a not in NEVER and any(s.contains(a) for s in SETS)
        owned = [(o, s) for a, o in on_disk.items() for s in SETS if s.contains(a)]
        assert len(owned) == len(set(owned)), "one address per owner per range set"
        current = load_index(checked_folder(self.dir))
        assert current is None or current == scan.index


TestHostLocalMachine = pytest.mark.slow(HostLocalMachine.TestCase)
TestHostLocalMachine.settings = settings(
    max_examples=60, stateful_step_count=25, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
