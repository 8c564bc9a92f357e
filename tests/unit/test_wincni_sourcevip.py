"""``wincni sourcevip`` on a simulated overlay node: the reservation, its permanence against pod DEL
and GC, idempotence, a new subnet, a network that comes up late, and the doctor agreeing."""

from __future__ import annotations

import io
import json
import time
from pathlib import Path

import pytest

from hnsnode import Node
from plugins.cni import skel
from plugins.flannel import subnet_env
from plugins.ipam_host_local.__main__ import PLUGIN as HOST_LOCAL
from tools.wincni.cli.main import main

OUT = Path("k") / "sourceVip.json"  # under the node's root; sourcevip makes k/
CONFLIST = "10-flannel.conflist"


def conflist_node(root: Path) -> Node:
    """An overlay node with flanneld's lease and the flannel conflist; its HNS network comes when a test says."""
    node = Node(root).lease()
    node.write_cni_conf(
        {
            "cniVersion": "1.0.0",
            "name": "vxlan0",
            "plugins": [
                {
                    "type": "flannel",
                    "subnetFile": str(node.subnet_env),
                    "ipam": {"dataDir": str(node.ipam_dir)},
                    "delegate": {"type": "win-overlay"},
                }
            ],
        },
        CONFLIST,
    )
    return node


pytestmark = pytest.mark.node(build=conflist_node)


def sourcevip(node: Node, *args: str, expect: int = 0, clock=None, sleep=None, stderr=None) -> dict:
    argv = [
        "sourcevip",
        "--cni-conf",
        str(node.conf_dir / CONFLIST),
        "--out",
        str(node.root / OUT),
        "-o",
        "json",
        *args,
    ]
    out = io.StringIO()
    extra = {"clock": clock, "sleep": sleep} if clock else {}
    rc = main(argv, out, stderr or io.StringIO(), node.env, "linux", str(node.root), **extra)
    doc = json.loads(out.getvalue())
    assert rc == expect, doc
    return doc


def host_local(node: Node, command: str, cid: str, **extra) -> tuple[int, dict | None]:
    """A pod's IPAM call exactly as flannel -> win-overlay makes it for the node's lease: (rc, result)."""
    subnet = subnet_env.load(str(node.subnet_env)).subnet
    conf = {
        "cniVersion": "1.1.0",
        "name": "vxlan0",
        "type": "win-overlay",
        "ipam": {"type": "host-local", "subnet": str(subnet), "dataDir": str(node.ipam_dir)},
        **extra,
    }
    env = {
        "CNI_COMMAND": command,
        "CNI_CONTAINERID": cid,
        "CNI_NETNS": "ns",
        "CNI_IFNAME": "eth0",
        "CNI_PATH": "/opt/cni/bin",
    }
    out = io.StringIO()
    rc = skel.run(HOST_LOCAL, env, io.BytesIO(json.dumps(conf).encode()), out, io.StringIO(), platform="linux")
    return rc, json.loads(out.getvalue()) if out.getvalue() else None


def reserved(node: Node) -> dict[str, str]:
    """host-local's reservations in vxlan0: address -> the whole file."""
    return {p.name: p.read_bytes().decode() for p in (node.ipam_dir / "vxlan0").iterdir() if p.name[0].isdigit()}


def test_reserve_then_idempotent_and_pods_never_get_it(node: Node) -> None:
    node.overlay()
    doc = sourcevip(node)
    vip = doc["sourceVip"]
    assert doc["flags"] == [f"--source-vip={vip}", "--network-name=vxlan0"] and doc["written"]
    assert json.loads((node.root / OUT).read_text()) == {
        "cniVersion": "0.2.0",
        "ip4": {"ip": f"{vip}/24", "gateway": "10.244.4.1"},
        "dns": {},
    }
    assert reserved(node) == {vip: "_wincni-source-vip\r\nsourcevip"}

    again = sourcevip(node)
    assert (again["sourceVip"], again["written"], again["released"]) == (vip, False, [])

    rc, result = host_local(node, "ADD", "pod1")
    assert rc == 0
    pod_ip = result["ips"][0]["address"].split("/")[0]
    assert pod_ip != vip
    assert host_local(node, "DEL", "pod1")[0] == 0
    assert host_local(node, "GC", "x", **{"cni.dev/valid-attachments": []})[0] == 0
    assert reserved(node) == {vip: "_wincni-source-vip\r\nsourcevip"}
    assert sourcevip(node)["sourceVip"] == vip


