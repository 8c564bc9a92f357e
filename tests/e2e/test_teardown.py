"""DEL and GC after the config or the node changed since ADD: teardown still happens.

The runtime retries a failing DEL forever while the pod hangs in Terminating with its IP and
endpoint taken, so a field teardown does not read must never fail it (issue: a policy value
that is not an object, an endpointMacPrefix of the wrong shape). Only a config that no longer
says which network or which IPAM store is an error.
"""

from __future__ import annotations

import pytest

from hnsnode import Node


def bridge(tmp_path) -> Node:
    return Node(tmp_path, "win-bridge").bridge()


def overlay(tmp_path) -> Node:
    return Node(tmp_path, "win-overlay").overlay()


EDITS = [  # (node, field the warning names, the edit)
    (bridge, "policies[0].value", {"policies": [{"name": "EndpointPolicy", "value": "OutBoundNAT"}]}),
    (overlay, "endpointMacPrefix", {"endpointMacPrefix": "0E2A"}),
    (bridge, "dns.nameservers[0]", {"dns": {"nameservers": ["not-an-ip"]}}),
    (bridge, "apiVersion", {"apiVersion": "two"}),
    (
        overlay,
        "runtimeConfig.portMappings[0].hostPort",
        {"runtimeConfig": {"portMappings": [{"hostPort": 0, "containerPort": 80}]}},
    ),
]


@pytest.mark.parametrize("api", ["v1", "v2"])
@pytest.mark.parametrize("make,field,edit", EDITS, ids=[e[1] for e in EDITS])
def test_del_after_an_edit_that_add_would_reject_still_tears_down(tmp_path, api, make, field, edit):
    node = make(tmp_path)
    netns = node.sandbox(api, "pod1")
    conf = node.conf()
    node.add(conf, "pod1", netns)
    edited = {**conf, **edit}
    assert node.run("ADD", edited, "pod2", node.sandbox(api, "pod2")).failed(7, field)  # ADD still refuses it
    for _ in range(2):  # and DEL is idempotent with it
        run = node.run("DEL", edited, "pod1", netns)
        assert run.ok, (run.out, run.stderr)
        assert f"ignores {field}" in run.stderr and "warning" in run.stderr
    node.assert_clean("pod1")


def test_gc_after_an_edit_still_collects(tmp_path):
    node = bridge(tmp_path)
    conf = node.conf(cniVersion="1.1.0")
    node.add(conf, "gone", node.sandbox("v2", "gone"))
    keep = node.sandbox("v2", "keep")
    node.add(conf, "keep", keep)
    edited = {
        **conf,
        "policies": [{"name": "EndpointPolicy", "value": 42}],
        "cni.dev/valid-attachments": [{"containerID": "keep", "ifname": "eth0"}],
    }
    run = node.run("GC", edited)
    assert run.ok, (run.out, run.stderr)
    node.assert_clean("gone")
    assert "keep_cbr0" in node.endpoints() and "keep" in node.ip_files().values()


@pytest.mark.parametrize(
    "edit,words",
    [
        ({"name": ""}, ("missing network name",)),  # skel's check, before any plugin code
        ({"ipam": "host-local"}, ("DEL cannot identify the IPAM plugin that releases the pod's address", "ipam:")),
        ({"ipam": {"type": 5}}, ("DEL cannot identify the IPAM plugin", "ipam.type")),
    ],
)
def test_a_config_that_no_longer_names_the_network_or_the_ipam_store_is_an_error(tmp_path, edit, words):
    node = bridge(tmp_path)
    netns = node.sandbox("v2", "pod1")
    conf = node.conf()
    node.add(conf, "pod1", netns)
    run = node.run("DEL", {**conf, **edit}, "pod1", netns)
    run.failed(7, *words)
    assert "pod1_cbr0" in node.endpoints()  # nothing half-done: the runtime retries with a fixed config


def test_host_locals_own_fields_follow_the_same_rule(tmp_path):
    """host-local reads only ipam.dataDir on DEL: a range or route edited since ADD is its warning."""
    node = bridge(tmp_path)
    netns = node.sandbox("v2", "pod1")
    conf = node.conf()
    node.add(conf, "pod1", netns)
    edited = {**conf, "ipam": {**conf["ipam"], "subnet": "10.244.4.0/33", "routes": "0.0.0.0/0"}}
    node.run("ADD", edited, "pod2", node.sandbox("v2", "pod2")).failed(7, "ipam.routes")
    run = node.run("DEL", edited, "pod1", netns)
    assert run.ok, (run.out, run.stderr)
    assert "host-local: warning: DEL ignores ipam.subnet" in run.stderr and "DEL ignores ipam.routes" in run.stderr
    node.assert_clean("pod1")
    # Without its dataDir host-local cannot find the address: code 7 saying so; the endpoint half
    # is still done, and the runtime's retry with a fixed config releases the address.
    node.add(conf, "pod1", netns)
    run = node.run("DEL", {**conf, "ipam": {**conf["ipam"], "dataDir": ["C:", "var"]}}, "pod1", netns)
    run.failed(7, "DEL cannot identify the store holding the pod's addresses", "ipam.dataDir")
    assert "pod1_cbr0" not in node.endpoints() and "pod1" in node.ip_files().values()
    assert node.run("DEL", conf, "pod1", netns).ok
    node.assert_clean("pod1")


def _drop_network(node: Node) -> None:
    """What an HNS restart does to a non-persistent network: it is gone with its endpoints."""
    node.hnsctl("network", "delete", node.network)


def _drop_endpoint(node: Node, cid: str, netns: str) -> None:
    if netns != "none":
        node.hnsctl("namespace", "detach", netns, f"{cid}_{node.network}")
    node.hnsctl("endpoint", "delete", f"{cid}_{node.network}")


def _release_ip(node: Node, cid: str, netns: str) -> None:
    for path in (node.ipam_dir / node.network).iterdir():
        if path.is_file() and path.read_bytes().startswith(cid.encode()):
            path.unlink()


def _drop_sandbox(node: Node, cid: str, netns: str) -> None:
    """The runtime removed the sandbox first: the namespace (V2) or the pause container (V1)."""
    if netns == "none":
        node.hnsctl("container", "delete", cid)
    else:
        node.hnsctl("namespace", "detach", netns, f"{cid}_{node.network}")
        node.hnsctl("namespace", "delete", netns)


NODE_STATES = {
    "network-gone": lambda node, cid, netns: _drop_network(node),
    "endpoint-gone-ip-reserved": _drop_endpoint,
    "ip-released-endpoint-left": _release_ip,
    "sandbox-gone": _drop_sandbox,
}


@pytest.mark.parametrize("api", ["v1", "v2"])
@pytest.mark.parametrize("state", sorted(NODE_STATES))
@pytest.mark.parametrize("make", [bridge, overlay], ids=["win-bridge", "win-overlay"])
def test_del_in_every_node_state_succeeds_and_leaves_nothing(tmp_path, make, state, api):
    node = make(tmp_path)
    netns = node.sandbox(api, "pod1")
    conf = node.conf()
    node.add(conf, "pod1", netns)
    NODE_STATES[state](node, "pod1", netns)
    for _ in range(2):
        run = node.run("DEL", conf, "pod1", netns)
        assert run.ok, (state, run.out, run.stderr)
    node.assert_clean("pod1")
