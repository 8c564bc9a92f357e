"""Saved delegate configs: the reference's file, written safely, plus who uses it (for DEL and GC)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time

import pytest

from plugins.cni.errors import IO_FAILURE, TRY_AGAIN_LATER, CniError
from plugins.cni.ownership import IN_FLIGHT_SECONDS
from plugins.flannel.store import MARKERS, Attachment, Store

PAUSE, APP = Attachment("pause1", "eth0"), Attachment("app1", "eth0")
LONG_AGO = time.time() - 2 * IN_FLIGHT_SECONDS


def killed_mid_write(path: str, when: float = LONG_AGO) -> None:
    """What a writer killed before its rename leaves; written ``when`` (whoever holds its PID now)."""
    with open(path, "wb") as f:
        f.write(b"{")
    os.utime(path, (when, when))


def dead_pid() -> int:
    """The PID of a process that has exited (and was reaped)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


@pytest.fixture
def store(tmp_path) -> Store:
    return Store(str(tmp_path / "var" / "lib" / "cni" / "flannel"))


def test_save_writes_exactly_the_config_private_and_nothing_else(store):
    store.save("pause1", b'{"type":"win-bridge"}', PAUSE)
    with open(store.path("pause1"), "rb") as f:
        assert f.read() == b'{"type":"win-bridge"}'
    assert stat.S_IMODE(os.stat(store.path("pause1")).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(store.dir).st_mode) == 0o700
    assert sorted(os.listdir(store.dir)) == [MARKERS, "pause1"]  # no temp file left behind
    assert store.keys() == ["pause1"] and store.owners("pause1") == {PAUSE}


def test_a_second_save_replaces_the_content(store):
    store.save("pause1", b"old", PAUSE)
    store.save("pause1", b"new", APP)
    assert store.load("pause1") == b"new" and store.owners("pause1") == {PAUSE, APP}


def test_load_of_an_unknown_sandbox_is_none(store):
    assert store.load("nope") is None and store.keys() == [] and store.owners("nope") == set()


def test_the_config_outlives_all_but_its_last_attachment(store):
    """dockershim: the pause container and its app containers share one saved config."""
    store.save("pause1", b"{}", PAUSE)
    store.save("pause1", b"{}", APP)
    store.release("pause1", APP)
    assert store.load("pause1") == b"{}" and store.owners("pause1") == {PAUSE}
    store.release("pause1", PAUSE)
    assert store.load("pause1") is None and store.owners("pause1") == set()


def test_a_file_the_go_plugin_wrote_is_released_by_its_del(store):
    os.makedirs(store.dir)
    with open(store.path("pause1"), "wb") as f:
        f.write(b"{}")
    store.release("pause1", PAUSE)
    assert store.load("pause1") is None


@pytest.mark.parametrize(
    "drop", [lambda s: s.release("pause1", PAUSE), lambda s: s.prune("pause1", set())], ids=["release", "prune"]
)
def test_dropping_a_config_removes_what_a_killed_save_left(store, drop):
    store.save("pause1", b"{}", PAUSE)
    store.save("pause1.b", b"{}", APP)
    leftovers = [".pause1.4242.tmp", ".pause1.b.4243.tmp", ".pause1.x.tmp"]
    for name in leftovers:
        killed_mid_write(os.path.join(store.dir, name))
    drop(store)
    assert sorted(os.listdir(store.dir)) == [MARKERS] + sorted(["pause1.b"] + leftovers[1:])


def test_owners_of_one_sandbox_are_not_confused_with_anothers(store):
    store.save("pause1", b"{}", PAUSE)
    store.save("pause10", b"{}", Attachment("pause10", "eth0"))
    store.release("pause1", PAUSE)
    assert store.keys() == ["pause10"]


def test_interface_names_with_awkward_characters_round_trip(store):
    odd = Attachment("c1", "e@th*0%?<")
    store.save("c1", b"{}", odd)
    assert store.owners("c1") == {odd}
    store.release("c1", odd)
    assert store.keys() == []


