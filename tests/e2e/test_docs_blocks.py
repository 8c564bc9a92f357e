"""Every fenced block of README.md and docs/ is run, checked elsewhere, or says why not.

The marker is an HTML comment on the line before the block (invisible when rendered):

- ``<!-- run: SCENE -->`` before a ``console`` block: each ``$ `` line runs in bash in SCENE (a
  folder this test sets up, below; the operator tools of this checkout first on PATH, HNS the
  simulator's), and what it prints to stdout must be the lines shown under it, after ``normal``.
- ``<!-- run: SCENE, file NAME -->``: the block is, as JSON, the file NAME of SCENE after the
  blocks before it in the same page ran there.
- ``<!-- same as: PATH -->``: the block is, as JSON, the repository's file PATH.
- ``<!-- run by: PATH -->``: the test PATH runs or reads this block (it must name this page).
- ``<!-- not run: WHY -->``: the block cannot run here (PowerShell on a Windows node, a cluster,
  a fragment of a config); WHY says which.

A block without a marker fails the test, so a new sample is either run or says why not. The
counts of each kind are printed (``-s``) for the docs' closing note.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

from hnsnode import FIXTURES, lease_text, package_folder, running_build

REPO = Path(__file__).resolve().parents[2]
PAGES = ("README.md", *sorted(str(p.relative_to(REPO)) for p in (REPO / "docs").glob("*.md")))
VENV_BIN = Path(sys.executable).parent
MARKER = re.compile(r"^<!-- (run|run by|same as|not run): (.+?) -->$")
PROMPT = "$ "

#: What varies between runs, each side of the comparison normalised alike: a build's commit and
#: time, the interpreter and the machine. Nothing else may differ.
NORMAL = (
    (re.compile(r"\b(\d+\.\d+\.\d+)-[0-9a-f]{12}-\d{8}T\d{6}Z?\b"), r"\1-<commit>-<time>"),
    (re.compile(r"\b(\d+\.\d+\.\d+)-[0-9a-f]{12}-1\b"), r"\1-<commit>-<time>"),  # this checkout's own build
    (re.compile(r"\(commit [0-9a-f]{12}\)"), "(commit <commit>)"),
    (re.compile(r"^Python 3\.\d+\.\d+$", re.M), "Python <version>"),
    (re.compile(r"^platform \S+$", re.M), "platform <platform>"),
)


def normal(text: str) -> str:
    for pattern, replacement in NORMAL:
        text = pattern.sub(replacement, text)
    return text


@dataclass(frozen=True)
class Block:
    page: str
    line: int  # of the opening fence
    info: str  # the fence's language
    text: str
    marker: tuple[str, str] | None  # (kind, argument)

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def blocks(page: str) -> list[Block]:
    """The fenced blocks of ``page`` with the marker on the line before each."""
    lines = (REPO / page).read_text().splitlines()
    found, i = [], 0
    while i < len(lines):
        fence = lines[i].strip()
        if not fence.startswith("```"):
            i += 1
            continue
        end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == "```")
        before = lines[i - 1].strip() if i else ""
        match = MARKER.match(before)
        text = "\n".join(line[len(lines[i]) - len(lines[i].lstrip()) :] for line in lines[i + 1 : end])
        found.append(Block(page, i + 1, fence[3:].strip(), text, (match[1], match[2]) if match else None))
        i = end + 1
    return found


def every_block() -> list[Block]:
    return [b for page in PAGES for b in blocks(page)]


# ---------------------------------------------------------------------------------------- scenes


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _hnsctl(root: Path, env: dict, *args: str) -> None:
    subprocess.run([str(VENV_BIN / "hnsctl"), *args], cwd=root, env=env, check=True, capture_output=True, timeout=60)


def release(root: Path, env: dict) -> None:
    """A node before ``wincni install``: a release folder ``rel`` (build 0.1.0-aaaa-1), flanneld's
    vxlan net-conf.json, kubeadm's kubelet config and containerd's own NAT config in ``conf``."""
    package_folder(root, "0.1.0-aaaa-1").rename(root / "rel")
    _write(root / "net-conf.json", json.dumps(_net_conf("vxlan0", "vxlan")))
    _write(
        root / "kubelet.yaml", "kind: KubeletConfiguration\nclusterDNS:\n- 10.96.0.10\nclusterDomain: cluster.local\n"
    )
    _write(root / "conf" / "0-containerd-nat.json", '{"cniVersion": "1.0.0", "name": "nat", "type": "nat"}\n')


def bridge_node(root: Path, env: dict) -> None:
    """A healthy host-gw node as flanneld, kube-proxy's source VIP and ``wincni install`` leave it,
    every path relative to the node's folder: the L2Bridge network cbr0 with flanneld's host
    endpoint, the lease, net-conf.json, SourceVip.json with its reservation, the plugins in ``bin``
    laid by this checkout's build, the flannel config in ``conf``."""
    _hnsctl(root, env, "network", "create", "cbr0", "--type", "L2Bridge", "--subnet", "10.244.4.0/24")
    _hnsctl(root, env, "endpoint", "create", "cbr0_ep", "--network", "cbr0", "--ip", "10.244.4.2", "--host")
    _write(root / "subnet.env", (FIXTURES / "subnet.env").read_text())
    _write(root / "net-conf.json", json.dumps(_net_conf("cbr0", "host-gw")))
    _write(root / "SourceVip.json", json.dumps({"ip4": {"ip": "10.244.4.254/24"}}))
    _write(root / "ipam" / "cbr0" / "10.244.4.254", "_wincni-source-vip\r\nsourcevip")
    (root / "bin").mkdir()
    for plugin in ("flannel", "win-bridge", "host-local"):
        shutil.copy(VENV_BIN / plugin, root / "bin" / plugin)
    _write(root / "bin" / ".wincni-install.json", json.dumps({"build": running_build() + "-1"}))
    policies = [
        {"Type": "OutBoundNAT", "ExceptionList": ["10.244.0.0/16", "10.96.0.0/12", "10.127.130.0/24"]},
        {"Type": "ROUTE", "DestinationPrefix": "10.96.0.0/12", "NeedEncap": True},
        {"Type": "ROUTE", "DestinationPrefix": "10.127.130.36/32", "NeedEncap": True},
    ]
    conf = {
        "cniVersion": "1.0.0",
        "name": "cbr0",
        "type": "flannel",
        "subnetFile": "subnet.env",
        "netConf": "net-conf.json",
        "dataDir": "flannel",
        "ipam": {"dataDir": "ipam"},
        "delegate": {"type": "win-bridge", "policies": [{"Name": "EndpointPolicy", "Value": p} for p in policies]},
    }
    _write(root / "conf" / "10-flannel.conf", json.dumps(conf, indent=2))


