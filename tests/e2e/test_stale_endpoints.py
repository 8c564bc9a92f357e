"""Endpoints a previous sandbox left in HNS, run as processes against the simulator: a
stale endpoint of the pod's name is replaced, a stale endpoint of ours on the pod's address is
removed and the create retried, and an endpoint still in use (or not ours) is never touched."""

from __future__ import annotations

import pytest

from hnsnode import SUBNET, Node

ONE_ADDRESS = "10.244.4.50"  # host-local configured with this one address: the test knows the pod's IP


def one_address_conf(node: Node) -> dict:
    return node.conf(
        ipam={
            "type": "host-local",
            "subnet": SUBNET,
            "rangeStart": ONE_ADDRESS,
            "rangeEnd": ONE_ADDRESS,
            "dataDir": str(node.ipam_dir),
        }
    )


def create_faults(api: str, what: str) -> str:
    return f"HcnCreateEndpoint#1={what}" if api == "v2" else f"HNSCall:POST /endpoints/#1={what}"


@pytest.mark.parametrize("api", ["v1", "v2"])
def test_a_stale_endpoint_of_the_pods_name_is_replaced(node, api):
    netns = node.sandbox(api, "pod1")
    old = node.hnsctl(
        "endpoint", "create", f"pod1_{node.network}", "--network", node.network, "--ip", "10.244.4.200", "-o", "json"
    )
    run = node.run("ADD", node.conf(), "pod1", netns)
    assert run.ok, run.out
    assert f"removing stale HNS endpoint pod1_{node.network} ({old['ID']}, 10.244.4.200)" in run.stderr
    ep = node.endpoints()[f"pod1_{node.network}"]
    assert ep["ID"] != old["ID"] and ep["IPAddress"] == run.out["ips"][0]["address"].split("/")[0]
    assert node.run("DEL", node.conf(), "pod1", netns).ok
    node.assert_clean("pod1")


@pytest.mark.parametrize("api", ["v1", "v2"])
def test_a_stale_endpoint_of_ours_on_the_pods_address_is_removed(node, api):
    netns = node.sandbox(api, "pod1")
    run = node.run("ADD", node.conf(), "pod1", netns, LIBHNS_SIM_FAULTS=create_faults(api, "stale-ip"))
    assert run.ok, (run.out, run.stderr)
    ip = run.out["ips"][0]["address"].split("/")[0]
    assert "removing stale HNS endpoint previous-" in run.stderr and f"it holds {ip}" in run.stderr
    assert [n for n in node.endpoints() if n.startswith("previous-")] == []
    assert node.endpoints()[f"pod1_{node.network}"]["IPAddress"] == ip
    assert node.run("DEL", node.conf(), "pod1", netns).ok
    node.assert_clean("pod1")


@pytest.mark.parametrize("api", ["v1", "v2"])
def test_a_live_endpoint_on_the_pods_address_is_never_touched(node, api):
    netns = node.sandbox(api, "pod1")
    run = node.run("ADD", node.conf(), "pod1", netns, LIBHNS_SIM_FAULTS=create_faults(api, "live-ip"))
    out = run.failed(11, "held by HNS endpoint previous-", "still exists", "left alone")
    [live] = [e for n, e in node.endpoints().items() if n.startswith("previous-")]
    assert live["ID"] in out["msg"] and live["Namespace"]
    node.assert_clean("pod1")  # no endpoint and no address of the pod: host-local's reservation released


def test_an_endpoint_not_ours_on_the_pods_address_is_never_touched(node):
    conf = one_address_conf(node)
    foreign = node.hnsctl("endpoint", "create", "vm-nic", "--network", node.network, "--ip", ONE_ADDRESS, "-o", "json")
    netns = node.sandbox("v2", "pod1")
    node.run("ADD", conf, "pod1", netns).failed(11, f"address {ONE_ADDRESS}", "vm-nic", "not created by this plugin")
    assert node.endpoints()["vm-nic"]["ID"] == foreign["ID"]
    node.assert_clean("pod1")
    # Once the operator removes it, the runtime's retry succeeds.
    node.hnsctl("endpoint", "delete", foreign["ID"])
    assert node.add(conf, "pod1", netns)["ips"][0]["address"].startswith(ONE_ADDRESS)


def test_a_live_endpoint_of_the_pods_name_is_not_replaced(node):
    """Attached to another sandbox that still exists: HNS refuses the attach, nothing is removed."""
    other = node.sandbox("v2", "other")
    node.add(node.conf(), "pod1", other)
    netns = node.sandbox("v2", "pod1")
    run = node.run("ADD", node.conf(), "pod1", netns)
    assert run.rc == 1 and "removing stale" not in run.stderr
    assert node.endpoints()[f"pod1_{node.network}"]["Namespace"]["ID"].upper() == other.upper()
