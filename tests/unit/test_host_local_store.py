"""host-local disk store, reservation index and lock: bytes on disk, staleness, crash healing."""

from __future__ import annotations

import io
import multiprocessing
import os
import sys
import threading
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from basics import ipaddr
from basics.safefs import checked_folder
from plugins.cni import log
from plugins.cni.lock import FileLock
from plugins.ipam_host_local import index as idx
from plugins.ipam_host_local.allocator import Owner
from plugins.ipam_host_local.store import DiskStore, load_index, open_store, reservation_owner, save_index

ip = ipaddr.ip_address
A, B = Owner("ctr-a", "eth0"), Owner("ctr-b", "eth0")


def files(d) -> dict[str, bytes]:
    return {n: open(os.path.join(d, n), "rb").read() for n in sorted(os.listdir(d))}


def on_disk_index(d) -> idx.Index | None:
    return load_index(checked_folder(str(d)))


def scanned(d, platform="linux") -> idx.Index:
    s = DiskStore(str(d), platform)
    s.rescan()
    return s.index


def test_reserve_writes_reference_bytes(tmp_path):
    with open_store(str(tmp_path), "linux") as s:
        assert s.reserve(A, ip("10.1.2.2"), 0)
        assert not s.reserve(B, ip("10.1.2.2"), 0)
        assert s.reserve(Owner("   dummy\n ", "eth0"), ip("10.1.2.3"), 1)
    got = files(tmp_path)
    assert got["10.1.2.2"] == b"ctr-a\r\neth0"
    assert got["10.1.2.3"] == b"dummy\r\neth0"
    assert got["last_reserved_ip.0"] == b"10.1.2.2" and got["last_reserved_ip.1"] == b"10.1.2.3"
    assert got["lock"] == b""
    assert on_disk_index(tmp_path) == scanned(tmp_path)


@pytest.mark.parametrize(
    "platform,name",
    [
        ("win32", "2001_db8_1__2"),
        pytest.param(
            "linux", "2001:db8:1::2", marks=pytest.mark.skipif(sys.platform == "win32", reason="':' in a file name")
        ),
    ],
)
def test_ipv6_names_escaped_on_windows_only(tmp_path, platform, name):
    with open_store(str(tmp_path), platform) as s:
        assert s.reserve(A, ip("2001:db8:1::2"), 1)
    assert files(tmp_path)[name] == b"ctr-a\r\neth0"
    assert files(tmp_path)["last_reserved_ip.1"] == b"2001:db8:1::2"  # content is never escaped
    with open_store(str(tmp_path), platform) as s:
        s.rescan()  # escaped names are found again (the reference's GetByID misses them)
        assert s.owned_by(A) == [ip("2001:db8:1::2")]


def test_release_owner_exact_then_legacy(tmp_path):
    (tmp_path / "10.1.2.9").write_bytes(b"ctr-a")  # legacy id-only reservation
    with open_store(str(tmp_path), "linux") as s:
        s.reserve(Owner("ctr-a", "eth1"), ip("10.1.2.2"), 0)
        assert s.release_owner(A) == [ip("10.1.2.9")]
        assert s.release_owner(A) == []
        assert s.release_owner(Owner("ctr-a", "eth1")) == [ip("10.1.2.2")]
    assert set(files(tmp_path)) == {"lock", "last_reserved_ip.0", idx.INDEX_NAME}


def test_foreign_writes_make_the_index_stale_and_it_heals(tmp_path):
    with open_store(str(tmp_path), "linux") as s:
        s.reserve(A, ip("10.1.2.2"), 0)
    assert on_disk_index(tmp_path) is not None
    (tmp_path / "10.1.2.3").write_bytes(b"ctr-b\r\neth0")  # the Go plugin, say
    assert on_disk_index(tmp_path) is None
    with open_store(str(tmp_path), "linux") as s:
        assert s.release_owner(B) == [ip("10.1.2.3")]
    assert on_disk_index(tmp_path) == scanned(tmp_path)


def test_index_lookup_verifies_files(tmp_path):
    """A stale index that still looks current never releases another container's address."""
    with open_store(str(tmp_path), "linux") as s:
        s.reserve(A, ip("10.1.2.2"), 0)
    stamp = os.stat(tmp_path).st_mtime_ns
    (tmp_path / "10.1.2.2").write_bytes(b"ctr-b\r\neth0")  # rewritten in place: mtime unchanged
    os.utime(tmp_path, ns=(stamp, stamp))
    with open_store(str(tmp_path), "linux") as s:
        assert s.release_owner(A) == []
    assert files(tmp_path)["10.1.2.2"] == b"ctr-b\r\neth0"


