"""host-local allocator over an in-memory store: the reference's allocator_test.go, ported."""

from __future__ import annotations

import pytest

from basics import ipaddr
from plugins.cni.errors import INVALID_CONFIG, TRY_AGAIN_LATER, CniError
from plugins.ipam_host_local.allocator import Owner, allocate, allocate_all, candidates
from plugins.ipam_host_local.ranges import Range, RangeSet

ip = ipaddr.ip_address


class FakeStore:
    """The allocator's Store protocol in memory (the reference's fakestore)."""

    def __init__(self, taken: dict[str, str] | None = None, last: dict[int, str] | None = None) -> None:
        self.files = {ip(k): Owner(v, "eth0") for k, v in (taken or {}).items()}
        self.last = {k: ip(v) for k, v in (last or {}).items()}
        self.renewed: list = []

    def reserve(self, owner, addr, range_id):
        if addr in self.files:
            return False
        self.files[addr] = owner
        self.last[range_id] = addr
        return True

    def release(self, addr):
        self.files.pop(addr, None)

    def last_reserved(self, range_id):
        return self.last.get(range_id)

    def owned_by(self, owner):
        return [a for a, o in self.files.items() if o == owner]

    def renew(self, addr, owner):
        self.renewed.append(addr)


def rset(*subnets: str) -> RangeSet:
    return RangeSet.canonical([Range.canonical(s) for s in subnets])


def mkalloc() -> RangeSet:
    return rset("192.168.1.0/29")


def walk(rs: RangeSet, last: str | None) -> list[str]:
    return [str(a) for _, a in candidates(rs, ip(last) if last else None)]


# ---- RangeIter ----
def test_iter_from_beginning():
    assert walk(mkalloc(), None) == ["192.168.1.2", "192.168.1.3", "192.168.1.4", "192.168.1.5", "192.168.1.6"]


def test_iter_from_end():
    assert walk(mkalloc(), "192.168.1.6") == ["192.168.1.2", "192.168.1.3", "192.168.1.4", "192.168.1.5", "192.168.1.6"]


def test_iter_from_middle():
    assert walk(mkalloc(), "192.168.1.3") == ["192.168.1.4", "192.168.1.5", "192.168.1.6", "192.168.1.2", "192.168.1.3"]


def _raw_range(start: str, end: str, subnet: str) -> Range:
    return Range(ipaddr.ip_network(subnet, strict=False), ip(start), ip(end))


@pytest.mark.parametrize("last,start", [("192.168.1.3", "192.168.2.0"), (None, "192.168.1.0")])
def test_iter_start_for_multiple_ranges(last, start):
    rs = RangeSet(
        (
            _raw_range("192.168.1.0", "192.168.1.3", "192.168.1.1/30"),
            _raw_range("192.168.2.0", "192.168.2.3", "192.168.2.1/30"),
        )
    )
    assert walk(rs, last)[0] == start


# ---- round robin table ----
@pytest.mark.parametrize(
    "subnets,taken,last,expect",
    [
        (["10.0.0.0/29"], [], None, "10.0.0.2"),
        (["2001:db8:1::/64"], [], None, "2001:db8:1::2"),
        (["10.0.0.0/30"], [], None, "10.0.0.2"),
        (["10.0.0.0/29"], ["10.0.0.2"], None, "10.0.0.3"),
        (["10.0.0.0/29"], [], "10.0.0.5", "10.0.0.6"),
        (["10.0.0.0/29"], ["10.0.0.4", "10.0.0.5"], "10.0.0.3", "10.0.0.6"),
        (["10.0.0.0/29"], ["10.0.0.6"], "10.0.0.5", "10.0.0.2"),
        (["10.0.0.0/29"], ["10.0.0.2"], "10.0.0.128", "10.0.0.3"),
        (["10.0.0.0/29"], ["10.0.0.2", "10.0.0.4", "10.0.0.5", "10.0.0.6"], "10.0.0.3", "10.0.0.3"),
        (["10.0.0.0/30", "10.0.1.0/30"], [], None, "10.0.0.2"),
        (["10.0.0.0/30", "10.0.1.0/30"], [], "10.0.0.2", "10.0.1.2"),
        (["10.0.0.0/30", "10.0.1.0/30", "10.0.2.0/30"], [], "10.0.2.2", "10.0.0.2"),
    ],
)
def test_round_robin(subnets, taken, last, expect):
    store = FakeStore({t: "other" for t in taken}, {0: last} if last else {})
    got = allocate(rset(*subnets), store, 0, Owner("ID", "eth0"))
    assert str(got.ip) == expect
    assert got.ip_config().gateway == str(rset(*subnets).range_for(got.ip).gateway)


def test_broadcast_never_allocated():
    store, rs = FakeStore(), mkalloc()
    got = [str(allocate(rs, store, 0, Owner(f"ID{i}", "eth0")).ip) for i in range(2, 7)]
    assert got == [f"192.168.1.{i}" for i in range(2, 7)]
    with pytest.raises(CniError, match="no IP addresses available in range set: 192.168.1.1-192.168.1.6"):
        allocate(rs, store, 0, Owner("ID7", "eth0"))


def test_round_robin_after_release():
    store, rs = FakeStore(), mkalloc()
    first = allocate(rs, store, 0, Owner("ID", "eth0"))
    assert str(first.ip) == "192.168.1.2"
    store.release(first.ip)
    assert str(allocate(rs, store, 0, Owner("ID", "eth0")).ip) == "192.168.1.3"