def broken_bridge_node(root: Path, env: dict) -> None:
    """``bridge_node`` five ways wrong: kube-proxy's source VIP left from an earlier pod subnet, an
    external range in the ExceptionList and the service CIDR gone from it, net-conf.json naming
    another network, and a reservation whose pod has no endpoint, older than an ADD in flight."""
    bridge_node(root, env)
    _write(root / "SourceVip.json", json.dumps({"ip4": {"ip": "10.244.9.254/24"}}))
    conf = json.loads((root / "conf" / "10-flannel.conf").read_text())
    conf["delegate"]["policies"][0]["Value"]["ExceptionList"] = ["10.244.0.0/16", "10.127.130.0/24", "8.8.0.0/16"]
    _write(root / "conf" / "10-flannel.conf", json.dumps(conf, indent=2))
    _write(root / "net-conf.json", json.dumps(_net_conf("cbr1", "host-gw")))
    reservation = root / "ipam" / "cbr0" / "10.244.4.3"
    _write(reservation, "pod1\r\neth0")
    old = reservation.stat().st_mtime - 3600
    os.utime(reservation, (old, old))


def vxlan_node(root: Path, env: dict) -> None:
    """flanneld's vxlan network vxlan0 with the node's management IP, its lease, and the pods'
    config in ``vxlan0/cni.conf`` (its lease and host-local store beside it)."""
    _hnsctl(
        root,
        env,
        "network",
        "create",
        "vxlan0",
        "--type",
        "Overlay",
        "--subnet",
        "10.244.4.0/24",
        "--vsid",
        "4096",
        "--management-ip",
        "10.127.130.36",
    )
    _write(root / "vxlan0" / "subnet.env", lease_text("10.244.4.1/24"))
    conf = {
        "cniVersion": "1.0.0",
        "name": "vxlan0",
        "type": "flannel",
        "subnetFile": "vxlan0/subnet.env",
        "dataDir": "vxlan0/flannel",
        "ipam": {"dataDir": "vxlan0/ipam"},
        "delegate": {"type": "win-overlay"},
    }
    _write(root / "vxlan0" / "cni.conf", json.dumps(conf, indent=2))


def containerd(root: Path, env: dict) -> None:
    """containerd 1.x's config.toml naming the CNI folders, as sig-windows-tools' nodes do."""
    cni = '[plugins."io.containerd.grpc.v1.cri".cni]\n  bin_dir = "/opt/cni/bin"\n  conf_dir = "/etc/cni/net.d"\n'
    _write(root / "config.toml", "version = 2\n" + cni)


def empty(root: Path, env: dict) -> None:
    """Nothing: for commands that read no node."""


def _net_conf(name: str, kind: str) -> dict:
    backend = {"name": name, "type": kind, **({"VNI": 4096, "Port": 4789} if kind == "vxlan" else {})}
    return {"Network": "10.244.0.0/16", "Backend": backend}


