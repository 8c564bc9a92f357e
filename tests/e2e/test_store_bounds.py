"""host-local's store as a node's leftovers and an administrator's plantings leave it: a FIFO, a
link or a device where a store file belongs, a lock that is no file, a reservation full of NULs.

Every command runs as a process with a deadline (a FIFO opened for reading waits for a writer for
ever; one opened for writing, for a reader) and a cap on its memory (``/dev/zero`` never ends), so
a hang or a runaway read fails the test instead of the machine. Each answers at once: a CNI error
naming the file, or a warning, never a traceback, and nothing is written through a link.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import time
from pathlib import Path

import pytest

from hnsnode import VENV_BIN, Node
from plugins.ipam_host_local.index import INDEX_NAME

#: Far above any command's own need, far below what reading /dev/zero until it fails would take.
MEMORY = 1 << 30
DEADLINE = 15
NULS = b"\0" * 16


@pytest.fixture
def node(tmp_path: Path) -> Node:
    node = Node(tmp_path, "win-overlay").overlay()
    node.write_cni_conf(node.conf(), "10-overlay.conf")
    return node


def _capped() -> None:  # pragma: no cover - runs in the child
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))


def run(argv: list[str], env: dict, stdin: bytes = b"") -> subprocess.CompletedProcess:
    """``argv`` as a process under the deadline and memory cap; a hang fails the test."""
    try:
        return subprocess.run(
            argv, input=stdin, env=env, capture_output=True, timeout=DEADLINE, preexec_fn=_capped, check=False
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{argv[0]} hung (still running after {DEADLINE} s)")


def host_local(node: Node, command: str, cid: str) -> subprocess.CompletedProcess:
    env = {**node.env, "CNI_COMMAND": command, "CNI_CONTAINERID": cid, "CNI_NETNS": "ns", "CNI_IFNAME": "eth0"}
    return run([str(VENV_BIN / "host-local")], env, json.dumps(node.conf("1.1.0")).encode())


def wincni(node: Node, *args: str) -> subprocess.CompletedProcess:
    return run(
        [str(VENV_BIN / "wincni"), *args, "--cni-conf", str(node.conf_dir / "10-overlay.conf")],
        node.env,
    )


def doctor(node: Node) -> subprocess.CompletedProcess:
    return run([str(VENV_BIN / "wincni"), "doctor", *node.node_flags(), "-o", "json"], node.env)


def store(node: Node) -> Path:
    return node.ipam_dir / node.network


def added(node: Node, cid: str) -> str:
    proc = host_local(node, "ADD", cid)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout)["ips"][0]["address"].split("/")[0]


def no_traceback(proc: subprocess.CompletedProcess) -> None:
    assert b"Traceback" not in proc.stderr and b"\0" not in proc.stdout + proc.stderr, proc.stderr.decode()


def cni_error(proc: subprocess.CompletedProcess, code: int, *words: str) -> None:
    no_traceback(proc)
    err = json.loads(proc.stdout)
    assert proc.returncode == 1 and err["code"] == code, err
    for word in words:
        assert word in err["msg"] + err.get("details", ""), err


def aged(path: Path, seconds: float = 3600) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then), follow_symlinks=False)


def fifo(path: Path) -> None:
    if path.exists() or path.is_symlink():
        path.unlink()
    os.mkfifo(path, 0o600)


def link(path: Path, target: Path) -> None:
    if path.exists() or path.is_symlink():
        path.unlink()
    path.symlink_to(target)


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    """A root-only file outside the store that nothing may write; ``victim.parent / 'absent'``
    must never come to exist."""
    path = tmp_path / "victim"
    path.write_bytes(b"secret")
    path.chmod(0o600)
    return path


def untouched(victim: Path) -> None:
    assert victim.read_bytes() == b"secret" and not (victim.parent / "absent").exists()


# ---------------------------------------------------------------- .wincni-index


@pytest.mark.parametrize("command", ["ADD", "DEL", "STATUS", "doctor", "reclaim"])
def test_a_fifo_at_the_index_is_never_waited_on(node: Node, command: str) -> None:
    added(node, "pod1")
    fifo(store(node) / INDEX_NAME)
    if command == "doctor":
        proc = doctor(node)
        no_traceback(proc)
        assert json.loads(proc.stdout)["checks"], proc.stdout
    elif command == "reclaim":
        proc = wincni(node, "reclaim")
        no_traceback(proc)
        assert proc.returncode == 0, proc.stderr
    else:
        proc = host_local(node, command, "pod2" if command == "ADD" else "pod1")
        no_traceback(proc)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    if command in ("ADD", "DEL"):  # named, then written anew, by rename, over the FIFO
        assert f"{store(node) / INDEX_NAME} is a FIFO, not a regular file: not read".encode() in proc.stderr
        assert (store(node) / INDEX_NAME).is_file()


@pytest.mark.parametrize("command", ["ADD", "DEL", "doctor", "reclaim"])
@pytest.mark.parametrize("target", ["victim", "absent"])
def test_a_link_at_the_index_is_never_written_through(node: Node, victim: Path, command: str, target: str) -> None:
    added(node, "pod1")
    link(store(node) / INDEX_NAME, victim.parent / target)
    if command == "doctor":
        no_traceback(doctor(node))
    elif command == "reclaim":
        no_traceback(wincni(node, "reclaim"))
    else:
        proc = host_local(node, command, "pod2" if command == "ADD" else "pod1")
        no_traceback(proc)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    untouched(victim)


@pytest.mark.parametrize("how", ["device", "link"])
def test_an_endless_index_is_not_read_to_the_end(node: Node, how: str) -> None:
    added(node, "pod1")
    index = store(node) / INDEX_NAME
    index.unlink()
    if how == "link":
        index.symlink_to("/dev/zero")
    else:
        os.mknod(index, 0o600 | 0o020000, os.makedev(1, 5))  # /dev/zero's own node
    for proc in (host_local(node, "ADD", "pod2"), host_local(node, "DEL", "pod1"), doctor(node)):
        no_traceback(proc)
        assert b"MemoryError" not in proc.stderr
    assert json.loads(host_local(node, "ADD", "pod3").stdout)["ips"]


# ---------------------------------------------------------------- reservations and last_reserved_ip


def test_a_fifo_at_the_next_free_address_is_skipped_at_once(node: Node) -> None:
    first = added(node, "pod1")
    nxt = first.rsplit(".", 1)[0] + "." + str(int(first.rsplit(".", 1)[1]) + 1)
    fifo(store(node) / nxt)
    got = added(node, "pod2")
    assert got not in (first, nxt)
    assert (store(node) / nxt).is_fifo()


def test_a_fifo_at_last_reserved_ip_is_never_waited_on(node: Node) -> None:
    added(node, "pod1")
    fifo(store(node) / "last_reserved_ip.0")
    proc = host_local(node, "ADD", "pod2")
    assert proc.returncode == 0 and b"last_reserved_ip.0 is a FIFO, not a regular file: not read" in proc.stderr
    assert (store(node) / "last_reserved_ip.0").is_file()


@pytest.mark.parametrize("target", ["victim", "absent"])
def test_links_at_last_reserved_ip_and_the_next_free_address_are_never_written_through(
    node: Node, victim: Path, target: str
) -> None:
    first = added(node, "pod1")
    nxt = first.rsplit(".", 1)[0] + "." + str(int(first.rsplit(".", 1)[1]) + 1)
    link(store(node) / "last_reserved_ip.0", victim.parent / target)
    link(store(node) / nxt, victim.parent / target)
    got = added(node, "pod2")
    assert got not in (first, nxt)
    untouched(victim)
    assert (store(node) / nxt).is_symlink()


def test_an_empty_file_behind_a_link_at_the_next_address_is_not_taken_over(node: Node, tmp_path: Path) -> None:
    """An empty reservation is a killed writer's, taken over by the next ADD: never through a link."""
    first = added(node, "pod1")
    nxt = first.rsplit(".", 1)[0] + "." + str(int(first.rsplit(".", 1)[1]) + 1)
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    link(store(node) / nxt, empty)
    assert added(node, "pod2") != nxt
    assert empty.read_bytes() == b""


