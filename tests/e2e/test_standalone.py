"""Standalone mode at process level: no flanneld, the plugin creates its HNS network from the
config's ``network`` section — once per node however many ADDs race, never replacing a network of
another shape, and again after an HNS restart dropped it."""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from hnsnode import SUBNET, Node, creates
from libhns.sim import Simulator

SECTION = {"subnet": SUBNET, "adapter": "Ethernet"}


def standalone(tmp_path, plugin: str, name: str = "") -> Node:
    """A node with no flanneld: no HNS network until the plugin makes one (named ``name``, by
    default flanneld's name for the plugin's network)."""
    node = Node(tmp_path, plugin)
    node.network = name or ("cbr0" if plugin == "win-bridge" else "vxlan0")
    node.env["WINCNI_LOCK_DIR"] = str(tmp_path / "locks")  # the node-wide network lock lives here
    node.env["WINCNI_LOG_FILE"] = str(tmp_path / "wincni.log")
    return node


pytestmark = pytest.mark.node("win-bridge", "win-overlay", build=standalone)  # each test taking `node` on both


def network_creates(calls: list[dict]) -> list[dict]:
    """The network documents HNS received (HcnCreateNetwork settings, V1 POST /networks/ bodies)."""
    return [
        c["request"]
        for c in calls
        if c["op"] == "HcnCreateNetwork"
        or (c["op"] == "HNSCall" and c["method"] == "POST" and c["path"] == "/networks/")
    ]


def networks(node: Node) -> list[dict]:
    return node.hnsctl("network", "list", "-o", "json")


def events(node: Node, kind: str) -> list[dict]:
    path = node.root / "wincni.log"
    lines = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
    return [e for e in lines if e.get("event") == kind]


EXPECTED = {
    ("win-bridge", "v2"): {
        "SchemaVersion": {"Major": 2, "Minor": 0},
        "Name": "cbr0",
        "Type": "L2Bridge",
        "Policies": [{"Type": "NetAdapterName", "Settings": {"NetworkAdapterName": "Ethernet"}}],
        "Ipams": [
            {
                "Type": "Static",
                "Subnets": [
                    {"IpAddressPrefix": SUBNET, "Routes": [{"NextHop": "10.244.4.1", "DestinationPrefix": "0.0.0.0/0"}]}
                ],
            }
        ],
        "Flags": 8,
    },
    ("win-bridge", "v1"): {
        "Name": "cbr0",
        "Type": "l2bridge",
        "Policies": [],
        "NetworkAdapterName": "Ethernet",
        "Subnets": [{"AddressPrefix": SUBNET, "GatewayAddress": "10.244.4.1", "Policies": []}],
        "Flags": 8,
    },
    ("win-overlay", "v2"): {
        "SchemaVersion": {"Major": 2, "Minor": 0},
        "Name": "vxlan0",
        "Type": "Overlay",
        "Policies": [
            {"Type": "NetAdapterName", "Settings": {"NetworkAdapterName": "Ethernet"}},
            {"Type": "VxlanPort", "Settings": {"Port": 4789}},
        ],
        "Ipams": [
            {
                "Type": "Static",
                "Subnets": [
                    {
                        "IpAddressPrefix": SUBNET,
                        "Routes": [{"NextHop": "10.244.4.1", "DestinationPrefix": "0.0.0.0/0"}],
                        "Policies": [{"Type": "VSID", "Settings": {"IsolationId": 4096}}],
                    }
                ],
            }
        ],
        "Flags": 8,
    },
    ("win-overlay", "v1"): {
        "Name": "vxlan0",
        "Type": "overlay",
        "Policies": [],  # no VxlanPort: an HCN policy
        "NetworkAdapterName": "Ethernet",
        "Subnets": [
            {"AddressPrefix": SUBNET, "GatewayAddress": "10.244.4.1", "Policies": [{"Type": "VSID", "VSID": 4096}]}
        ],
        "Flags": 8,
    },
}


