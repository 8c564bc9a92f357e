"""flannel → win-bridge / win-overlay → host-local, all as real processes, on the HNS simulator.

``hnsnode.Node`` plays flanneld (it creates the HNS network); the node fixtures are used
unchanged. host-local's store is moved with flannel's top-level ``ipam.dataDir`` (our extension:
extra keys merged into the delegate's host-local config), so the tests never touch
/var/lib/cni/networks.
"""

from __future__ import annotations

import ipaddress

import pytest

from hnsnode import Node

SUBNET = ipaddress.ip_network("10.244.4.0/24")


def pod_ip(result: dict) -> ipaddress.IPv4Address:
    address = result["ip4"]["ip"] if "ip4" in result else result["ips"][0]["address"]
    return ipaddress.ip_interface(address).ip


def api_of(conf: dict) -> str:
    return "v2" if conf["delegate"].get("apiVersion") == 2 else "v1"


def lifecycle(node: Node, fixture: str) -> None:
    conf = node.flannel_conf(fixture)
    netns = node.sandbox(api_of(conf), "pod1")
    result = node.add(conf, "pod1", netns)
    assert pod_ip(result) in SUBNET
    assert f"pod1_{node.network}" in node.endpoints()
    assert (node.flannel_dir / "pod1").exists() and "pod1" in node.ip_files().values()

    assert node.run("DEL", conf, "pod1", netns).ok
    node.assert_clean("pod1")
    assert not (node.flannel_dir / "pod1").exists()
    assert node.run("DEL", conf, "pod1", netns).ok


@pytest.mark.parametrize("fixture", ["cni.conf.l2bridge-v1.json", "cni.conf.l2bridge-v2.json"])
def test_win_bridge_lifecycle(tmp_path, fixture):
    lifecycle(Node(tmp_path, "flannel").bridge().lease(), fixture)


@pytest.mark.parametrize("fixture", ["cni.conf.overlay-v1.json", "cni.conf.overlay-v2.json"])
def test_win_overlay_lifecycle(tmp_path, fixture):
    lifecycle(Node(tmp_path, "flannel").overlay().lease(), fixture)


def test_dockershim_pod_through_win_bridge(tmp_path):
    node = Node(tmp_path, "flannel").bridge().lease()
    conf = node.flannel_conf("cni.conf.l2bridge-v1.json")
    node.sandbox("v1", "pause1")
    node.sandbox("v1", "app1")
    pause = node.add(conf, "pause1", "none")
    app = node.add(conf, "app1", "container:pause1")
    assert pod_ip(app) == pod_ip(pause)  # one endpoint, shared
    assert node.run("DEL", conf, "app1", "container:pause1").ok
    assert (node.flannel_dir / "pause1").exists()
    assert node.run("DEL", conf, "pause1", "none").ok
    node.assert_clean("pause1")
    assert not (node.flannel_dir / "pause1").exists()


def test_gc_and_status_through_win_bridge(tmp_path):
    node = Node(tmp_path, "flannel").bridge().lease()
    conf = node.flannel_conf("cni.conf.l2bridge-v1.json", cniVersion="1.1.0")
    for cid in ("pod1", "pod2"):
        node.add(conf, cid, node.sandbox("v1", cid))
    gc = {**conf, "cni.dev/valid-attachments": [{"containerID": "pod1", "ifname": "eth0"}]}
    assert node.run("GC", gc).ok
    assert (node.flannel_dir / "pod1").exists() and not (node.flannel_dir / "pod2").exists()
    assert set(node.ip_files().values()) == {"pod1"}
    assert node.run("STATUS", conf).ok
    node.subnet_env.unlink()
    node.run("STATUS", conf).failed(50, str(node.subnet_env))