# ---------------------------------------------------------------- the lock


@pytest.mark.parametrize("how", ["fifo", "link"])
def test_a_lock_that_is_no_regular_file_is_refused_in_one_line(node: Node, victim: Path, how: str) -> None:
    added(node, "pod1")
    lock = store(node) / "lock"
    fifo(lock) if how == "fifo" else link(lock, victim)
    cni_error(host_local(node, "ADD", "pod2"), 5, str(lock))
    cni_error(host_local(node, "DEL", "pod1"), 5, str(lock))
    proc = doctor(node)
    no_traceback(proc)
    store_check = {c["id"]: c for c in json.loads(proc.stdout)["checks"]}["ipam-store"]
    assert store_check["status"] == "fail" and str(lock) in store_check["message"], store_check
    proc = wincni(node, "reclaim")
    no_traceback(proc)
    assert proc.returncode == 1 and str(lock).encode() in proc.stderr, proc.stderr
    untouched(victim)


# ---------------------------------------------------------------- a node's leftovers


def nul_reservation(node: Node) -> str:
    """Pod 1's address, and beside it a 16-byte NUL-filled reservation an hour old."""
    first = added(node, "pod1")
    leftover = first.rsplit(".", 1)[0] + ".200"
    (store(node) / leftover).write_bytes(NULS)
    aged(store(node) / leftover)
    return leftover


