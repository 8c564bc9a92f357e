"""The security findings on a shared node, tried as a local unprivileged user would on a shared node.

The attacker is real: a child process that dropped to ``nobody`` (uid/gid 65534, no groups)
plants links, folders and files in a world-writable folder (``arena``, mode 1777 like /tmp), or
holds a lock; then the plugins run as root, as the kubelet runs them. Each test checks the
plugin's answer and that the victim (a root-only file, or one that must not come to exist) is
untouched. Tests that need the attacker are skipped when the suite does not run as root.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import stat
import time
import uuid
from pathlib import Path

import pytest

from hnsnode import SUBNET, Node, flanneld_node

NOBODY = 65534
root_only = pytest.mark.skipif(os.geteuid() != 0, reason="the attacker drops from root to nobody: needs root")


def as_nobody(action, *args) -> None:
    """Run ``action(*args)`` in a forked child that is ``nobody``; fail the test if it fails."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 1
        try:
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            action(*args)
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, f"the attacker's {action.__name__} failed"


def hold_lock_as_nobody(path: Path) -> int:
    """A nobody process that creates ``path`` and holds flock on it until killed; its pid."""
    ready_r, ready_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            fcntl.flock(fd, fcntl.LOCK_EX)
            os.write(ready_w, b"x")
            time.sleep(600)
        finally:
            os._exit(0)
    os.close(ready_w)
    assert os.read(ready_r, 1) == b"x"
    os.close(ready_r)
    return pid


def _mkdir(path):
    os.mkdir(path, 0o777)
    os.chmod(path, 0o777)


def _symlink(target, link):
    os.symlink(target, link)


def _write(path, text):
    with open(path, "w") as f:
        f.write(text)


# ---------------------------------------------------------------- 1: the node-wide network lock


def _standalone(tmp_path: Path) -> tuple[Node, str]:
    """A standalone win-bridge node whose network name is this test's own (the default lock
    folder, /run/wincni, is the machine's)."""
    node = Node(tmp_path / "node", "win-bridge")
    node.env.pop("WINCNI_LOCK_DIR")  # the default place is what these tests are about
    node.network = "sec" + uuid.uuid4().hex[:12]
    return node, node.network


@pytest.fixture
def cleanup_run_locks():
    names: list[str] = []
    yield names
    for name in names:
        try:
            os.unlink(f"/run/wincni/network-{name}.lock")
        except FileNotFoundError:
            pass


@root_only
def test_a_lock_folder_a_user_created_first_is_not_where_root_locks(tmp_path, arena, cleanup_run_locks):
    """Before: the lock was $TMPDIR/wincni/network-<name>.lock, so a user who made that folder
    first planted a symlink there and root created the file it named (and the user could hold
    the lock forever). Now the lock lives in /run/wincni (root's), whatever TMPDIR says."""
    node, name = _standalone(tmp_path)
    cleanup_run_locks.append(name)
    created = tmp_path / "created-by-root"
    as_nobody(_mkdir, arena / "wincni")
    as_nobody(_symlink, created, arena / "wincni" / f"network-{name}.lock")
    started = time.monotonic()
    run = node.run("ADD", node.conf(network={"subnet": SUBNET}), "pod1", node.sandbox("v2", "pod1"), TMPDIR=str(arena))
    assert run.ok, (run.out, run.stderr)
    assert not created.exists()
    assert time.monotonic() - started < 60
    st = os.lstat("/run/wincni")
    assert stat.S_ISDIR(st.st_mode) and st.st_uid == 0 and not st.st_mode & 0o022


@root_only
def test_a_lock_a_user_holds_in_the_old_place_blocks_nobody(tmp_path, arena, cleanup_run_locks):
    node, name = _standalone(tmp_path)
    cleanup_run_locks.append(name)
    as_nobody(_mkdir, arena / "wincni")
    holder = hold_lock_as_nobody(arena / "wincni" / f"network-{name}.lock")
    try:
        run = node.run(
            "ADD", node.conf(network={"subnet": SUBNET}), "pod1", node.sandbox("v2", "pod1"), TMPDIR=str(arena)
        )
    finally:
        os.kill(holder, signal.SIGKILL)
        os.waitpid(holder, 0)
    assert run.ok, (run.out, run.stderr)


@root_only
def test_a_lock_folder_owned_by_a_user_is_refused_naming_it(tmp_path, arena):
    node, _ = _standalone(tmp_path)
    theirs = arena / "locks"
    as_nobody(_mkdir, theirs)
    run = node.run(
        "ADD", node.conf(network={"subnet": SUBNET}), "pod1", node.sandbox("v2", "pod1"), WINCNI_LOCK_DIR=str(theirs)
    )
    run.failed(5, str(theirs), "owned by uid 65534")
    assert node.hnsctl("network", "list", "-o", "json") == []  # nothing was done under a lock it cannot trust