@pytest.mark.parametrize(
    "damage",
    [
        lambda d: (d / idx.INDEX_NAME).unlink(),
        lambda d: (d / idx.INDEX_NAME).write_bytes(b"garbage"),
        lambda d: (d / idx.INDEX_NAME).write_bytes((d / idx.INDEX_NAME).read_bytes()[:-5]),  # torn write
    ],
)
def test_missing_or_corrupt_index_is_rebuilt(tmp_path, damage):
    with open_store(str(tmp_path), "linux") as s:
        s.reserve(A, ip("10.1.2.2"), 0)
        s.reserve(B, ip("10.1.2.3"), 0)
    stamp = os.stat(tmp_path).st_mtime_ns
    damage(tmp_path)
    os.utime(tmp_path, ns=(stamp, stamp))  # only the content betrays the damage
    with open_store(str(tmp_path), "linux") as s:
        assert s.owned_by(B) == [ip("10.1.2.3")]
    assert on_disk_index(tmp_path) == scanned(tmp_path)


def test_crash_between_commit_and_index_heals(tmp_path):
    with open_store(str(tmp_path), "linux") as s:
        s.reserve(A, ip("10.1.2.2"), 0)
    s = DiskStore(str(tmp_path), "linux")
    s.reserve(B, ip("10.1.2.3"), 0)  # committed, but the process "dies" before flush
    with open_store(str(tmp_path), "linux") as s2:
        assert s2.owned_by(B) == [ip("10.1.2.3")]
        assert not s2.reserve(A, ip("10.1.2.3"), 0)


def test_an_empty_reservation_left_by_a_killed_writer_is_taken_over(tmp_path):
    (tmp_path / "10.1.2.4").write_bytes(b"")  # killed between the O_EXCL create and the write
    (tmp_path / "10.1.2.5").write_bytes(b"a b\r\neth0")  # unreadable, but someone wrote it: kept
    with open_store(str(tmp_path), "linux") as s:
        assert s.reserve(A, ip("10.1.2.4"), 0)
        assert not s.reserve(A, ip("10.1.2.5"), 0)
        assert s.owned_by(A) == [ip("10.1.2.4")]
    assert files(tmp_path)["10.1.2.4"] == b"ctr-a\r\neth0"
    assert on_disk_index(tmp_path) == scanned(tmp_path)


def test_unreadable_content_is_owned_by_nobody(tmp_path):
    (tmp_path / "10.1.2.4").write_bytes(b"")  # a crash right after the O_EXCL create
    (tmp_path / "10.1.2.5").write_bytes(b"a b\r\neth0")
    (tmp_path / "not-an-ip").write_bytes(b"ctr-a\r\neth0")
    (tmp_path / "10.01.2.6").write_bytes(b"ctr-a\r\neth0")  # not a name the reference writes
    with open_store(str(tmp_path), "linux") as s:
        assert sorted(s.allocations(), key=str) == [(ip("10.1.2.4"), None), (ip("10.1.2.5"), None)]
        assert s.owned_by(A) == []


@given(st.binary(max_size=80) | st.builds(lambda a, b: a + b"\r\n" + b, st.binary(max_size=20), st.binary(max_size=20)))
def test_a_reservation_file_reads_as_a_printable_owner_or_none(data):
    owner = reservation_owner(data)
    if owner is not None:
        assert owner.container_id and owner.container_id.isprintable() and owner.ifname.isprintable()
        assert not any(c.isspace() for c in owner.container_id + owner.ifname)


@given(st.binary(max_size=200))
def test_an_index_of_any_bytes_lists_addresses_and_printable_owners_or_none(body):
    """Whatever a whole index holds (one an administrator wrote with a right checksum), its
    reader lists text and owners that print, and a store over it lists only addresses."""
    for address, owner in idx.decode(idx.Index(body).encode(5), 5).items():
        assert isinstance(address, str)
        assert owner is None or (owner.container_id.isprintable() and owner.ifname.isprintable())


def test_malformed_reservations_are_named_no_ones_and_released_as_they_are(tmp_path):
    """What an unclean shutdown or an administrator leaves at an address: no owner, a warning
    naming the file and what is wrong with it, and a release that removes the entry itself."""
    leftovers = {
        "10.1.2.4": "holds 16 NUL bytes, not '<container ID>\\r\\n<interface>'",
        "10.1.2.5": "holds 3 bytes, not '<container ID>\\r\\n<interface>'",
        "10.1.2.6": "is over 4096 bytes",
        "10.1.2.7": "is a FIFO, not a regular file",
        "10.1.2.8": "is a symbolic link",
    }
    (tmp_path / "10.1.2.4").write_bytes(b"\0" * 16)
    (tmp_path / "10.1.2.5").write_bytes(b"\x01\r\n")
    (tmp_path / "10.1.2.6").write_bytes(b"x" * 5000)
    os.mkfifo(tmp_path / "10.1.2.7")
    (tmp_path / "10.1.2.8").symlink_to(tmp_path / "10.1.2.4")
    said = io.StringIO()
    log.configure("host-local", stderr=said)
    try:
        with open_store(str(tmp_path), "linux") as s:
            assert sorted(s.allocations(), key=str) == [(ip(a), None) for a in sorted(leftovers)]
            s.allocations()  # listed again: said once
    finally:
        log.reset()
    err = said.getvalue()
    with open_store(str(tmp_path), "linux") as s:
        assert {a: s.problem(a) for a in leftovers} == leftovers
        for address, why in leftovers.items():
            assert err.count(f"malformed reservation {tmp_path / address}: it {why}; no pod owns it") == 1, err
        assert "\0" not in err
        assert s.reserve(A, ip("10.1.2.7"), 0) is False  # whatever stands there holds the address
        for address in leftovers:
            s.release(address)
        assert s.allocations() == []
    assert sorted(os.listdir(tmp_path)) == [idx.INDEX_NAME, "lock"]


