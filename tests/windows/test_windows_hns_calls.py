"""The sweep's HNS reads as a Windows node makes them: ``wincni.exe reclaim`` through ctypes and the
fake DLLs, journaled (``LIBHNS_JOURNAL``), reads as many raw calls with 8 pod endpoints as with 2:
HNSCall's listings and one namespace enumeration, never an open, a query and a close per endpoint.
The network is this module's own (``calls52``): lane modules share one node."""

from __future__ import annotations

import json

import pytest

from libhns.client import open_clients
from winenode import WineNode

NETWORK = "calls52"
FOLDER = r"C:\k\calls52"


@pytest.fixture(scope="module")
def pods(node: WineNode):
    """The network, a config naming it, and a way to add pods (an endpoint in a live namespace)."""
    hcn, _ = open_clients({k: v for k, v in node.env.items() if k != "LIBHNS_JOURNAL"})
    subnet = {
        "IpAddressPrefix": "10.252.0.0/24",
        "Routes": [{"NextHop": "10.252.0.1", "DestinationPrefix": "0.0.0.0/0"}],
    }
    net = hcn.create_network({"Name": NETWORK, "Type": "L2Bridge", "Ipams": [{"Subnets": [subnet]}]})
    conf = {
        "cniVersion": "1.0.0",
        "name": NETWORK,
        "type": "win-bridge",
        "ipam": {"type": "host-local", "subnet": "10.252.0.0/24", "dataDir": FOLDER + r"\ipam"},
    }
    folder = node.path(FOLDER)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "10-calls52.conf").write_text(json.dumps(conf))
    made = [0]

    def add(count: int) -> None:
        for _ in range(count):
            made[0] += 1
            ip = f"10.252.0.{10 + made[0]}"
            ep = hcn.create_endpoint(
                net.id, {"Name": f"pod{made[0]}_{NETWORK}", "IpConfigurations": [{"IpAddress": ip}]}
            )
            hcn.namespace_add_endpoint(hcn.create_namespace().id, ep.id)

    return add


def sweep_calls(node: WineNode) -> list[str]:
    journal = node.path(FOLDER) / "journal.jsonl"
    journal.unlink(missing_ok=True)
    run = node.wine(
        node.exe("wincni"),
        "reclaim",
        "--cni-conf",
        FOLDER + r"\10-calls52.conf",
        "--runtime-endpoint",
        "none",
        LIBHNS_JOURNAL=FOLDER + r"\journal.jsonl",
    )
    assert run.returncode == 0, run.stderr.decode()
    return sorted(f"{c['op']} {c.get('path') or ''}" for c in map(json.loads, journal.read_text().splitlines()))


def test_the_sweep_reads_hns_in_as_many_calls_at_8_pods_as_at_2(node: WineNode, pods) -> None:
    pods(2)
    few = sweep_calls(node)
    pods(6)
    assert sweep_calls(node) == few
    assert "HNSCall /endpoints/" in few and not [c for c in few if c.startswith("HcnOpenNamespace")]