def test_a_new_subnet_releases_the_old_address(node: Node) -> None:
    node.overlay()
    old = sourcevip(node)["sourceVip"]
    node.lease("10.244.9.1/24")  # the node rejoined with another lease
    doc = sourcevip(node)
    assert doc["released"] == [old] and doc["sourceVip"].startswith("10.244.9.") and doc["written"]
    assert list(reserved(node)) == [doc["sourceVip"]]
    assert json.loads((node.root / OUT).read_text())["ip4"]["ip"] == doc["sourceVip"] + "/24"


def test_waits_for_a_network_that_comes_up_late(node: Node) -> None:
    now = [0.0]

    def sleep(seconds: float) -> None:  # flanneld creates the network during the second wait
        now[0] += seconds
        if now[0] == 2.0:
            node.overlay()

    doc = sourcevip(node, "--timeout", "30", clock=lambda: now[0], sleep=sleep)
    assert doc["sourceVip"] and now[0] == 2.0


def test_gives_up_after_the_timeout_naming_what_is_missing(node: Node) -> None:
    """What was missing, not a last HNS call given no time (it was, and blamed HNS on a slow node)."""
    node.env["LIBHNS_SIM_FAULTS"] = "HcnEnumerateNetworks=hang:0.02"  # HNS as slow as a loaded node's
    now = [0.0]
    doc = sourcevip(
        node, "--timeout", "5", expect=1, clock=lambda: now[0], sleep=lambda s: now.__setitem__(0, now[0] + s)
    )
    assert "HNS network 'vxlan0' not there after 5 s" in doc["error"] and now[0] == 5.0
    node.subnet_env.unlink()
    node.overlay()
    doc = sourcevip(node, "--timeout", "0", expect=1, clock=lambda: 0.0, sleep=lambda s: None)
    assert "flanneld's lease" in doc["error"] and not (node.root / OUT).exists()


def test_the_doctor_agrees(node: Node) -> None:
    node.overlay()
    vip = sourcevip(node)["sourceVip"]

    def doctor() -> dict:
        return node.doctor("--source-vip", str(node.root / OUT), "--net-conf", str(node.root / "none.json"))

    found = doctor()
    assert found["source-vip"]["status"] == "ok" and "reserved" in found["source-vip"]["message"], found["source-vip"]
    assert found["ipam-store"]["status"] == "ok", found["ipam-store"]

    (node.ipam_dir / "vxlan0" / vip).unlink()  # reserved by nobody: a pod may get it
    assert doctor()["source-vip"]["status"] == "warn"
    (node.ipam_dir / "vxlan0" / vip).write_bytes(b"pod7\r\neth0")  # and a pod did
    node.hnsctl("endpoint", "create", "pod7_vxlan0", "--network", "vxlan0", "--ip", vip)
    check = doctor()["source-vip"]
    assert check["status"] == "fail" and "pod7" in check["message"] and "wincni sourcevip" in check["run"]


def test_table_output_and_a_bad_config(node: Node) -> None:
    node.overlay()
    out = io.StringIO()
    argv = ["sourcevip", "--cni-conf", str(node.conf_dir / CONFLIST), "--out", str(node.root / OUT)]
    assert main(argv, out, io.StringIO(), node.env, platform="linux", cwd=str(node.root)) == 0
    assert "kube-proxy  --source-vip=10.244.4." in out.getvalue() and "--network-name=vxlan0" in out.getvalue()
    (node.conf_dir / CONFLIST).write_text("{not json")
    out = io.StringIO()
    assert main(argv, out, io.StringIO(), node.env, platform="linux", cwd=str(node.root)) == 1
    assert out.getvalue().startswith("FAILED: ")


def test_the_doctor_counts_the_source_vip_as_the_nodes_own(node: Node) -> None:
    node.overlay()
    sourcevip(node)
    store = node.doctor("--source-vip", str(node.root / OUT))["ipam-store"]
    assert store["status"] == "ok" and store["message"].startswith("0 reservation(s)")
    assert "1 of the node's own" in store["message"]


