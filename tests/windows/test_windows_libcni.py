"""A runtime that is not ours on a Windows node (Wine): ``wincni.exe install`` lays the conflist
into containerd's own Windows folders (``%ProgramFiles%\\containerd\\cni\\bin`` and ``...\\conf``,
its config.toml saying version 3, so cniVersion 1.1.0), then libcni v1.3.0 (``cnidriver.exe``,
tests/libcni.py) runs ADD, CHECK, GC, DEL and STATUS through it with a libcni cache dir, as
containerd 2.x does. STATUS goes through ``GetStatusNetworkList``; its code and time for each node
state are printed as a table.

The node is this module's own (its own prefix and HNS): containerd's folders on the shared node
would change what test_windows_dirs.py and test_windows_lane.py's doctor see.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from hnsnode import net_conf_doc
from libcni import BOUND, HUNG, Driver, pods_and_gc, slow, status_states, table
from libhns.deadline import STATUS_SECONDS
from winenode import LIBCNI_CACHE, WineNode, toolchain

CONTAINERD = r"C:\Program Files\containerd"
BIN, CONF = CONTAINERD + r"\cni\bin", CONTAINERD + r"\cni\conf"


@pytest.fixture(scope="module")
def libcni_node(tmp_path_factory: pytest.TempPathFactory, package_zip: Path) -> tuple[WineNode, Driver]:
    try:
        toolchain.ensure_system()
    except toolchain.ToolchainError as e:
        pytest.fail(str(e))
    node = WineNode(tmp_path_factory.mktemp("libcni-node"), package_zip)
    try:
        node.overlay("vxlan0").lease().write_net_conf(net_conf_doc("overlay"))
        config = node.path(CONTAINERD + r"\config.toml")
        config.parent.mkdir(parents=True)
        config.write_text("version = 3\r\n")  # containerd 2.x: it calls STATUS
        proc = node.wine(
            node.exe("wincni"), "install", "--net-conf", r"C:\etc\kube-flannel\net-conf.json", "-o", "json"
        )
        assert proc.returncode == 0, (proc.stdout.decode(), proc.stderr.decode())
        installed = json.loads(proc.stdout)
        assert (installed["binDir"], installed["config"]) == (BIN, CONF + r"\10-flannel.conflist"), installed
        assert json.loads(node.path(installed["config"]).read_text())["cniVersion"] == "1.1.0"
        node.keep_server()  # as on Windows, no Wine server start in any run's time
        yield node, node.libcni(CONF, BIN)
    finally:
        node.close()


def test_pods_through_libcni_and_gc_with_the_live_list(libcni_node: tuple[WineNode, Driver]) -> None:
    pods_and_gc(*libcni_node)
    assert libcni_node[0].path(LIBCNI_CACHE + r"\results").is_dir()  # libcni's cache, where GC found the pods


def test_status_for_each_node_state(libcni_node: tuple[WineNode, Driver], capsys: pytest.CaptureFixture[str]) -> None:
    measured = status_states(*libcni_node)
    with capsys.disabled():
        print("\n" + table("Windows lane (cnidriver.exe and the package zip under Wine)", measured))
    assert not slow(measured), f"STATUS took {BOUND:g} s or more: {slow(measured)}"
    # What a hung HNS adds to the other states' median is the plugins' own bound on HNS, never
    # the hang or the command deadline.
    waited = measured[HUNG][1] - statistics.median(took for state, (_, took) in measured.items() if state != HUNG)
    assert waited < STATUS_SECONDS + 1, f"a hung HNS added {waited:.1f} s to STATUS"