def test_an_index_saved_with_an_unprintable_owner_reads_it_as_none():
    index = idx.Index.of([("10.0.0.2", Owner("\0" * 16, ""))])
    assert idx.decode(index.encode(3), 3).items() == [("10.0.0.2", None)]


def test_index_text_format_lookups():
    index = idx.Index.of(
        [("10.0.0.2", A), ("10.0.0.20", Owner("x", "eth0")), ("10.0.0.3", Owner("eth0")), ("10.0.0.4", None)]
    )
    assert index.owned_by(A) == ["10.0.0.2"]
    assert index.owned_by(Owner("eth0")) == ["10.0.0.3"]  # not the ifname column of other lines
    index.remove("10.0.0.2")
    assert [i for i, _ in index.items()] == ["10.0.0.20", "10.0.0.3", "10.0.0.4"]
    index.add("10.0.0.3", B)  # replaces, never duplicates
    assert index.owned_by(B) == ["10.0.0.3"] and len(index) == 3
    assert idx.decode(index.encode(7), 7) == index and idx.decode(index.encode(7), 8) is None


def _hold(path: str, locked, release) -> None:
    with FileLock(path):
        locked.set()
        release.wait(10)


@pytest.mark.parametrize("as_dir", [False, True])
def test_lock_excludes_other_processes(tmp_path, as_dir):
    path = str(tmp_path) if as_dir else str(tmp_path / "f")
    ctx = multiprocessing.get_context("spawn")
    locked, release = ctx.Event(), ctx.Event()
    p = ctx.Process(target=_hold, args=(path, locked, release))
    p.start()
    assert locked.wait(10)
    lock = FileLock(path)
    if as_dir:
        assert lock.path == str(tmp_path / "lock")
    started = time.monotonic()
    threading.Timer(0.3, release.set).start()
    with lock:
        waited = time.monotonic() - started
    p.join(10)
    assert waited >= 0.25


def test_a_change_in_the_same_clock_tick_as_the_save_is_never_missed(tmp_path):
    """File-system timestamps are coarse (NTFS, Linux without multigrain timestamps): a change
    in the tick the save saw leaves the directory's mtime where the save saw it. The save dates
    the directory just before that, so such a change still makes the index stale."""
    save_index(checked_folder(str(tmp_path)), idx.Index.of([("10.0.0.2", A)]))  # the index file exists from now on
    for i in range(5):
        seen = os.stat(tmp_path).st_mtime_ns
        save_index(checked_folder(str(tmp_path)), idx.Index.of([("10.0.0.2", A)]))
        assert load_index(checked_folder(str(tmp_path))) is not None
        (tmp_path / f"10.0.1.{i}").write_bytes(b"foreign")  # the Go plugin, an operator: no index update
        os.utime(tmp_path, ns=(seen, seen))  # ... stamped by a clock still in the tick the save saw
        assert load_index(checked_folder(str(tmp_path))) is None, f"round {i}"


def test_a_directory_dated_in_the_future_still_gets_a_current_index(tmp_path):
    """A clock stepped back (or a directory copied with its times) leaves a directory mtime ahead
    of the clock: the index is current, and the next change, stamped with the earlier clock,
    still makes it stale."""
    future = time.time_ns() + 3_600 * 10**9
    os.utime(tmp_path, ns=(future, future))
    save_index(checked_folder(str(tmp_path)), idx.Index.of([("10.0.0.2", A)]))
    assert load_index(checked_folder(str(tmp_path))) == idx.Index.of([("10.0.0.2", A)])
    (tmp_path / "10.0.0.9").write_bytes(b"foreign")
    assert load_index(checked_folder(str(tmp_path))) is None


def test_a_whole_index_whose_lines_are_no_addresses_is_rebuilt_from_the_files(tmp_path):
    (tmp_path / "10.1.2.2").write_bytes(b"ctr-a\r\neth0")
    save_index(checked_folder(str(tmp_path)), idx.Index(b"not-an-address ctr-b eth0\n"))
    assert load_index(checked_folder(str(tmp_path))) is not None  # whole and current: trusted as an index
    assert DiskStore(str(tmp_path), "linux").allocations() == [(ip("10.1.2.2"), A)]