def test_reclaim_frees_a_nul_filled_reservation_past_the_in_flight_age_naming_it(node: Node) -> None:
    leftover = nul_reservation(node)
    proc = wincni(node, "reclaim")
    no_traceback(proc)
    assert proc.returncode == 0, proc.stderr
    assert f"released {leftover}".encode() in proc.stdout, proc.stdout
    assert b"malformed" in proc.stderr and leftover.encode() in proc.stderr, proc.stderr
    assert not (store(node) / leftover).exists()


def test_a_young_nul_filled_reservation_is_kept_as_an_add_in_flight(node: Node) -> None:
    leftover = nul_reservation(node)
    os.utime(store(node) / leftover)
    proc = wincni(node, "reclaim")
    no_traceback(proc)
    assert proc.returncode == 0 and b"0 reservation(s) released" in proc.stdout, proc.stdout
    assert (store(node) / leftover).read_bytes() == NULS


def test_the_sweep_keeps_running_over_a_nul_filled_reservation(node: Node) -> None:
    leftover = nul_reservation(node)
    argv = [str(VENV_BIN / "wincni"), "reclaim", "--every", "1", "--cni-conf", str(node.conf_dir / "10-overlay.conf")]
    sweep = subprocess.Popen(argv, env=node.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=_capped)
    try:
        deadline = time.monotonic() + DEADLINE
        while (store(node) / leftover).exists() and time.monotonic() < deadline and sweep.poll() is None:
            time.sleep(0.2)
        opened = len(os.listdir(f"/proc/{sweep.pid}/fd"))
        time.sleep(2.5)  # two passes more, each reading and locking the store
        assert sweep.poll() is None, "the sweep exited"
        assert len(os.listdir(f"/proc/{sweep.pid}/fd")) == opened  # nothing held from pass to pass
    finally:
        sweep.kill()
        out, err = sweep.communicate(timeout=DEADLINE)
    assert b"Traceback" not in err and b"\0" not in err, err
    assert not (store(node) / leftover).exists(), err


def test_the_doctor_names_a_nul_filled_reservation_readably(node: Node) -> None:
    leftover = nul_reservation(node)
    proc = doctor(node)
    no_traceback(proc)
    assert b"malformed" in proc.stderr and leftover.encode() in proc.stderr, proc.stderr
    found = {c["id"]: c for c in json.loads(proc.stdout)["checks"]}
    assert leftover in found["ipam-store"]["message"], found["ipam-store"]


def test_the_doctors_table_shows_no_raw_nul(node: Node) -> None:
    """JSON escapes a NUL by itself; the table is text a terminal shows as it is."""
    leftover = nul_reservation(node)
    proc = run([str(VENV_BIN / "wincni"), "doctor", *node.node_flags()], node.env)
    no_traceback(proc)
    assert f"{leftover} reserved for ?".encode() in proc.stdout, proc.stdout
    assert b"16 NUL bytes" in proc.stderr, proc.stderr


def test_del_and_gc_go_on_over_garbage_reservations(node: Node) -> None:
    added(node, "pod1")
    (store(node) / "10.244.4.201").write_bytes(os.urandom(64) + b"\0")
    (store(node) / "10.244.4.202").write_bytes(b"x" * 100_000)
    for cid in ("pod1", "pod2"):
        proc = host_local(node, "DEL", cid)
        no_traceback(proc)
        assert proc.returncode == 0, proc.stdout + proc.stderr