def test_requested_ip():
    store, rs = FakeStore(), mkalloc()
    assert str(allocate(rs, store, 0, Owner("ID", "eth0"), ip("192.168.1.5")).ip) == "192.168.1.5"
    with pytest.raises(CniError) as err:
        allocate(rs, store, 0, Owner("ID2", "eth0"), ip("192.168.1.5"))
    assert err.value.msg == "requested IP address 192.168.1.5 is not available in range set 192.168.1.1-192.168.1.6"
    assert err.value.code == TRY_AGAIN_LATER


@pytest.mark.parametrize("requested", ["192.168.1.5", "192.168.1.2"])
def test_requested_ip_outside_range_bounds(requested):
    rs = RangeSet.canonical([Range.canonical("192.168.1.0/29", "192.168.1.3", "192.168.1.4")])
    with pytest.raises(CniError, match=f"{requested} not in range set 192.168.1.3-192.168.1.4") as err:
        allocate(rs, FakeStore(), 0, Owner("ID", "eth0"), ip(requested))
    assert err.value.code == INVALID_CONFIG


def test_requested_gateway_refused():
    with pytest.raises(CniError, match="requested ip 192.168.1.1 is subnet's gateway"):
        allocate(mkalloc(), FakeStore(), 0, Owner("ID", "eth0"), ip("192.168.1.1"))


@pytest.mark.parametrize(
    "subnets,taken",
    [
        (["10.0.0.0/30"], ["10.0.0.2"]),
        (["10.0.0.0/29"], ["10.0.0.2", "10.0.0.3", "10.0.0.4", "10.0.0.5", "10.0.0.6"]),
        (["10.0.0.0/30", "10.0.1.0/30"], ["10.0.0.2", "10.0.1.2"]),
    ],
)
def test_out_of_ips(subnets, taken):
    with pytest.raises(CniError, match="^no IP addresses available in range set"):
        allocate(rset(*subnets), FakeStore({t: "x" for t in taken}), 0, Owner("ID", "eth0"))


def test_a_retried_add_gets_the_address_it_already_holds():
    """Our one difference from the Go plugin (which refuses a "duplicate allocation")."""
    store = FakeStore()
    first = allocate_all([mkalloc()], store, Owner("ID", "eth0"))
    again = allocate_all([mkalloc()], store, Owner("ID", "eth0"))
    assert [a.ip for a in again] == [a.ip for a in first] and str(first[0].ip) == "192.168.1.2"
    assert len(store.owned_by(Owner("ID", "eth0"))) == 1
    assert store.renewed == [first[0].ip]  # the retry renews it (reclaim sees an ADD in flight)
    assert str(allocate(mkalloc(), store, 0, Owner("ID", "eth1")).ip) == "192.168.1.3"


def test_a_failing_retry_keeps_the_address_the_first_add_reserved():
    store = FakeStore()
    [held] = allocate_all([mkalloc()], store, Owner("ID", "eth0"))
    with pytest.raises(CniError):  # the second set's requested IP is outside every range
        allocate_all([mkalloc()], store, Owner("ID", "eth0"), requested=[ipaddr.ip_address("10.9.9.9")])
    assert store.owned_by(Owner("ID", "eth0")) == [held.ip]


# ---- allocate_all (cmdAdd's loop) ----
def test_allocate_all_dual_stack_and_requested():
    store = FakeStore()
    sets = [rset("10.1.2.0/24"), rset("2001:db8:1::/64")]
    got = allocate_all(sets, store, Owner("c", "eth0"), [ip("2001:db8:1::999"), ip("10.1.2.88")])
    assert [str(a.ip) for a in got] == ["10.1.2.88", "2001:db8:1::999"]
    assert [a.ip_config().address for a in got] == ["10.1.2.88/24", "2001:db8:1::999/64"]


def test_allocate_all_releases_earlier_sets_when_a_later_one_fails():
    before = Owner("old", "eth0")
    store = FakeStore({"10.1.3.2": "old"})
    store.files[ip("10.1.3.2")] = before
    with pytest.raises(CniError, match="^failed to allocate for range 1: no IP addresses available"):
        allocate_all([rset("10.1.2.0/24"), rset("10.1.3.0/30")], store, Owner("c", "eth0"))
    assert store.files == {ip("10.1.3.2"): before}


def test_allocate_all_unused_requested_ip():
    store = FakeStore()
    with pytest.raises(CniError, match="^failed to allocate all requested IPs: 10.1.2.") as err:
        allocate_all([rset("10.1.2.0/24")], store, Owner("c", "eth0"), [ip("10.1.2.88"), ip("10.1.2.77")])
    assert err.value.code == INVALID_CONFIG
    assert store.files == {}


class FailingV6Store(FakeStore):
    def reserve(self, owner, addr, range_id):
        if addr.version == 6:
            raise OSError(28, "No space left on device")
        return super().reserve(owner, addr, range_id)


def test_allocate_all_rolls_back_on_io_errors_too():
    store = FailingV6Store()
    with pytest.raises(OSError):
        allocate_all([rset("10.1.2.0/24"), rset("2001:db8:1::/64")], store, Owner("c", "eth0"))
    assert store.files == {}
