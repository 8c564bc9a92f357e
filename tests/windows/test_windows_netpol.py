"""NetworkPolicy from the first packet as a Windows node runs it: win-bridge.exe finds the node
agent's state at its Windows default (``%ProgramData%\\wincni\\netpol.json``), reads it through
the Windows file checks, and creates the endpoint with the rules through the fake DLLs.

The lane's node is shared by its modules (test_windows_lane's ``cluster`` made ``cbr0`` already):
this module's L2Bridge network has a name of its own, made here and deleted after."""

from __future__ import annotations

import json
from typing import Iterator

import pytest

from plugins.netpol import resources
from tools.wincni.netpol import state
from winenode import WineNode

NETWORK = "netpol0"
CONF = {
    "cniVersion": "1.0.0",
    "name": NETWORK,
    "type": "win-bridge",
    "ipam": {"type": "host-local", "subnet": "10.244.4.0/24"},
}
POLICY = {"metadata": {"namespace": "app", "name": "deny-in"}, "spec": {"podSelector": {}, "policyTypes": ["Ingress"]}}


@pytest.fixture(scope="module")
def cluster(node: WineNode) -> Iterator[WineNode]:
    node.bridge(NETWORK)
    try:
        yield node.lease()
    finally:
        node.hnsctl("network", "delete", NETWORK)


def test_an_add_takes_the_agents_rules_from_programdata(cluster: WineNode) -> None:
    node = cluster
    node.network = NETWORK
    cluster_doc = resources.read([{"metadata": {"name": "app", "labels": {}}}], [], [POLICY])
    target = node.path(r"C:\ProgramData\wincni\netpol.json")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(state.document(cluster_doc, "n1", ["10.127.0.4"])))
    pod = "IgnoreUnknown=1;K8S_POD_NAMESPACE=app;K8S_POD_NAME=p1"
    run = node.run("ADD", CONF, "netpol1", node.sandbox("v2", "netpol1"), CNI_ARGS=pod)
    assert run.ok, run.stderr
    [doc] = [e for e in node.hnsctl("endpoint", "list", "-o", "json") if e["Name"] == f"netpol1_{NETWORK}"]
    blocks = [p for p in doc["Policies"] if p["Type"] == "ACL" and p["Settings"]["Action"] == "Block"]
    assert [b["Settings"]["Direction"] for b in blocks] == ["In"]


@pytest.mark.parametrize("v1", [(), ("--v1",)], ids=["HcnModifyEndpoint", "HNSCall"])
def test_hnsctl_exe_sets_an_endpoints_acls_through_the_dlls(cluster: WineNode, v1: tuple) -> None:
    """The ctypes path of an endpoint modify (and of V1's update), as the agent's will take it."""
    node = cluster
    name = f"acls{len(v1)}_{NETWORK}"
    node.hnsctl("endpoint", "create", name, "--network", NETWORK, "--ip", f"10.244.4.{40 + len(v1)}")
    acls = state.document(resources.read([], [], []), "n1", ["10.127.0.4"])["closed"]
    node.path(r"C:\k\acls.json").write_text(json.dumps(acls))
    shown = node.hnsctl_exe("endpoint", "acls", name, r"C:\k\acls.json", *v1)
    assert len([p for p in shown["Policies"] if p["Type"] == "ACL"]) == len(acls)
    [held] = [e for e in node.hnsctl("endpoint", "list", "-o", "json") if e["Name"] == name]
    assert [p for p in held["Policies"] if p["Type"] == "ACL"] == acls