@pytest.mark.slow  # waits the 6 s out
def test_the_timeout_bounds_the_whole_command_and_it_says_what_it_waits_for(node: Node) -> None:
    """HNS hangs: --timeout 6 ends it in under 9 s (it took the 30 s per-call deadline), naming HNS
    (it blamed the network), with a line on stderr naming the lease and the network meanwhile."""
    node.overlay()
    node.env["LIBHNS_SIM_FAULTS"] = "HcnEnumerateNetworks=hang:40"
    err = io.StringIO()
    start = time.monotonic()
    doc = sourcevip(node, "--timeout", "6", expect=1, stderr=err)
    assert time.monotonic() - start < 9
    assert "an answer from HNS" in doc["error"] and "TIMEOUT" in doc["error"], doc
    line = err.getvalue().splitlines()[0]
    assert "waiting for" in line and str(node.subnet_env) in line and "network vxlan0" in line and "s more" in line, (
        line
    )


def test_progress_lines_come_every_few_seconds_saying_how_much_longer(node: Node) -> None:
    now, err = [0.0], io.StringIO()
    sourcevip(
        node,
        "--timeout",
        "12",
        expect=1,
        clock=lambda: now[0],
        sleep=lambda s: now.__setitem__(0, now[0] + s),
        stderr=err,
    )
    lines = err.getvalue().splitlines()
    assert [line.rsplit(", ", 1)[1] for line in lines] == ["12 s more", "7 s more", "2 s more"], lines
    assert all("HNS network 'vxlan0'" in line for line in lines)


def test_on_an_l2bridge_network_it_refuses_and_reserves_nothing(node: Node) -> None:
    node.bridge("vxlan0")  # host-gw: the network is an L2Bridge, flanneld's _ep at .2
    doc = sourcevip(node, "--timeout", "5", expect=2)
    assert "kube-proxy needs no source VIP" in doc["error"], doc
    assert not (node.ipam_dir / "vxlan0").exists()


def test_never_an_address_hns_gives_to_an_endpoint(node: Node) -> None:
    node.overlay()
    node.hnsctl("endpoint", "create", "leftover_vxlan0", "--network", "vxlan0", "--ip", "10.244.4.2")
    assert sourcevip(node)["sourceVip"] == "10.244.4.3"


def test_an_address_an_endpoint_took_since_is_given_up_for_another(node: Node) -> None:
    node.overlay()
    old = sourcevip(node)["sourceVip"]
    node.hnsctl("endpoint", "create", "squatter", "--network", "vxlan0", "--ip", old)
    doc = sourcevip(node)
    assert doc["released"] == [old] and doc["sourceVip"] != old and list(reserved(node)) == [doc["sourceVip"]]


def test_kube_proxys_own_endpoint_on_the_address_keeps_it(node: Node) -> None:
    """winkernel kube-proxy makes an unnamed endpoint for its --source-vip at start; deploy/ runs
    sourcevip again each time kube-proxy starts: the address stays, and the doctor is content."""
    node.overlay()
    vip = sourcevip(node)["sourceVip"]
    node.hnsctl("endpoint", "create", "", "--network", "vxlan0", "--ip", vip)
    doc = sourcevip(node)
    assert (doc["sourceVip"], doc["released"], list(reserved(node))) == (vip, [], [vip]), doc
    found = node.doctor("--source-vip", str(node.root / OUT), "--net-conf", str(node.root / "none.json"))
    assert found["source-vip"]["status"] == "ok", found["source-vip"]


def test_the_doctor_fails_a_source_vip_an_endpoint_holds(tmp_path: Path) -> None:
    """What the old sourcevip did on host-gw: cbr0_ep's address as the source VIP, and doctor said OK."""
    bridge = Node(tmp_path)
    bridge.cni_conf = bridge.flannel_files("bridge")
    bridge.bridge("cbr0").reserve_source_vip("10.244.4.2", network="cbr0")
    found = bridge.doctor()
    assert found["source-vip"]["status"] == "fail" and "cbr0_ep" in found["source-vip"]["message"], found
