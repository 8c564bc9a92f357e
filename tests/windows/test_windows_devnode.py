"""``make node`` / ``make node-stop`` (tests/windows/devnode.py): the node comes up, a command it
prints works as printed, and stopping it leaves nothing running, in its namespace or named in its
state file."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
from pathlib import Path

from devnode import START_TIMEOUT_S, alive, processes_in, session_of, stop

DEVNODE = Path(__file__).resolve().parent / "devnode.py"


def devnode(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(DEVNODE), *args], capture_output=True, text=True, timeout=START_TIMEOUT_S + 60
    )


def test_make_node_runs_a_node_its_commands_reach_and_node_stop_leaves_nothing(
    tmp_path: Path, package_zip: Path
) -> None:
    root = tmp_path / "node"
    started = devnode("start", "--root", str(root), "--zip", str(package_zip))
    try:
        assert started.returncode == 0, started.stdout + started.stderr
        state = json.loads((root / "state.json").read_text())
        assert processes_in(state["netns"]) and alive(state["pid"]), state
        [line] = [line for line in started.stdout.splitlines() if "hnsctl.exe" in line and "network list" in line]
        listed = subprocess.run(shlex.split(line), capture_output=True, text=True, timeout=300)
        assert listed.returncode == 0 and "flannel.4096" in listed.stdout, (line, listed.stdout, listed.stderr)
        assert devnode("start", "--root", str(root), "--zip", str(package_zip)).returncode == 1  # one node a root
    finally:
        stopped = devnode("stop", "--root", str(root))
    assert stopped.returncode == 0 and "killed" not in stopped.stdout, stopped.stdout + stopped.stderr
    assert not processes_in(state["netns"]), "a process outlived the node in its namespace"
    assert not [pid for pid in [state["pid"], *state["pids"]] if alive(pid)]
    assert not session_of(state["pid"]), "a process of the daemon's session outlived node-stop"
    assert not (root / "state.json").exists() and not (root / "sh").exists()
    assert "no node is up" in devnode("stop", "--root", str(root)).stdout
    assert "make node: " + str(package_zip) in started.stdout and "(build " in started.stdout


def test_node_stop_returns_once_what_outlived_the_daemon_is_gone(tmp_path: Path) -> None:
    """A daemon that ends on SIGTERM leaving a child that ignores it (as a Wine process may):
    stop kills the child and returns only once it is gone."""
    script = (
        "import signal, subprocess, sys, time\n"
        "subprocess.Popen(['sh', '-c', 'trap \"\" TERM; while :; do sleep 1; done'])\n"
        "signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))\n"
        "print('ready', flush=True)\n"
        "time.sleep(600)\n"
    )
    daemon = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, start_new_session=True)
    try:
        assert daemon.stdout.readline() == b"ready\n"
        assert len(session_of(daemon.pid)) >= 2  # the daemon, its shell, and now and then the shell's sleep
        root = tmp_path / "node"
        root.mkdir()
        (root / "state.json").write_text(json.dumps({"pid": daemon.pid, "netns": 0, "pids": []}))
        assert stop(root) == 0
        assert not session_of(daemon.pid), "stop returned while a process of the node still ran"
    finally:
        for pid in session_of(daemon.pid):
            os.kill(pid, signal.SIGKILL)
        daemon.wait()
