"""The frozen Linux build (dist/) driven by a runtime that is not ours: libcni v1.3.0 (the
``cnidriver`` program, tests/libcni.py) loads the conflist from a conf dir as containerd does and
runs ADD, CHECK, GC, DEL and STATUS on the simulator, with its own cache dir. STATUS goes through
``GetStatusNetworkList`` as containerd 2.x's go-cni calls it; its code and time for each node
state are printed as a table."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from gotool import go_tool
from hnsnode import Node, net_conf_doc
from libcni import Driver, pods_and_gc, status_states, table
from testdata import require_frozen

DIST = Path(os.environ.get("WINCNI_DIST") or Path(__file__).resolve().parents[2] / "dist" / "wincni")

pytestmark = pytest.mark.frozen


def flannel_node(root: Path) -> tuple[Node, Driver]:
    """flanneld's vxlan node and a conf dir holding a CNI 1.1.0 conflist of our flannel."""
    require_frozen(DIST, "flannel", "win-overlay", "host-local")
    program = str(go_tool("cnidriver", "drive the plugins through libcni"))
    node = Node(root, "flannel").overlay("vxlan0").lease().write_net_conf(net_conf_doc("overlay"))
    plugin = {k: v for k, v in node.flannel_conf("cni.conf.overlay-v2.json").items() if k not in ("cniVersion", "name")}
    node.conf_dir.mkdir()
    conflist = {"cniVersion": "1.1.0", "name": "vxlan0", "plugins": [plugin]}
    (node.conf_dir / "10-flannel.conflist").write_text(json.dumps(conflist))

    def launch(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
        return subprocess.run([program, *argv], env={**node.env, **env}, capture_output=True, timeout=120)

    return node, Driver(launch, str(node.conf_dir), str(DIST), str(root / "libcni-cache"))


def test_pods_through_libcni_and_gc_with_the_live_list(tmp_path: Path) -> None:
    pods_and_gc(*flannel_node(tmp_path))


def test_status_for_each_node_state(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    measured = status_states(*flannel_node(tmp_path))
    with capsys.disabled():
        print("\n" + table("frozen Linux build (dist/, simulator)", measured))