@root_only
def test_a_link_planted_in_a_writable_lock_folder_of_roots_is_never_followed(tmp_path, arena):
    """A root-owned lock folder left world-writable (made under umask 0): the folder is made
    admin-only again, and the user's link in it is refused, not followed."""
    node, name = _standalone(tmp_path)
    locks = arena / "locks"
    locks.mkdir()
    locks.chmod(0o777)
    created = tmp_path / "created-by-root"
    as_nobody(_symlink, created, locks / f"network-{name}.lock")
    run = node.run(
        "ADD", node.conf(network={"subnet": SUBNET}), "pod1", node.sandbox("v2", "pod1"), WINCNI_LOCK_DIR=str(locks)
    )
    run.failed(5, f"network-{name}.lock", "symbolic link")
    assert not created.exists()
    assert stat.S_IMODE(locks.stat().st_mode) == 0o755


@root_only
def test_host_local_refuses_a_store_folder_a_user_created(tmp_path, arena):
    """host-local's lock (<dataDir>/<network>/lock) follows the same rules."""
    created = tmp_path / "created-by-root"
    as_nobody(_mkdir, arena / "cbr0")
    as_nobody(_symlink, created, arena / "cbr0" / "lock")
    node = Node(tmp_path / "node", "host-local")
    conf = {
        "cniVersion": "1.0.0",
        "name": "cbr0",
        "type": "host-local",
        "ipam": {"type": "host-local", "subnet": SUBNET, "dataDir": str(arena)},
    }
    run = node.run("ADD", conf, "pod1", "/x")
    run.failed(5, str(arena / "cbr0"), "owned by uid 65534")
    assert not created.exists()


def test_a_held_lock_is_code_11_after_the_deadline_naming_it_and_its_holder(tmp_path):
    from plugins.cni.errors import CniError
    from plugins.cni.lock import FileLock

    path = str(tmp_path / "lock")
    with FileLock(path):
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child: a second process waiting for the lock
            code = 3
            try:
                FileLock(path, timeout=0.3).lock()
            except CniError as err:
                ok = err.code == 11 and path in err.msg and f"process {os.getppid()}" in err.details
                code = 0 if ok else 2
            finally:
                os._exit(code)
        started = time.monotonic()
        _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert time.monotonic() - started < 5


# ---------------------------------------------------------------- 2: the simulator on Windows


def test_the_debug_log_start_line_names_the_backend(tmp_path):
    node = Node(tmp_path, "host-local")
    log = tmp_path / "debug.log"
    conf = {
        "cniVersion": "1.0.0",
        "name": "cbr0",
        "type": "host-local",
        "ipam": {"type": "host-local", "subnet": SUBNET, "dataDir": str(tmp_path / "ipam")},
    }
    assert node.run("ADD", conf, "pod1", "/x", WINCNI_LOG_FILE=str(log)).ok
    start = [json.loads(line) for line in log.read_text().splitlines() if '"start"' in line]
    assert start and start[0]["backend"] == "sim"


# ---------------------------------------------------------------- 3: flannel's saved state


def flannel_node(root: Path) -> Node:
    """flannel with the real win-bridge (in-process) on CNI_PATH, on the simulator, with flanneld's lease."""
    node = flanneld_node(root, "flannel").venv_plugins()
    node.env.update(CNI_CONTAINERID="pod1", CNI_NETNS="none")
    return node


pytestmark = pytest.mark.node(build=flannel_node)  # the `node` of the tests below


def _flannel_conf(node: Node, data_dir: Path) -> dict:
    return node.flannel_conf(
        "cni.conf.l2bridge-v1.json", ipam_store=False, dataDir=str(data_dir), netConf=str(node.root / "none.json")
    )


def _saved_config(data_dir: Path, log_file: Path, ipam_dir: Path) -> str:
    return json.dumps(
        {
            "cniVersion": "0.3.1",
            "name": "cbr0",
            "type": "win-bridge",
            "logFile": str(log_file),
            "ipam": {"type": "host-local", "subnet": SUBNET, "dataDir": str(ipam_dir)},
        }
    )


