"""host-local's sandbox records: the format (round trip, never a Go reservation's content) and
the record's life beside its reservation in the store."""

from __future__ import annotations

import io
import json
import os

from hypothesis import given
from hypothesis import strategies as st

from basics import ipaddr
from plugins.cni import skel
from plugins.cni.names import CHARS
from plugins.ipam_host_local.__main__ import PLUGIN
from plugins.ipam_host_local.allocator import Owner
from plugins.ipam_host_local.store import (
    SANDBOX_MAGIC,
    SANDBOXES,
    DiskStore,
    open_store,
    sandbox_content,
    sandbox_record,
)

GUID = "5E3C8F0A-1B2C-4D5E-8F90-A1B2C3D4E5F6"
_first = st.sampled_from("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
names = st.builds(lambda a, b: a + b, _first, st.text(alphabet=sorted(CHARS), max_size=64))
lines = st.text(alphabet=st.characters(blacklist_characters="\r\n", blacklist_categories=("Cs",)), max_size=40)
netnses = st.one_of(st.uuids().map(str), st.just("none"), names.map(lambda n: "container:" + n), lines)


@given(names, lines, netnses)
def test_a_record_reads_back_as_written(cid, ifname, netns):
    assert sandbox_record(sandbox_content(Owner(cid, ifname), netns)) == (Owner(cid, ifname), netns)


@given(names, lines, netnses)
def test_a_record_is_never_what_the_go_plugin_matches(cid, ifname, netns):
    """The Go plugin's walk compares every file's trimmed content with these two (GetByID,
    ReleaseByID): a record must never be taken for, or released as, a reservation."""
    text = sandbox_content(Owner(cid, ifname), netns).decode().strip()
    assert text not in (f"{cid}\r\n{ifname}", cid)


@given(st.binary(max_size=200))
def test_anything_else_is_no_record(data):
    found = sandbox_record(data)
    assert found is None or data.startswith(SANDBOX_MAGIC.encode() + b"\r\n")


def test_truncated_or_foreign_content_is_no_record():
    whole = sandbox_content(Owner("abc", "eth0"), GUID)
    assert sandbox_record(whole + b"\r\nmore") is None
    assert sandbox_record(b"abc\r\neth0") is None
    assert sandbox_record(whole.replace(b"abc", b"a c")) is None


def add(data, cid, netns, command="ADD", ifname="eth0", extra=None):
    conf = {
        "cniVersion": "1.1.0",
        "name": "net",
        "type": "win-bridge",
        "ipam": {"type": "host-local", "subnet": "10.1.2.0/24", "dataDir": str(data)},
        **(extra or {}),
    }
    env = {"CNI_COMMAND": command, "CNI_CONTAINERID": cid, "CNI_NETNS": netns, "CNI_IFNAME": ifname, "CNI_PATH": "/"}
    out = io.StringIO()
    rc = skel.run(PLUGIN, env, io.BytesIO(json.dumps(conf).encode()), out, io.StringIO(), platform="linux")
    assert rc == 0, out.getvalue()


def records(store_dir) -> dict:
    folder = store_dir / SANDBOXES
    return {n: sandbox_record((folder / n).read_bytes()) for n in os.listdir(folder)} if folder.exists() else {}


def test_add_records_the_sandbox_and_del_removes_it(tmp_path):
    add(tmp_path, "pod1", GUID)
    add(tmp_path, "pod2", "none")
    d = tmp_path / "net"
    assert records(d) == {
        "10.1.2.2": (Owner("pod1", "eth0"), GUID),
        "10.1.2.3": (Owner("pod2", "eth0"), "none"),
    }
    with open_store(str(d), "linux") as s:
        assert s.sandboxes() == {ip: rec for ip, rec in records(d).items()}
    add(tmp_path, "pod1", GUID, "DEL")
    assert set(records(d)) == {"10.1.2.3"}
    add(tmp_path, "pod2", "none", "GC", extra={"cni.dev/valid-attachments": []})
    assert records(d) == {}


def test_a_retried_add_records_the_sandbox_its_first_add_did_not(tmp_path):
    add(tmp_path, "pod1", GUID)
    os.remove(tmp_path / "net" / SANDBOXES / "10.1.2.2")  # the first ADD was killed before it
    add(tmp_path, "pod1", GUID)
    assert records(tmp_path / "net") == {"10.1.2.2": (Owner("pod1", "eth0"), GUID)}


def test_a_record_whose_reservation_went_another_way_is_pruned_or_ignored(tmp_path):
    """The Go plugin releases a reservation without knowing the record (pruned at our next
    rebuild of the index); an address reserved again for someone else ignores the old record."""
    add(tmp_path, "pod1", GUID)
    d = tmp_path / "net"
    os.remove(d / "10.1.2.2")  # the Go plugin's DEL
    (d / SANDBOXES / ".10.1.2.9.4242.tmp").write_bytes(b"half")  # a writer killed before its rename
    with open_store(str(d), "linux") as s:
        s.rescan()
    assert os.listdir(d / SANDBOXES) == []
    add(tmp_path, "pod1", GUID)
    (d / "10.1.2.7").write_bytes(b"other\r\neth0")  # foreign reservation, an old record beside it
    (d / SANDBOXES / "10.1.2.7").write_bytes(sandbox_content(Owner("pod9", "eth0"), "none"))
    with open_store(str(d), "linux") as s:
        s.rescan()
        assert set(s.sandboxes()) == {"10.1.2.3"}


def test_a_record_is_named_as_its_reservation_on_windows(tmp_path):
    with open_store(str(tmp_path), "win32", GUID) as s:
        assert s.reserve(Owner("pod1", "eth0"), ipaddr.ip_address("2001:db8::5"), 0)
        assert s.reserve(Owner("pod1", "eth0"), ipaddr.ip_address("10.1.2.5"), 1)  # one record per ADD
        assert s.sandboxes() == {"2001:db8::5": (Owner("pod1", "eth0"), GUID)}
    assert os.listdir(tmp_path / SANDBOXES) == ["2001_db8__5"]
    with open_store(str(tmp_path), "win32") as s:
        s.release(ipaddr.ip_address("2001:db8::5"))
    assert os.listdir(tmp_path / SANDBOXES) == []


def test_a_record_that_cannot_be_written_does_not_fail_the_add(tmp_path):
    d = tmp_path / "net"
    d.mkdir(mode=0o755)
    (d / SANDBOXES).write_bytes(b"not a folder")
    add(tmp_path, "pod1", GUID)
    with open_store(str(d), "linux") as s:
        assert s.owned_by(Owner("pod1", "eth0")) and s.sandboxes() == {}
    add(tmp_path, "pod1", GUID, "DEL")  # nor its DEL
    assert DiskStore(str(d), "linux").allocations() == []


def test_readers_without_the_lock_remove_nothing(tmp_path):
    """STATUS and the doctor read the store without its lock: a rebuild of theirs leaves even a
    stale record where it is (the next locked rebuild removes it)."""
    add(tmp_path, "pod1", GUID)
    d = tmp_path / "net"
    os.remove(d / "10.1.2.2")
    reader = DiskStore(str(d), "linux")
    reader.rescan()
    assert reader.allocations() == [] and reader.sandboxes() == {}
    assert os.listdir(d / SANDBOXES) == ["10.1.2.2"]


def test_a_link_in_place_of_the_folder_is_not_followed(tmp_path):
    d, elsewhere = tmp_path / "net", tmp_path / "elsewhere"
    d.mkdir(mode=0o755)
    elsewhere.mkdir()
    (d / SANDBOXES).symlink_to(elsewhere)
    add(tmp_path, "pod1", GUID)
    assert os.listdir(elsewhere) == []
    assert DiskStore(str(d), "linux").owned_by(Owner("pod1", "eth0"))


def test_a_fifo_in_place_of_a_record_is_not_waited_on(tmp_path):
    """The doctor reads records without the store's lock: a FIFO where a record belongs is no
    record, read at once (not opened to block until a writer comes)."""
    add(tmp_path, "pod1", GUID)
    d = tmp_path / "net"
    os.remove(d / SANDBOXES / "10.1.2.2")
    os.mkfifo(d / SANDBOXES / "10.1.2.2")
    assert DiskStore(str(d), "linux").sandboxes() == {}


def test_a_readers_look_at_the_records_holds_the_folder_only_meanwhile(tmp_path):
    """The sweep gathers the doctor's facts every pass: its look at the records leaves nothing open."""
    add(tmp_path, "pod1", GUID)
    store = DiskStore(str(tmp_path / "net"), "linux")
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(5):
        assert set(store.sandboxes()) == {"10.1.2.2"}
    assert len(os.listdir("/proc/self/fd")) == before
