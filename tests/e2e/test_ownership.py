"""Five ways a node once freed what was in use, one regression test each: nothing in use is ever freed, by the one
ownership rule (``plugins.cni.ownership``) that reclaim, GC, sourcevip, the doctor and ADD's
stale-endpoint cleanup share."""

from __future__ import annotations

import io
import json
import os
import time
from pathlib import Path

import pytest

from hnsnode import SUBNET, Node
from plugins.cni import ownership
from plugins.ipam_host_local.__main__ import main as host_local_main
from tools.wincni.cli.main import main as wincni_main


def wincni(node: Node, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    rc = wincni_main(list(argv), out, err, node.env, platform="linux", cwd=str(node.root))
    return rc, out.getvalue(), err.getvalue()


def age(path: Path, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


def host_local(node: Node, command: str, cid: str) -> dict:
    """The IPAM step of a pod's ADD, in-process, as win-overlay runs it."""
    env = {**node.env, "CNI_COMMAND": command, "CNI_CONTAINERID": cid, "CNI_NETNS": "ns", "CNI_IFNAME": "eth0"}
    out = io.StringIO()
    assert host_local_main(env, io.BytesIO(json.dumps(node.conf()).encode()), out) == 0, out.getvalue()
    return json.loads(out.getvalue()) if out.getvalue() else {}


@pytest.fixture
def overlay(tmp_path: Path) -> Node:
    node = Node(tmp_path, "win-overlay").overlay()
    node.write_cni_conf(node.conf(), "10-overlay.conf")
    return node


# 1 -------------------------------------------------------------------------------------------
def test_reclaim_never_releases_the_source_vip_however_old(overlay: Node) -> None:
    overlay.reserve_source_vip()
    vip = overlay.ipam_dir / overlay.network / "10.244.4.9"
    age(vip, 3600)
    for args in ((), ("--min-age", "0", "--force")):
        rc, out, _ = wincni(overlay, "reclaim", "--cni-conf", str(overlay.conf_dir / "10-overlay.conf"), *args)
        assert rc == 0 and "0 reservation(s) released" in out, out
    assert overlay.ip_files() == {"10.244.4.9": "_wincni-source-vip"}


# 2 -------------------------------------------------------------------------------------------
def test_a_retried_add_renews_the_reservation_it_reuses_so_reclaim_keeps_it(overlay: Node) -> None:
    first = host_local(overlay, "ADD", "pod1")  # the killed ADD's reservation, long ago
    ip = first["ips"][0]["address"].split("/")[0]
    age(overlay.ipam_dir / overlay.network / ip, 3600)
    again = host_local(overlay, "ADD", "pod1")  # the runtime's retry: its IPAM step, endpoint not made yet
    assert again["ips"] == first["ips"]
    assert time.time() - (overlay.ipam_dir / overlay.network / ip).stat().st_mtime < 60
    rc, out, _ = wincni(overlay, "reclaim", "--cni-conf", str(overlay.conf_dir / "10-overlay.conf"))
    assert rc == 0 and "0 reservation(s) released" in out, out
    assert overlay.ip_files() == {ip: "pod1"}


def test_reclaim_checks_each_candidate_again_under_the_lock_just_before_releasing_it(overlay: Node) -> None:
    """HNS was read before the pod's ADD made its endpoint (and, say, its namespace): the re-check
    against HNS keeps it."""
    from tools.wincni.reclaim import holdings
    from tools.wincni.reclaim.plan import MAX_PER_PASS, act

    class ReadTooEarly(holdings.Holdings):
        def endpoints(self) -> list[holdings.HeldEndpoint]:
            return []

        def alive(self, sandboxes):
            return dict.fromkeys(sandboxes, False)

    ip = overlay.add(overlay.conf(), "pod1", overlay.sandbox("v2", "pod1"))["ips"][0]["address"].split("/")[0]
    age(overlay.ipam_dir / overlay.network / ip, 3600)
    node = ReadTooEarly(overlay.network, str(overlay.ipam_dir / overlay.network), "", "linux", overlay.env)
    done = act(node, None, 0, MAX_PER_PASS, False)
    assert done.freed == [] and [(f.name, why) for f, why in done.kept] == [(ip, ownership.LIVE_ENDPOINT)]
    assert overlay.ip_files() == {ip: "pod1"}


# 3 -------------------------------------------------------------------------------------------
def test_an_add_never_deletes_a_live_endpoint_on_another_network(overlay: Node) -> None:
    overlay.bridge("other", host_endpoint=False)
    overlay.network = "vxlan0"
    live = overlay.hnsctl("namespace", "create", "-o", "json")["ID"]
    planted = overlay.hnsctl("endpoint", "create", "pod1_vxlan0", "--network", "other", "-o", "json")
    overlay.hnsctl("namespace", "attach", live, planted["ID"])
    run = overlay.run("ADD", overlay.conf(), "pod1", overlay.sandbox("v2", "pod1"))
    run.failed(11, "pod1_vxlan0", planted["ID"], ownership.ATTACHED, "released")
    assert planted["ID"] in {e["ID"] for e in overlay.endpoints_v2().values()}
    assert overlay.ip_files() == {}  # its own reservation released


# 4 -------------------------------------------------------------------------------------------
@pytest.fixture
def standalone(tmp_path: Path) -> Node:
    node = Node(tmp_path, "win-bridge")
    node.network = "cbr9"
    return node


def test_a_timed_out_network_creation_is_removed_in_its_undo_window(standalone: Node) -> None:
    conf = standalone.conf(network={"subnet": SUBNET, "adapter": "Ethernet"})
    netns = standalone.sandbox("v2", "pod1")
    standalone.env["LIBHNS_COMMAND_TIMEOUT"] = "1"
    run = standalone.fault_run("ADD", conf, "pod1", netns, "HNSCall:POST /endpoints/#1=hang:3")  # cbr9_ep's
    run.failed(11, "creating HNS network cbr9", "TIMEOUT")
    assert "ADD: removing HNS network cbr9" in run.stderr
    assert standalone.hnsctl("network", "list", "-o", "json") == []
    del standalone.env["LIBHNS_COMMAND_TIMEOUT"]
    standalone.add(conf, "pod1", netns)
    assert {"cbr9_ep", "pod1_cbr9"} <= set(standalone.endpoints())


def test_a_network_left_half_made_is_made_again_by_the_next_add(standalone: Node) -> None:
    """An ADD killed during set-up leaves its marker: the network is not trusted, but remade."""
    conf = standalone.conf(network={"subnet": SUBNET, "adapter": "Ethernet"})
    standalone.bridge("cbr9", host_endpoint=False)  # what the killed ADD had made
    locks = Path(standalone.env["WINCNI_LOCK_DIR"])
    locks.mkdir(mode=0o700)
    (locks / "network-cbr9.setup").touch()
    run = standalone.run("ADD", conf, "pod1", standalone.sandbox("v2", "pod1"))
    assert run.ok and "an earlier ADD was stopped while setting it up" in run.stderr, (run.out, run.stderr)
    assert {"cbr9_ep", "pod1_cbr9"} <= set(standalone.endpoints()) and not (locks / "network-cbr9.setup").exists()


def test_a_stale_endpoint_on_the_host_endpoints_address_is_cleared_a_live_one_never(standalone: Node) -> None:
    """The set-up of a standalone network meets what a gone sandbox left on .2 (removed, by the
    stale rule), or what a live one holds (code 11, untouched, the network not used)."""
    conf = standalone.conf(network={"subnet": SUBNET, "adapter": "Ethernet"})
    run = standalone.fault_run(
        "ADD", conf, "pod1", standalone.sandbox("v2", "pod1"), "HNSCall:POST /endpoints/#1=stale-ip"
    )
    assert run.ok and "removing stale HNS endpoint previous-1_cbr9" in run.stderr, (run.out, run.stderr)
    assert standalone.endpoints()["cbr9_ep"]["IPAddress"] == "10.244.4.2"
    standalone.hnsctl("restart")
    run = standalone.fault_run(
        "ADD", conf, "pod2", standalone.sandbox("v2", "pod2"), "HNSCall:POST /endpoints/#1=live-ip"
    )
    run.failed(11, "10.244.4.2", "previous-1_cbr9", "still exists")  # the simulator counts plants per store
    assert set(standalone.endpoints()) == {"previous-1_cbr9"} and "pod2" not in standalone.ip_files().values()