@pytest.mark.parametrize("api", ["v1", "v2"])
def test_the_first_add_creates_the_network_as_flanneld_would_and_del_keeps_it(node, api):
    conf = node.conf(network=SECTION, apiVersion=1 if api == "v1" else 2)
    netns = node.sandbox(api, "pod1")
    result = node.add(conf, "pod1", netns)
    calls = node.journal()
    assert network_creates(calls) == [EXPECTED[node.plugin, api]]
    assert result["ips"][0]["address"].startswith("10.244.4.")
    [net] = networks(node)
    assert net["Name"] == node.network
    if node.plugin == "win-overlay" and api == "v2":  # flanneld adds HostRoute once the PA is up
        assert any(p["Type"] == "HostRoute" for p in net["Policies"])
    [ready] = events(node, "network-ready")
    assert ready["managementIP"] == "10.127.130.36" and ready["waited"].endswith("s")
    host_ep = node.endpoints().get(f"{node.network}_ep")
    if node.plugin == "win-bridge":  # flanneld's cbr0_ep: the host on the bridge, every pod's gateway
        assert host_ep["IPAddress"] == "10.244.4.2" and host_ep["State"] == 2  # attached (to the host)
        assert result["ips"][0]["gateway"] == "10.244.4.2"
    else:
        assert host_ep is None
    assert node.run("CHECK", {**conf, "prevResult": result}, "pod1", netns).ok
    for _ in range(2):
        assert node.run("DEL", conf, "pod1", netns).ok
    node.assert_clean("pod1")
    assert [n["ID"] for n in networks(node)] == [net["ID"]]  # never deleted on DEL
    assert (f"{node.network}_ep" in node.endpoints()) == (node.plugin == "win-bridge")
    # The next pod uses it: no second creation, and no more HNS calls than with flanneld's network.
    netns2 = node.sandbox(api, "pod2")
    node.journal()
    node.add(conf, "pod2", netns2)
    assert network_creates(node.journal()) == []


def test_dual_stack_l2bridge_network_on_hcn(tmp_path):
    node = standalone(tmp_path, "win-bridge", "cbr0")
    conf = node.conf(
        network={"subnet": [SUBNET, "fd00:4::/64"]},
        apiVersion=2,
        ipam={
            "type": "host-local",
            "dataDir": str(node.ipam_dir),
            "ranges": [[{"subnet": SUBNET}], [{"subnet": "fd00:4::/64"}]],
        },
    )
    result = node.add(conf, "pod1", node.sandbox("v2", "pod1"))
    [doc] = network_creates(node.journal())
    assert [s["IpAddressPrefix"] for s in doc["Ipams"][0]["Subnets"]] == [SUBNET, "fd00:4::/64"]
    assert sorted(ip["address"].split("/")[0][:5] for ip in result["ips"]) == ["10.24", "fd00:"]
    # An HNS without dual-stack (before 11.10) is told before an address is taken.
    other = standalone(tmp_path / "old", "win-bridge", "cbr0")
    run = other.run("ADD", conf, "pod1", other.sandbox("v2", "pod1"), LIBHNS_SIM_VERSION="10.4")
    run.failed(7, "network.subnet", "11.10")
    assert other.ipam_calls() == [] and networks(other) == []


def test_twenty_first_adds_at_once_create_one_network_and_twenty_endpoints(node):
    conf = node.conf(network=SECTION)
    jobs = [("ADD", conf, f"pod{i}", node.sandbox("v2", f"pod{i}")) for i in range(20)]
    # HNS is busy (its store locked) while the 20 start, so they all reach find-or-create
    # before any network exists, as on a node that just booted with pods scheduled.
    with ThreadPoolExecutor(1) as pool, Simulator.from_env(node.env).store.transaction():
        pending = pool.submit(node.run_many, jobs)
        time.sleep(2)
    runs = pending.result()
    assert all(r.ok for r in runs), [r.out for r in runs if not r.ok]
    assert len(network_creates(node.journal())) == 1
    [net] = networks(node)
    eps = [
        e
        for e in node.endpoints_v2().values()
        if e["HostComputeNetwork"] == net["ID"] and e["Name"] != f"{node.network}_ep"
    ]
    assert len(eps) == 20
    assert len({r.out["ips"][0]["address"] for r in runs}) == 20