def test_keys_skip_dot_names_and_directories(store):
    store.save("c1", b"{}", Attachment("c1", "eth0"))
    os.makedirs(os.path.join(store.dir, "somedir"))
    open(os.path.join(store.dir, ".c2.123.tmp"), "wb").close()
    assert store.keys() == ["c1"]


def test_prune_keeps_valid_attachments_and_drops_the_rest(store):
    store.save("pause1", b"{}", PAUSE)
    store.save("pause1", b"{}", APP)
    assert store.prune("pause1", {APP}) is False
    assert store.owners("pause1") == {APP}
    assert store.prune("pause1", {Attachment("app1", "eth1")}) is True  # same container, other interface
    assert store.load("pause1") is None and store.owners("pause1") == set()


def test_prune_of_a_go_written_file_goes_by_its_sandbox_id(store):
    os.makedirs(store.dir)
    for key in ("c1", "c2"):
        with open(store.path(key), "wb") as f:
            f.write(b"{}")
    assert store.prune("c1", {Attachment("c1", "eth0")}) is False
    assert store.prune("c2", {Attachment("c1", "eth0")}) is True
    assert store.keys() == ["c1"]


def test_an_empty_valid_list_releases_everything(store):
    store.save("c1", b"{}", Attachment("c1", "eth0"))
    assert store.prune("c1", set()) is True and store.keys() == []