@root_only
def test_flannel_refuses_saved_configs_in_a_data_dir_a_user_can_write(tmp_path, node, arena, victim):
    data_dir = arena / "flannel"
    as_nobody(_mkdir, data_dir)
    as_nobody(_write, data_dir / "pod1", _saved_config(data_dir, victim, tmp_path / "ipam"))
    rc, err = node.flannel("DEL", _flannel_conf(node, data_dir))
    assert (rc, err["code"]) == (1, 5), err
    assert str(data_dir) in err["msg"] and "owned by uid 65534" in err["msg"]
    assert victim.read_text() == "secret\n"


def test_a_saved_configs_log_file_is_never_the_one_written(tmp_path, node, victim):
    """A saved config is the delegate's stdin at DEL, but its logFile is replaced by the
    runtime's (or dropped): whoever wrote the file does not choose what root appends to."""
    data_dir = tmp_path / "flannel"
    data_dir.mkdir(mode=0o700)
    (data_dir / "pod1").write_text(_saved_config(data_dir, victim, tmp_path / "ipam"))
    mine = tmp_path / "runtime.log"
    conf = {**_flannel_conf(node, data_dir), "logFile": str(mine)}
    rc, err = node.flannel("DEL", conf)
    assert rc == 0, err
    assert victim.read_text() == "secret\n"
    assert any(json.loads(line).get("plugin") == "win-bridge" for line in mine.read_text().splitlines())


@root_only
def test_a_saved_config_that_is_a_link_or_another_users_file_is_refused(tmp_path, node, victim):
    data_dir = tmp_path / "flannel"
    data_dir.mkdir(mode=0o700)
    (data_dir / "pod1").symlink_to(victim)
    conf = _flannel_conf(node, data_dir)
    rc, err = node.flannel("DEL", conf)
    assert (rc, err["code"]) == (1, 5) and "refusing the saved delegate config" in err["msg"], err
    assert "symbolic link" in err["msg"]
    (data_dir / "pod1").unlink()
    (data_dir / "pod1").write_text(_saved_config(data_dir, victim, tmp_path / "ipam"))
    os.chown(data_dir / "pod1", NOBODY, NOBODY)
    rc, err = node.flannel("DEL", conf)
    assert (rc, err["code"]) == (1, 5) and "owned by uid 65534" in err["msg"], err
    assert victim.read_text() == "secret\n"


def test_a_delegate_type_that_is_a_drive_relative_path_is_code_7():
    from plugins.cni.errors import CniError
    from plugins.cni.invoke import find_plugin

    for name in ("D:evil", "..", "CON", "nul.exe", "a/b", "a\\b", "x."):
        with pytest.raises(CniError) as err:
            find_plugin(name, ("C:\\k\\cni",), "win32")
        assert err.value.code == 7 and "invalid plugin name" in err.value.msg, name


# ---------------------------------------------------------------- 4: log and journal files


@root_only
def test_the_debug_log_never_follows_a_link_or_appends_to_a_users_file(tmp_path, arena, victim):
    node = Node(tmp_path / "node", "host-local")
    conf = {
        "cniVersion": "1.0.0",
        "name": "cbr0",
        "type": "host-local",
        "ipam": {"type": "host-local", "subnet": SUBNET, "dataDir": str(tmp_path / "ipam")},
    }
    as_nobody(_symlink, victim, arena / "wincni.log")
    run = node.run("ADD", conf, "pod1", "/x", WINCNI_LOG_FILE=str(arena / "wincni.log"))
    assert run.ok, run.out
    assert victim.read_text() == "secret\n"
    assert "debug log disabled" in run.stderr and "symbolic link" in run.stderr
    as_nobody(_write, arena / "theirs.log", "")
    run = node.run("ADD", conf, "pod2", "/x", WINCNI_LOG_FILE=str(arena / "theirs.log"))
    assert run.ok and (arena / "theirs.log").read_text() == ""


@root_only
def test_the_journal_never_follows_a_link_and_is_created_owner_only(tmp_path, arena, victim):
    node = Node(tmp_path / "node", "win-bridge").bridge()
    as_nobody(_symlink, victim, arena / "journal")
    conf = node.conf()
    run = node.run("ADD", conf, "pod1", node.sandbox("v2", "pod1"), LIBHNS_JOURNAL=str(arena / "journal"))
    assert run.ok, run.out
    assert victim.read_text() == "secret\n"
    fresh = tmp_path / "fresh.jsonl"
    assert node.run("DEL", conf, "pod1", "x", LIBHNS_JOURNAL=str(fresh)).ok
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o600


# ---------------------------------------------------------------- 5: unbounded input