def test_a_creation_race_across_locks_is_settled_by_hns_already_exists(tmp_path):
    """ADDs that do not share the lock (separate lock folders): HNS answers all but one with
    already-exists, and they re-find and use the winner's network."""
    node = standalone(tmp_path, "win-bridge", "cbr0")
    conf = node.conf(network=SECTION)
    jobs = []
    for i in range(12):
        (tmp_path / f"t{i}").mkdir()
        jobs.append((i, node.sandbox("v2", f"pod{i}")))
    with ThreadPoolExecutor(12) as pool, Simulator.from_env(node.env).store.transaction():
        pending = [
            pool.submit(node.run, "ADD", conf, f"pod{i}", netns, WINCNI_LOCK_DIR=str(tmp_path / f"t{i}"))
            for i, netns in jobs
        ]
        time.sleep(3)
    runs = [p.result() for p in pending]
    assert all(r.ok for r in runs), [r.out for r in runs if not r.ok]
    assert len(networks(node)) == 1
    tried = network_creates(node.journal())
    assert len(tried) >= 2  # HNS was busy while they started: several found no network
    assert len(events(node, "network-created")) == 1
    assert len(events(node, "network-create-lost")) == len(tried) - 1


def test_an_hns_restart_drops_the_network_and_the_next_add_recreates_it(node):
    conf = node.conf(network=SECTION)
    netns = node.sandbox("v2", "pod1")
    node.add(conf, "pod1", netns)
    [before] = networks(node)
    assert node.network in node.hnsctl("restart")
    assert networks(node) == [] and node.endpoints_v2() == {}
    # The old pod's DEL still releases its address; a new pod's ADD brings the network back.
    assert node.run("DEL", conf, "pod1", netns).ok
    node.assert_clean("pod1")
    node.add(conf, "pod2", node.sandbox("v2", "pod2"))
    [after] = networks(node)
    assert after["ID"] != before["ID"] and after["Name"] == node.network


def test_a_network_whose_set_up_fails_is_deleted_and_the_next_add_starts_over(tmp_path):
    node = standalone(tmp_path, "win-bridge", "cbr0")
    conf = node.conf(network=SECTION)
    netns = node.sandbox("v2", "pod1")
    run = node.fault_run("ADD", conf, "pod1", netns, "HNSCall:POST /endpoints/*/attach#1=0x803B0014")
    run.failed(100, "creating HNS network cbr0", "HCN_E_ENDPOINT_ALREADY_ATTACHED")
    assert networks(node) == [] and node.endpoints() == {}
    assert node.ipam_calls() == []  # the network comes before the address
    node.add(conf, "pod1", netns)
    assert [n["Name"] for n in networks(node)] == ["cbr0"] and "cbr0_ep" in node.endpoints()


def test_a_persistent_network_survives_an_hns_restart(tmp_path):
    node = standalone(tmp_path, "win-bridge", "cbr0")
    conf = node.conf(network={**SECTION, "persistent": True})
    node.add(conf, "pod1", node.sandbox("v2", "pod1"))
    [doc] = network_creates(node.journal())
    assert "Flags" not in doc
    assert "none" in node.hnsctl("restart")
    assert [n["Name"] for n in networks(node)] == ["cbr0"]


def test_the_add_waits_for_the_management_ip_of_a_slow_network(node):
    conf = node.conf(network=SECTION)
    run = node.run("ADD", conf, "pod1", node.sandbox("v2", "pod1"), LIBHNS_SIM_MGMT_DELAY="1.2")
    assert run.ok, run.out
    [ready] = events(node, "network-ready")
    assert 1.0 <= float(ready["waited"].rstrip("s")) < 10