def test_a_failed_write_leaves_the_old_config_and_no_temp_file(store, monkeypatch):
    store.save("c1", b"old", Attachment("c1", "eth0"))

    def broken_fsync(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", broken_fsync)
    with pytest.raises(CniError) as err:
        store.save("c1", b"new", Attachment("c1", "eth0"))
    assert (
        err.value.code == IO_FAILURE
        and err.value.msg == f"cannot save the delegate config as {store.path('c1')}: No space left on device"
    )
    assert store.load("c1") == b"old"
    assert sorted(os.listdir(store.dir)) == [MARKERS, "c1"]


def test_an_unusable_data_dir_is_an_io_error_naming_it(tmp_path):
    (tmp_path / "flannel").write_text("a file, not a directory")
    store = Store(str(tmp_path / "flannel"))
    with pytest.raises(CniError) as err:
        store.save("c1", b"{}", Attachment("c1", "eth0"))
    assert (
        err.value.code == IO_FAILURE and str(tmp_path / "flannel") in err.value.msg and "dataDir" in err.value.details
    )
    with pytest.raises(CniError) as err:
        store.load("c1")
    assert err.value.code == IO_FAILURE


def test_gc_drops_half_saved_configs_of_sandboxes_no_longer_listed(tmp_path):
    """An ADD killed between writing ``.<key>.<pid>.tmp`` and renaming it leaves no config, so
    only the runtime's list of live sandboxes can tell its leftover from a save in progress."""
    store = Store(str(tmp_path / "data"))
    store.save("keep", b"{}", Attachment("keep", "eth0"))
    for name in (".gone.123.tmp", ".live.456.tmp", ".keep.789.tmp", ".not-ours.tmp", ".gone.x.tmp"):
        killed_mid_write(str(tmp_path / "data" / name))
    store.drop_orphans({"live"} | set(store.keys()))
    assert sorted(p.name for p in (tmp_path / "data").iterdir() if p.is_file()) == [
        ".gone.x.tmp",
        ".keep.789.tmp",
        ".live.456.tmp",
        ".not-ours.tmp",
        "keep",
    ]


def test_gc_and_del_leave_a_temporary_file_its_live_writer_may_still_be_writing(tmp_path):
    """The runtime's list says nothing of an ADD that began after it was taken: whether the
    temporary file's writer runs, and its age (a PID is reused), decide."""
    store = Store(str(tmp_path / "data"))
    store.save("pause1", b"{}", PAUSE)
    now, me, dead = time.time(), os.getpid(), dead_pid()
    files = {
        f".new.{me}.tmp": now,  # an ADD saving right now: kept
        f".pause1.{me}.tmp": now,  # a second attachment's save of a sandbox being dropped: kept
        f".old.{me}.tmp": LONG_AGO,  # older than any ADD: the PID is someone else's now
        f".dead.{dead}.tmp": now,  # its writer was killed
    }
    for name, when in files.items():
        killed_mid_write(str(tmp_path / "data" / name), when)
    store.release("pause1", PAUSE)
    store.drop_orphans(set())
    assert sorted(p.name for p in (tmp_path / "data").iterdir() if p.is_file()) == sorted(
        [f".new.{me}.tmp", f".pause1.{me}.tmp"]
    )


def vanishing_rename(times: int):
    """The rename of a save (relative to the held folder) whose source is removed first
    ``times`` times: a GC that ignores the rule."""
    real = os.rename

    def rename(src, dst, **kw):
        nonlocal times
        if times:
            times -= 1
            os.remove(src, dir_fd=kw.get("src_dir_fd"))
        return real(src, dst, **kw)

    return rename


def test_a_save_whose_temporary_file_vanished_is_written_again(store, monkeypatch):
    monkeypatch.setattr(os, "rename", vanishing_rename(2))
    store.save("c1", b"{}", Attachment("c1", "eth0"))
    assert store.load("c1") == b"{}" and store.owners("c1") == {Attachment("c1", "eth0")}


def test_a_save_whose_temporary_file_keeps_vanishing_is_a_clean_try_again_later(store, monkeypatch):
    monkeypatch.setattr(os, "rename", vanishing_rename(99))
    with pytest.raises(CniError) as err:
        store.save("c1", b"{}", Attachment("c1", "eth0"))
    tmp = os.path.join(store.dir, f".c1.{os.getpid()}.tmp")
    assert err.value.code == TRY_AGAIN_LATER
    assert (
        err.value.msg
        == f"cannot save the delegate config as {store.path('c1')}: {tmp} vanished while it was written (3 tries)"
    )
    assert sorted(os.listdir(store.dir)) == [MARKERS]


def finishes(call, *args):
    """``call(*args)``'s outcome (its value, or the exception it raised), failing the test when it
    is still running after 10 s (a FIFO opened for reading waits for a writer for ever)."""
    import threading

    done: list = []

    def run():
        try:
            done.append(call(*args))
        except CniError as exc:  # the outcome under test
            done.append(exc)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(10)
    assert done, f"{call.__name__} hung"
    return done[0]


def test_a_fifo_at_a_saved_config_is_refused_at_once(store):
    store.save("c1", b"{}", Attachment("c1", "eth0"))
    os.remove(store.path("c1"))
    os.mkfifo(store.path("c1"), 0o600)
    err = finishes(store.load, "c1")
    assert isinstance(err, CniError) and err.code == IO_FAILURE and "not a regular file" in err.msg
    assert store.keys() == []


@pytest.mark.parametrize("where", ["config", "temporary", "marker"])
def test_a_save_never_writes_through_a_link(store, tmp_path, where):
    victim = tmp_path / "victim"
    victim.write_bytes(b"secret")
    store.save("c1", b"old", Attachment("other", "eth0"))
    name = {
        "config": "c1",
        "temporary": f".c1.{os.getpid()}.tmp",
        "marker": os.path.join(MARKERS, "c1@c1@eth0"),
    }[where]
    target = victim if where != "marker" else tmp_path / "absent"
    if os.path.lexists(os.path.join(store.dir, name)):
        os.remove(os.path.join(store.dir, name))
    os.symlink(target, os.path.join(store.dir, name))
    store.save("c1", b"new", Attachment("c1", "eth0"))
    assert victim.read_bytes() == b"secret" and not (tmp_path / "absent").exists()
    assert store.load("c1") == b"new"


def test_a_link_at_a_saved_config_is_no_config(store, tmp_path):
    (tmp_path / "elsewhere").write_bytes(b'{"type":"win-bridge"}')
    os.makedirs(store.dir, mode=0o700)
    os.symlink(tmp_path / "elsewhere", store.path("c1"))
    assert store.keys() == []
    err = finishes(store.load, "c1")
    assert isinstance(err, CniError) and err.code == IO_FAILURE and "link" in err.msg
