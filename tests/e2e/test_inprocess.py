"""In-process delegation changes nothing observable: flannel → win-bridge → host-local run with our
venv's console scripts on CNI_PATH (one process) and with WINCNI_NO_INPROCESS=1 (three processes)
give identical results, errors, HNS state, files and log lines, on success and on a failing
delegate or IPAM."""

from __future__ import annotations

import json
import re

import pytest

from hnsnode import VENV_BIN, Node
from plugins.cni.invoke import inprocess_module
from plugins.registry import sibling
from test_flannel_lifecycle import api_of

GUID = re.compile(r"[0-9A-Fa-f]{8}-(?:[0-9A-Fa-f]{4}-){3}[0-9A-Fa-f]{12}")
STAMP = re.compile(r" \d{16,} ")  # the time stamp in host-local's index file


def _norm(value, root) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return STAMP.sub(" STAMP ", GUID.sub("GUID", text.replace(str(root), "ROOT")))


def scenario(root, fixture: str, no_inprocess: bool) -> dict:
    """One node's whole story under one mode, reduced to what must not depend on the mode."""
    root.mkdir()
    node = Node(root, "flannel").bridge().lease().venv_plugins()
    node.env["WINCNI_LOG_FILE"] = str(root / "cni.log")
    if no_inprocess:
        node.env["WINCNI_NO_INPROCESS"] = "1"
    conf = node.flannel_conf(fixture)
    api = api_of(conf)
    netns = node.sandbox(api, "pod1")
    runs = [
        node.run("ADD", conf, "pod1", netns),
        node.run("DEL", conf, "pod1", netns),
        # A failing delegate: win-bridge finds no HNS network of that name.
        node.run("ADD", {**conf, "name": "missing"}, "pod2", node.sandbox(api, "pod2")),
    ]
    # A failing IPAM: host-local's store directory is a file.
    (root / "blocked").write_text("")
    runs.append(
        node.run("ADD", {**conf, "ipam": {"dataDir": str(root / "blocked")}}, "pod3", node.sandbox(api, "pod3"))
    )
    seen = [(run.rc, run.out) for run in runs]
    files = {
        str(p.relative_to(root)): p.read_bytes().decode(errors="replace")
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != "cni.log" and p.parent.name != "bin"
    }
    events = [json.loads(line) for line in (root / "cni.log").read_text().splitlines()]
    return {
        "runs": _norm(seen, root),
        "hns": _norm(node.hnsctl("dump"), root),
        "files": _norm(files, root),
        "log": [(e["plugin"], e["event"], e.get("command"), e.get("code")) for e in events],
        "inprocess": any(e.get("inprocess") for e in events),
    }


@pytest.mark.parametrize("fixture", ["cni.conf.l2bridge-v1.json", "cni.conf.l2bridge-v2.json"])
def test_inprocess_and_exec_are_indistinguishable(tmp_path, fixture):
    inproc = scenario(tmp_path / "in", fixture, no_inprocess=False)
    execd = scenario(tmp_path / "exec", fixture, no_inprocess=True)
    assert inproc.pop("inprocess") and not execd.pop("inprocess")
    assert inproc == execd
    codes = [run[0] for run in json.loads(inproc["runs"])]
    assert codes == [0, 0, 1, 1]


def test_only_this_installation_runs_inprocess(tmp_path):
    """Our own console script (also through a symlink) runs in-process; a copy elsewhere, a
    foreign plugin of the same name and the opt-out are executed."""
    real = VENV_BIN / "host-local"
    link = tmp_path / "link"
    link.symlink_to(real)
    copy = tmp_path / "host-local"
    copy.write_bytes(real.read_bytes())
    assert inprocess_module("host-local", str(real), {}, sibling) == "plugins.ipam_host_local.__main__"
    assert inprocess_module("host-local", str(link), {}, sibling) == "plugins.ipam_host_local.__main__"
    assert inprocess_module("host-local", str(copy), {}, sibling) is None
    assert inprocess_module("host-local", str(real), {"WINCNI_NO_INPROCESS": "1"}, sibling) is None
    assert inprocess_module("bridge", str(real), {}, sibling) is None
    assert inprocess_module("win-bridge", str(real), {}, sibling) is None  # host-local's script is not win-bridge