SCENES = {
    "release": release,
    "bridge-node": bridge_node,
    "broken-bridge-node": broken_bridge_node,
    "vxlan-node": vxlan_node,
    "containerd": containerd,
    "empty": empty,
}


class Scene:
    """One scene's folder and environment, built once per page and carried from block to block."""

    def __init__(self, root: Path, name: str) -> None:
        self.root = root
        root.mkdir()
        path = os.pathsep.join([str(VENV_BIN), os.environ.get("PATH", "")])
        self.env = {
            "PATH": path,
            "HOME": str(root),
            "LANG": "C.UTF-8",
            "LIBHNS_BACKEND": "sim",
            "LIBHNS_SIM_DIR": str(root / "hns"),
            "WINCNI_LOCK_DIR": str(root / "locks"),
        }
        SCENES[name](root, self.env)

    def run(self, command: str) -> str:
        proc = subprocess.run(
            ["bash", "-o", "pipefail", "-c", command],
            cwd=self.root,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.stderr == "", f"{command}: {proc.stderr}"
        return proc.stdout


def console(text: str) -> list[tuple[str, str]]:
    """(command, the output shown under it) for each ``$ `` line of a console block."""
    steps: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        if line.startswith(PROMPT):
            steps.append((line[len(PROMPT) :], []))
        elif steps:
            steps[-1][1].append(line)
        else:
            raise AssertionError(f"a console block starts with its command ({PROMPT!r}): {line!r}")
    return [(command, "\n".join(shown)) for command, shown in steps]


# ----------------------------------------------------------------------------------------- tests


def test_every_block_carries_a_marker() -> None:
    unmarked = [b.where for b in every_block() if b.marker is None]
    assert not unmarked, f"a block with neither a run nor a not-run marker: {unmarked}"


def test_each_block_checked_by_another_test_is_read_there() -> None:
    for b in every_block():
        if b.marker and b.marker[0] == "run by":
            test = REPO / b.marker[1]
            assert test.is_file() and b.page in test.read_text(), f"{b.where}: {b.marker[1]} does not read {b.page}"


def test_each_block_the_same_as_a_file_is() -> None:
    for b in every_block():
        if b.marker and b.marker[0] == "same as":
            assert json.loads(b.text) == json.loads((REPO / b.marker[1]).read_text()), b.where


@pytest.mark.parametrize("page", PAGES)
def test_the_runnable_blocks_print_what_they_show(page: str, tmp_path: Path) -> None:
    scenes: dict[str, Scene] = {}
    for b in blocks(page):
        if not b.marker or b.marker[0] != "run":
            continue
        name, _, file = b.marker[1].partition(", file ")
        if name not in scenes:
            scenes[name] = Scene(tmp_path / name, name)
        scene = scenes[name]
        if file:
            assert json.loads(b.text) == json.loads((scene.root / file).read_text()), b.where
            continue
        assert b.info == "console", f"{b.where}: a run block is a console block"
        for command, shown in console(b.text):
            got = scene.run(command).rstrip("\n")
            assert normal(got) == normal(shown), f"{b.where}: {command}\n--- shown\n{shown}\n--- printed\n{got}"


#: docs/README.md's closing note: how many blocks of each kind, kept true by the test below.
NOTE = re.compile(r"(\d+) run, (\d+) run by another test, (\d+) the same as a file, (\d+) not run\.")


def test_the_closing_notes_counts_are_the_blocks(capsys) -> None:
    kinds = Counter(b.marker[0] if b.marker else "unmarked" for b in every_block())
    with capsys.disabled():
        print("\ndocs blocks:", ", ".join(f"{kind} {n}" for kind, n in sorted(kinds.items())))
    note = NOTE.search(" ".join((REPO / "docs" / "README.md").read_text().split()))
    assert note, "docs/README.md's closing note gives the counts"
    assert [int(n) for n in note.groups()] == [kinds[k] for k in ("run", "run by", "same as", "not run")]


@pytest.mark.parametrize(
    "text, ok",
    [
        ("wincni 0.1.0 (commit 0123456789ab)", "wincni 0.1.0 (commit <commit>)"),
        ("build 0.1.0-0123456789ab-20261127T084000Z", "build 0.1.0-<commit>-<time>"),
        ("build 0.1.0-aaaa-1", "build 0.1.0-aaaa-1"),  # a fixed build is shown as it is
        ("Python 3.13.1", "Python <version>"),
        ("10.244.4.254 lies inside", "10.244.4.254 lies inside"),
    ],
)
def test_normal_replaces_only_what_varies(text: str, ok: str) -> None:
    assert normal(text) == ok


def test_a_console_block_splits_into_commands_and_their_output() -> None:
    assert console("$ a\nx\ny\n$ b\n$ c\nz") == [("a", "x\ny"), ("b", ""), ("c", "z")]
    with pytest.raises(AssertionError):
        console("output before any command")
