"""``make node`` / ``make node-stop`` (tests/windows/devnode.py): the node comes up, a command it
prints works as printed, and stopping it leaves nothing running, in its namespace or named in its
state file."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

from devnode import START_TIMEOUT_S, alive, processes_in

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
    assert not (root / "state.json").exists() and not (root / "sh").exists()
    assert "no node is up" in devnode("stop", "--root", str(root)).stdout
