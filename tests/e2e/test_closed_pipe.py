"""A closed stdout, as ``wincni doctor -o json | head -1`` leaves it: every command (the plugins,
``hnsctl``, ``wincni``) ends quietly with 141 (128 + SIGPIPE, what a shell reports for a writer
whose reader went away): no traceback, no message on stderr.

Each command is a real process whose stdout is a pipe whose reader (a real ``head -c 0``
process) has already exited, so its first write fails with EPIPE every time, however little it
writes (a pipe with a live reader would buffer a small output and hide the bug)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from hnsnode import VENV_BIN, Node, flanneld_node
from plugins import registry

CLOSED = 141


def closed_run(node: Node, argv: list[str], stdin: bytes = b"", **env: str) -> subprocess.CompletedProcess:
    read, write = os.pipe()
    reader = subprocess.Popen(["head", "-c", "0"], stdin=read)
    os.close(read)
    reader.wait(timeout=30)  # gone: the pipe has no reader left
    try:
        return subprocess.run(
            [str(VENV_BIN / argv[0]), *argv[1:]],
            input=stdin,
            stdout=write,
            stderr=subprocess.PIPE,
            env={**node.env, **env},
            timeout=120,
        )
    finally:
        os.close(write)


def configured_node(root: Path) -> Node:
    """flanneld's win-bridge node with win-bridge's config in the CNI config dir (what doctor reads)."""
    node = flanneld_node(root)
    node.conf_dir.mkdir()
    (node.conf_dir / "10-bridge.conf").write_text(json.dumps(node.conf()))
    return node


pytestmark = pytest.mark.node(build=configured_node)


def commands(node: Node) -> dict[str, tuple[list[str], bytes, dict]]:
    """name -> (argv, stdin, env): each writes its stdout (a result, a table, JSON)."""
    conf = node.conf()
    ipam = json.dumps({"cniVersion": "1.0.0", "name": "cbr0", "ipam": conf["ipam"]}).encode()
    cni = {"CNI_CONTAINERID": "pod1", "CNI_NETNS": "none", "CNI_IFNAME": "eth0"}
    return {
        "win-bridge VERSION": (["win-bridge"], b"{}", {"CNI_COMMAND": "VERSION"}),
        "win-overlay error": (["win-overlay"], b"{", {"CNI_COMMAND": "ADD", **cni}),
        "host-local ADD": (["host-local"], ipam, {"CNI_COMMAND": "ADD", **cni}),
        "flannel VERSION": (["flannel"], json.dumps(conf).encode(), {"CNI_COMMAND": "VERSION"}),
        "hnsctl network create": (["hnsctl", "network", "create", "other", "--subnet", "10.9.0.0/24"], b"", {}),
        "hnsctl dump json": (["hnsctl", "dump", "-o", "json"], b"", {}),
        "wincni doctor json": (["wincni", "doctor", "--cni-conf", str(node.conf_dir), "-o", "json"], b"", {}),
        "wincni doctor table": (["wincni", "doctor", "--cni-conf", str(node.conf_dir)], b"", {}),
        "wincni install dry-run json": (["wincni", *node.install_argv("--dry-run", "--from", str(node.root))], b"", {}),
        "wincni reclaim": (["wincni", "reclaim", "--cni-conf", str(node.conf_dir), "--dry-run"], b"", {}),
        "wincni reclaim json": (["wincni", "reclaim", "--cni-conf", str(node.conf_dir), "-o", "json"], b"", {}),
    }


NAMES = [
    "win-bridge VERSION",
    "win-overlay error",
    "host-local ADD",
    "flannel VERSION",
    "hnsctl network create",
    "hnsctl dump json",
    "wincni doctor json",
    "wincni doctor table",
    "wincni install dry-run json",
    "wincni reclaim",
    "wincni reclaim json",
]


@pytest.mark.parametrize("name", NAMES)
def test_a_closed_stdout_ends_the_command_quietly(node: Node, name: str) -> None:
    argv, stdin, env = commands(node)[name]
    proc = closed_run(node, argv, stdin, **env)
    assert (proc.returncode, proc.stderr.decode()) == (CLOSED, "")


def test_every_command_is_covered(node: Node) -> None:
    assert list(commands(node)) == NAMES
    assert {argv[0] for argv, _, _ in commands(node).values()} == set(registry.COMMANDS)


@pytest.mark.parametrize("name", ["win-bridge VERSION", "win-overlay error", "hnsctl dump json", "wincni doctor json"])
def test_a_stdout_that_fails_otherwise_is_an_error_said_in_one_line(node: Node, name: str) -> None:
    """``> /dev/full`` (a full disk) is a real failure, never taken for a closed pipe: status 1 and
    one line on stderr naming the program and why, no traceback."""
    argv, stdin, env = commands(node)[name]
    with open("/dev/full", "w") as full:
        proc = subprocess.run(
            [str(VENV_BIN / argv[0]), *argv[1:]],
            input=stdin,
            stdout=full,
            stderr=subprocess.PIPE,
            env={**node.env, **env},
            timeout=120,
        )
    assert (proc.returncode, proc.stderr.decode()) == (
        1,
        f"{argv[0]}: cannot write to stdout: No space left on device\n",
    )
