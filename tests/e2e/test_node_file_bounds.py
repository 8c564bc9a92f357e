"""The files the doctor, ``wincni bundle`` and ``wincni metrics`` read of a node, and flannel's own
reads of them, given what a local user or a node's leftovers could put there: flanneld's lease
(the config's ``subnetFile``), its ``netConf``, and install's manifest ``<bin>/.wincni-install.json``.

Each gets a FIFO (a plain open waits for a writer forever: the in-process STATUS hung the doctor,
``bundle`` and ``metrics``), a link that ``nobody`` owns to a root-only file holding a secret,
``/dev/zero`` (an administrator's link to it: endless), and a file far over its cap. Every command
runs as a process under ``test_store_bounds``' deadline and memory cap: a clear error or warning,
never a traceback, a hang or the secret.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from hnsnode import VENV_BIN, Node, flanneld_node
from test_security import NOBODY, root_only
from test_store_bounds import fifo, link, no_traceback, run
from tools.wincni.node.installed import MANIFEST

SECRET = b"SECRET_TOKEN"
PLANTS = ["fifo", "users-link", "dev-zero", "huge"]


@pytest.fixture
def node(tmp_path: Path) -> Node:
    node = flanneld_node(tmp_path)
    node.write_cni_conf(node.flannel_files("bridge"))
    return node


def plant(node: Node, path: Path, how: str) -> None:
    if how == "fifo":
        fifo(path)
    elif how == "users-link":
        secret = node.root / "secret"
        secret.write_bytes(SECRET)
        secret.chmod(0o600)
        link(path, secret)
        os.lchown(path, NOBODY, NOBODY)
    elif how == "dev-zero":
        link(path, Path("/dev/zero"))
    else:
        path.write_bytes(b"#" * (8 << 20))


def target(node: Node, what: str) -> Path:
    return {"subnetFile": node.subnet_env, "netConf": node.net_conf, "manifest": node.bin / MANIFEST}[what]


def wincni(node: Node, command: str) -> subprocess.CompletedProcess:
    extra = {
        "doctor": ["-o", "json"],
        "bundle": ["--out", str(node.root / "out" / "b.tar.gz")],
        "metrics": ["--textfile", str(node.root / "out")],
    }[command]
    return run([str(VENV_BIN / "wincni"), command, *node.node_flags(), *extra], node.env)


def clean(proc: subprocess.CompletedProcess) -> None:
    no_traceback(proc)
    assert SECRET not in proc.stdout + proc.stderr


@root_only
@pytest.mark.parametrize("how", PLANTS)
@pytest.mark.parametrize("what", ["subnetFile", "netConf", "manifest"])
@pytest.mark.parametrize("command", ["doctor", "bundle", "metrics"])
def test_the_tools_answer_at_once_over_what_was_planted(node: Node, command: str, what: str, how: str) -> None:
    plant(node, target(node, what), how)
    proc = wincni(node, command)
    clean(proc)
    if command == "doctor":
        text = json.dumps(json.loads(proc.stdout)["checks"])
        assert str(target(node, what)) in text, text
    else:
        assert proc.returncode in (0, 1) and os.listdir(node.root / "out"), proc.stderr
    if command == "bundle":
        with open(node.root / "out" / "b.tar.gz", "rb") as f:
            assert SECRET not in f.read()


@root_only
@pytest.mark.parametrize("how", PLANTS)
@pytest.mark.parametrize("what", ["subnetFile", "netConf"])
def test_the_doctor_says_why_status_could_not_read_it(node: Node, what: str, how: str) -> None:
    plant(node, target(node, what), how)
    proc = wincni(node, "doctor")
    clean(proc)
    status = {c["id"]: c for c in json.loads(proc.stdout)["checks"]}["runtime-status"]
    assert status["status"] == "warn" and str(target(node, what)) in status["message"], status
    why = {"fifo": "is a FIFO", "users-link": "owned by uid 65534", "dev-zero": "character device", "huge": "over"}
    assert why[how] in status["message"], status


@root_only
@pytest.mark.parametrize("how", PLANTS)
@pytest.mark.parametrize("what", ["subnetFile", "netConf"])
def test_flannel_add_is_a_cni_error_naming_the_file(node: Node, what: str, how: str) -> None:
    plant(node, target(node, what), how)
    conf = json.loads(next(node.conf_dir.iterdir()).read_text())
    env = {**node.env, "CNI_COMMAND": "ADD", "CNI_CONTAINERID": "pod1", "CNI_NETNS": "none", "CNI_IFNAME": "eth0"}
    proc = run([str(VENV_BIN / "flannel")], env, json.dumps(conf).encode())
    clean(proc)
    err = json.loads(proc.stdout)
    assert proc.returncode == 1 and str(target(node, what)) in err["msg"], err