def test_an_existing_network_of_another_shape_is_never_reused_or_replaced(tmp_path):
    node = Node(tmp_path, "win-bridge").bridge()  # flanneld's cbr0 on 10.244.4.0/24
    conf = node.conf(
        network={"subnet": "10.244.9.0/24"},
        ipam={"type": "host-local", "subnet": "10.244.9.0/24", "dataDir": str(node.ipam_dir)},
    )
    run = node.run("ADD", conf, "pod1", node.sandbox("v2", "pod1"))
    run.failed(7, "cbr0", "L2Bridge 10.244.4.0/24", "10.244.9.0/24", "never replaces")
    assert node.ipam_calls() == [] and not creates(node.journal())
    node.run("CHECK", conf, "pod1", node.sandbox("v2", "pod1")).failed(7, "never replaces")  # and CHECK, STATUS
    node.run("STATUS", {**conf, "cniVersion": "1.1.0"}).failed(7, "never replaces")
    assert len(networks(node)) == 1
    # A section that matches flanneld's network just uses it.
    assert node.run("ADD", node.conf(network={"subnet": SUBNET}), "pod1", node.sandbox("v2", "pod1")).ok


def test_without_a_network_section_a_missing_network_is_still_try_again_later(tmp_path):
    node = standalone(tmp_path, "win-bridge", "cbr0")
    run = node.run("ADD", node.conf(), "pod1", node.sandbox("v2", "pod1"))
    run.failed(11, "cbr0", "flanneld", '"network" section')
    assert networks(node) == [] and node.ipam_calls() == []


def test_status_is_ready_before_the_first_add_in_standalone_mode(tmp_path):
    node = standalone(tmp_path, "win-bridge", "cbr0")
    assert node.run("STATUS", node.conf("1.1.0", network=SECTION)).ok
    node.run("STATUS", node.conf("1.1.0")).failed(50, "cbr0")
    assert networks(node) == []


@pytest.mark.parametrize(
    "section,field",
    [
        ({"subnet": "10.244.4.0/33"}, "network.subnet"),
        ({}, "network"),
        ({"subnet": SUBNET, "adapter": ""}, "network.adapter"),
        ({"subnet": SUBNET, "persistent": "yes"}, "network.persistent"),
        ({"subnet": SUBNET, "mtu": 1450}, "network"),
        ({"subnet": SUBNET, "gateway": "10.244.5.1"}, "network.gateway"),
        ({"subnet": [SUBNET, SUBNET]}, "network.subnet"),
        ({"subnet": SUBNET, "drMac": "nope"}, "network.drMac"),
        ("10.244.4.0/24", "network"),
    ],
)
def test_bad_network_sections_are_code_7_and_nothing_runs(node, section, field):
    node.assert_bad_inputs([({"network": section}, field)])
    assert networks(node) == []


def test_an_ipam_subnet_outside_the_network_is_refused_before_anything_happens(node):
    node.assert_bad_inputs([({"network": {"subnet": "10.244.9.0/24"}}, "ipam.subnet")])
    assert networks(node) == []


@pytest.mark.parametrize(
    "section,field,words",
    [
        ({"subnet": SUBNET, "vni": 4095}, "network.vni", ("4096", "Linux flannel", "4789")),
        ({"subnet": SUBNET, "vxlanPort": 8472}, "network.vxlanPort", ("4789", "Linux flannel")),
    ],
)
def test_vxlan_settings_linux_nodes_cannot_talk_to_are_refused(tmp_path, section, field, words):
    node = standalone(tmp_path, "win-overlay", "vxlan0")
    run = node.run("ADD", node.conf(network=section), "pod1", node.sandbox("v2", "pod1"))
    run.failed(7, field, *words)
    assert networks(node) == [] and node.ipam_calls() == []


def test_standalone_mode_costs_no_imports_once_its_network_exists(tmp_path):
    """Each pod's ADD pays for what it imports: with the network there, the ``network`` section
    may add only the module that reads it (tempfile, for one, costs ~20 ms)."""
    node = Node(tmp_path).bridge()
    node.env["WINCNI_LOCK_DIR"] = str(tmp_path / "locks")

    def modules(conf: dict, cid: str) -> set[str]:
        run = node.run("ADD", conf, cid, node.sandbox("v2", cid), PYTHONPROFILEIMPORTTIME="1")
        assert run.ok, run.out
        return {line.split("|")[-1].strip() for line in run.stderr.splitlines() if line.startswith("import time:")}

    plain = modules(node.conf(), "pod1")
    assert modules(node.conf(network=SECTION), "pod2") - plain == {"plugins.winnet.network"}