def test_stdin_over_the_cap_is_code_6_before_parsing_and_nothing_is_saved(tmp_path, node):
    data_dir = tmp_path / "flannel"
    conf = _flannel_conf(node, data_dir)
    conf["runtimeConfig"] = {"portMappings": [], "padding": "x" * (5 << 20)}
    started = time.monotonic()
    rc, err = node.flannel("ADD", conf)
    assert (rc, err["code"]) == (1, 6) and "4 MiB" in err["msg"]
    assert time.monotonic() - started < 2
    assert not data_dir.exists()


def test_flannel_saves_only_the_runtime_config_keys_the_delegates_read(tmp_path, node):
    data_dir = tmp_path / "flannel"
    conf = _flannel_conf(node, data_dir)
    conf["runtimeConfig"] = {
        "portMappings": [{"hostPort": 80, "containerPort": 8080, "protocol": "tcp"}],
        "unknown": "x" * 1000,
    }
    node.flannel("ADD", conf)  # saved before the delegate runs (which finds no network)
    saved = json.loads((data_dir / "pod1").read_text())
    assert saved["runtimeConfig"] == {"portMappings": conf["runtimeConfig"]["portMappings"]}


@pytest.mark.parametrize(
    "extra, field, cap",
    [
        (
            {"runtimeConfig": {"portMappings": [{"hostPort": 1, "containerPort": 1}] * 1025}},
            "runtimeConfig.portMappings",
            1024,
        ),
        ({"acls": [{"action": "block", "direction": "in"}] * 1001}, "acls", 1000),
        ({"dns": {"nameservers": ["10.0.0.1"] * 65}}, "dns.nameservers", 64),
        ({"runtimeConfig": {"dns": {"searches": ["a"] * 65}}}, "runtimeConfig.dns.searches", 64),
    ],
)
def test_each_list_over_its_cap_is_code_7_naming_field_and_cap(tmp_path, extra, field, cap):
    node = Node(tmp_path, "win-bridge").bridge()
    run = node.run("ADD", node.conf(**extra), "pod1", node.sandbox("v2", "pod1"))
    run.failed(7, field, str(cap))
    assert node.ip_files() == {}


def test_ranges_over_the_cap_are_code_7_and_the_largest_accepted_set_is_fast(tmp_path):
    node = Node(tmp_path, "host-local")
    ranges = [[{"subnet": f"10.{i // 256}.{i % 256}.0/24"}] for i in range(257)]
    conf = {
        "cniVersion": "1.0.0",
        "name": "cbr0",
        "type": "host-local",
        "ipam": {"type": "host-local", "ranges": ranges, "dataDir": str(tmp_path / "ipam")},
    }
    node.run("ADD", conf, "pod1", "/x").failed(7, "ipam.ranges", "256")
    conf["ipam"]["ranges"] = ranges[:256]
    started = time.monotonic()
    run = node.run("ADD", conf, "pod1", "/x")
    assert run.ok, run.out
    assert len(run.out["ips"]) == 256 and time.monotonic() - started < 10


# ---------------------------------------------------------------- 7: names


@pytest.mark.parametrize(
    "name, words",
    [
        ("n" * 300, ("300 characters", "128")),
        ("CON", ("reserved device name",)),
        ("nul.lock", ("reserved device name",)),
        ("cbr0.", ("ends with a dot",)),
    ],
)
def test_network_names_that_cannot_be_file_names_are_code_7(tmp_path, name, words):
    node = Node(tmp_path, "win-overlay")
    node.network = name
    run = node.run(
        "ADD",
        node.conf(network={"subnet": SUBNET}),
        "pod1",
        node.sandbox("v2", "pod1"),
        WINCNI_LOCK_DIR=str(tmp_path / "locks"),
    )
    run.failed(7, "network name", *words)
    assert "Traceback" not in run.stderr


@pytest.mark.parametrize(
    "cid, netns, words",
    [
        ("c" * 101, "none", ("CNI_CONTAINERID", "100")),
        ("AUX", "none", ("reserved device name",)),
        ("pod1", "container:COM1", ("sandbox ID", "reserved device name")),
        ("pod1", "container:" + "s" * 200, ("sandbox ID", "200 characters")),
    ],
)
def test_container_and_sandbox_ids_that_cannot_be_file_names_are_code_4(tmp_path, node, cid, netns, words):
    data_dir = tmp_path / "flannel"
    rc, err = node.flannel("ADD", _flannel_conf(node, data_dir), CNI_CONTAINERID=cid, CNI_NETNS=netns)
    assert (rc, err["code"]) == (1, 4), err
    assert all(w in err["msg"] + err.get("details", "") for w in words), err
    assert not data_dir.exists()
