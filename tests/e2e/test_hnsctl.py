"""``hnsctl`` run as a process against the simulator, as a user (or the demo) runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CONSOLE = REPO / ".venv" / "bin" / "hnsctl"


@pytest.fixture
def hnsctl(tmp_path: Path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("LIBHNS_")}
    env.update({"LIBHNS_BACKEND": "sim", "LIBHNS_SIM_DIR": str(tmp_path / "hns"), "PYTHONPATH": str(REPO)})

    def run(*args: str, ok: bool = True, extra_env: dict | None = None):
        proc = subprocess.run(
            [sys.executable, "-m", "tools.hnsctl", *args],
            cwd=tmp_path,
            env={**env, **(extra_env or {})},
            capture_output=True,
            text=True,
            timeout=30,
        )
        if ok:
            assert proc.returncode == 0, proc.stderr
        return proc

    run.env = env  # type: ignore[attr-defined]
    return run


def test_flannel_style_setup_and_dump(hnsctl):
    out = hnsctl(
        "network",
        "create",
        "vxlan0",
        "--type",
        "Overlay",
        "--subnet",
        "10.244.2.0/24",
        "--adapter",
        "Ethernet",
        "--management-ip",
        "192.168.1.10",
        "--vsid",
        "4097",
        "--vxlan-port",
        "4789",
        "-o",
        "json",
    )
    net = json.loads(out.stdout)
    assert net["Type"] == "Overlay" and net["Flags"] == 8
    assert {"Type": "ProviderAddress", "Settings": {"ProviderAddress": "192.168.1.10"}} in net["Policies"]
    assert {"Type": "NetAdapterName", "Settings": {"NetworkAdapterName": "Ethernet"}} in net["Policies"]
    subnet = net["Ipams"][0]["Subnets"][0]
    assert subnet["Policies"] == [{"Type": "VSID", "Settings": {"IsolationId": 4097}}]
    assert subnet["Routes"] == [{"NextHop": "10.244.2.1", "DestinationPrefix": "0.0.0.0/0"}]

    hnsctl(
        "network",
        "create",
        "cbr0",
        "--type",
        "l2bridge",
        "--subnet",
        "10.244.1.0/24",
        "--gateway",
        "10.244.1.1",
        "--adapter",
        "Ethernet",
    )
    ep = json.loads(
        hnsctl(
            "endpoint", "create", "cbr0_ep", "--network", "cbr0", "--ip", "10.244.1.2", "--host", "-o", "json"
        ).stdout
    )
    assert ep["IpConfigurations"] == [{"IpAddress": "10.244.1.2", "PrefixLength": 24}]
    v1 = json.loads(hnsctl("endpoint", "show", "cbr0_ep", "--v1", "-o", "json").stdout)
    assert v1["State"] == 2 and v1["VirtualNetworkName"] == "cbr0"

    ns_id = hnsctl("namespace", "create").stdout.strip()
    hnsctl("endpoint", "create", "pod", "--network", "vxlan0")
    hnsctl("namespace", "attach", ns_id, "pod")

    dump = json.loads(hnsctl("dump", "-o", "json").stdout)
    assert sorted(dump) == ["endpoints", "loadbalancers", "namespaces", "networks"]
    assert sorted(n["Name"] for n in dump["networks"]) == ["cbr0", "vxlan0"]
    assert sorted(e["Name"] for e in dump["endpoints"]) == ["cbr0_ep", "pod"]
    [ns] = dump["namespaces"]
    assert ns["ID"] == ns_id and ns["Resources"][0]["Type"] == "Endpoint"

    table = hnsctl("network", "list").stdout
    assert table.splitlines()[0].split() == ["ID", "NAME", "TYPE", "SUBNETS", "MANAGEMENT-IP"]
    assert "192.168.1.10" in table
    v1nets = json.loads(hnsctl("network", "list", "--v1", "-o", "json").stdout)
    assert sorted(n["Type"] for n in v1nets) == ["l2bridge", "overlay"]
    assert "pod" in hnsctl("endpoint", "list", "--network", "vxlan0").stdout
    assert "cbr0_ep" not in hnsctl("endpoint", "list", "--network", "vxlan0").stdout


def test_errors_are_one_line_without_traceback(hnsctl):
    hnsctl("network", "create", "cbr0", "--subnet", "10.244.1.0/24")
    hnsctl("endpoint", "create", "e", "--network", "cbr0")
    cases = [
        (("network", "create", "cbr0", "--subnet", "10.9.0.0/24"), 1, "0x803B0010"),
        (("endpoint", "create", "x", "--network", "cbr0", "--ip", "10.9.9.9"), 1, "0x803B002F"),
        (("network", "show", "nope"), 1, "not found"),
        (("network", "create", "x", "--type", "Bogus"), 2, "unknown network type"),
        (("network", "create", "x", "--subnet", "300.0.0.0/8"), 2, "not a CIDR"),
        (("frobnicate",), 2, "invalid choice"),
        (("container", "list"), 2, "only on the simulator"),
    ]
    for args, code, text in cases:
        extra = {"LIBHNS_BACKEND": "hcn"} if args[0] == "container" else None
        proc = hnsctl(*args, ok=False, extra_env=extra)
        assert proc.returncode == code, (args, proc.stderr)
        assert text in proc.stderr, (args, proc.stderr)
        first, *usage = proc.stderr.strip().splitlines()
        assert text in first and first.count("hnsctl") <= 2, proc.stderr  # "hnsctl network create: ..."
        parse_error = code == 2 and args[0] != "container"  # the container refusal is the command's own
        assert (usage[:1] and usage[0].startswith("usage: hnsctl")) if parse_error else not usage, proc.stderr
        assert "Traceback" not in proc.stderr


def test_faults_reach_hnsctl(hnsctl):
    proc = hnsctl("network", "create", "x", ok=False, extra_env={"LIBHNS_SIM_FAULTS": "HcnCreateNetwork=0x80070005"})
    assert proc.returncode == 1 and "E_ACCESSDENIED" in proc.stderr


def test_containers_and_version(hnsctl):
    hnsctl("container", "create", "abc")
    assert "abc" in hnsctl("container", "list").stdout
    assert json.loads(hnsctl("container", "list", "-o", "json").stdout)[0]["Id"] == "abc"
    hnsctl("container", "delete", "abc")
    assert hnsctl("container", "delete", "abc", ok=False).returncode == 1
    ver = json.loads(hnsctl("version", "-o", "json", extra_env={"LIBHNS_SIM_VERSION": "11.10"}).stdout)
    assert (ver["Major"], ver["Minor"]) == (11, 10) and ver["Features"]["dual_stack"] is True
    assert "\nHNS 13.2\n" in hnsctl("version").stdout


@pytest.mark.skipif(not CONSOLE.exists(), reason="console script not installed (run make venv)")
def test_console_script(hnsctl, tmp_path):
    proc = subprocess.run(
        [str(CONSOLE), "dump", "-o", "json"], env=hnsctl.env, cwd=tmp_path, capture_output=True, text=True, timeout=30
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"networks": [], "endpoints": [], "namespaces": [], "loadbalancers": []}


def test_dual_stack_network_create(hnsctl):
    """One IPv4 and one IPv6 --subnet give a dual-stack L2Bridge, each with its family's default route."""
    net = json.loads(
        hnsctl(
            "network",
            "create",
            "cbr0",
            "--subnet",
            "10.244.1.0/24",
            "--subnet",
            "fd00:1::/64",
            "--gateway",
            "fd00:1::fe",
            "-o",
            "json",
        ).stdout
    )
    assert net["Ipams"][0]["Subnets"] == [
        {"IpAddressPrefix": "10.244.1.0/24", "Routes": [{"NextHop": "10.244.1.1", "DestinationPrefix": "0.0.0.0/0"}]},
        {"IpAddressPrefix": "fd00:1::/64", "Routes": [{"NextHop": "fd00:1::fe", "DestinationPrefix": "::/0"}]},
    ]
    v1 = json.loads(
        hnsctl(
            "network",
            "create",
            "v1net",
            "--v1",
            "--subnet",
            "10.244.2.0/24",
            "--subnet",
            "fd00:2::/64",
            "--adapter",
            "Ethernet",
            "-o",
            "json",
        ).stdout
    )
    assert [(s["AddressPrefix"], s["GatewayAddress"]) for s in v1["Subnets"]] == [
        ("10.244.2.0/24", "10.244.2.1"),
        ("fd00:2::/64", "fd00:2::1"),
    ]
    assert v1["NetworkAdapterName"] == "Ethernet"
    for args, text in [
        (("--subnet", "10.0.0.0/24", "--subnet", "10.1.0.0/24"), "one --subnet per IP family"),
        (("--subnet", "10.0.0.0/24", "--gateway", "fd00::1"), "needs a --subnet of its IP family"),
        (("--subnet", "10.0.0.0/24", "--gateway", "10.9.9.9"), "is not in 10.0.0.0/24"),
    ]:
        proc = hnsctl("network", "create", "bad", *args, ok=False)
        assert proc.returncode == 2 and text in proc.stderr, (args, proc.stderr)


def test_restart_drops_non_persistent_networks_and_their_endpoints(hnsctl):
    hnsctl("network", "create", "vxlan0", "--type", "Overlay", "--subnet", "10.244.2.0/24")  # Flags 8, as flanneld
    hnsctl("network", "create", "cbr0", "--subnet", "10.244.1.0/24")
    ns_id = hnsctl("namespace", "create").stdout.strip()
    hnsctl("endpoint", "create", "pod", "--network", "vxlan0")
    hnsctl("namespace", "attach", ns_id, "pod")
    hnsctl("endpoint", "create", "keep", "--network", "cbr0")
    assert json.loads(hnsctl("restart", "-o", "json").stdout) == {"droppedNetworks": ["vxlan0"]}
    dump = json.loads(hnsctl("dump", "-o", "json").stdout)
    assert [n["Name"] for n in dump["networks"]] == ["cbr0"]
    assert [e["Name"] for e in dump["endpoints"]] == ["keep"]
    assert dump["namespaces"][0].get("Resources", []) == []
    assert "dropped: none" in hnsctl("restart").stdout
    proc = hnsctl("restart", ok=False, extra_env={"LIBHNS_BACKEND": "hcn"})
    assert proc.returncode == 2 and "only on the simulator" in proc.stderr


def test_management_ip_appears_after_the_configured_delay(hnsctl):
    """The delay is long beside a process start on a loaded machine: the first reads come well
    before it ends, the last after it."""
    import time

    delay = 4.0
    slow = {"LIBHNS_SIM_MGMT_DELAY": str(delay)}
    began = time.monotonic()
    hnsctl("network", "create", "vxlan0", "--type", "Overlay", "--subnet", "10.244.2.0/24", extra_env=slow)
    hnsctl("network", "create", "cbr0", "--subnet", "10.244.1.0/24", extra_env=slow)
    created = time.monotonic()
    show = lambda *a: json.loads(hnsctl("network", "show", *a, "-o", "json").stdout)  # noqa: E731 - shorthand for the asserts that follow
    assert not [p for p in show("vxlan0")["Policies"] if p["Type"] == "ProviderAddress"]
    assert "ManagementIP" not in show("cbr0", "--v1")
    assert time.monotonic() - began < delay, "the reads above came too late to see the delay"
    time.sleep(max(0.0, created + delay + 0.2 - time.monotonic()))
    assert {"Type": "ProviderAddress", "Settings": {"ProviderAddress": "10.127.130.36"}} in show("vxlan0")["Policies"]
    assert show("cbr0", "--v1")["ManagementIP"] == "10.127.130.36"
    proc = hnsctl("network", "list", ok=False, extra_env={"LIBHNS_SIM_MGMT_DELAY": "soon"})
    assert proc.returncode == 1 and "LIBHNS_SIM_MGMT_DELAY" in proc.stderr


def test_a_network_goes_with_its_endpoints(hnsctl):
    """As on HNS, through either API: deleting a network that still has endpoints deletes them
    too, and hnsctl says how many went."""
    for v1 in ((), ("--v1",)):
        hnsctl("network", "create", "cbr0", "--subnet", "10.244.1.0/24")
        hnsctl("endpoint", "create", "e", "--network", "cbr0")
        assert "and its 1 endpoint(s)" in hnsctl("network", "delete", "cbr0", *v1).stdout, v1
        assert json.loads(hnsctl("dump", "-o", "json").stdout)["endpoints"] == [], v1
    hnsctl("network", "create", "cbr0", "--subnet", "10.244.1.0/24")
    assert "endpoint" not in hnsctl("network", "delete", "cbr0").stdout


def test_load_balancers_policy_lists_and_remote_endpoints(hnsctl):
    """kube-proxy's objects as hnsctl shows them: a remote endpoint is marked in both views, a
    load balancer made on the simulator is listed, shown and deleted, and is also a V1 policy
    list; a policy list HNS does not serve is an error naming the call, not an empty table."""
    hnsctl("network", "create", "vxlan0", "--type", "Overlay", "--subnet", "10.244.2.0/24")
    local = json.loads(hnsctl("endpoint", "create", "pod", "--network", "vxlan0", "-o", "json").stdout)
    hnsctl("endpoint", "create", "remote_10.244.2.9", "--network", "vxlan0", "--ip", "10.244.2.9", "--remote")
    for view in ((), ("--v1",)):
        rows = {line.split()[1]: line.split() for line in hnsctl("endpoint", "list", *view).stdout.splitlines()[1:]}
        assert rows["remote_10.244.2.9"][-1] == "remote" and rows["pod"][-1] != "remote", view
    v1 = {e["Name"]: e for e in json.loads(hnsctl("endpoint", "list", "--v1", "-o", "json").stdout)}
    assert v1["remote_10.244.2.9"]["IsRemoteEndpoint"] is True and not v1["pod"].get("IsRemoteEndpoint")
    lb = json.loads(
        hnsctl(
            "loadbalancer", "create", "--endpoint", "pod", "--endpoint", "remote_10.244.2.9",
            "--vip", "10.96.0.10", "--protocol", "udp", "--port", "53", "-o", "json",
        ).stdout
    )  # fmt: skip
    assert lb["PortMappings"] == [{"Protocol": 17, "InternalPort": 53, "ExternalPort": 53, "Flags": 0}]
    assert lb["HostComputeEndpoints"][0] == local["ID"]
    table = hnsctl("loadbalancer", "list").stdout.splitlines()
    assert table[0].split() == ["ID", "FRONTEND", "PORTS", "SOURCE-VIP", "BACKENDS"]
    assert table[1].split()[:3] == [lb["ID"], "10.96.0.10", "53->53/udp"]
    assert json.loads(hnsctl("loadbalancer", "show", lb["ID"], "-o", "json").stdout) == lb
    assert [d["ID"] for d in json.loads(hnsctl("dump", "-o", "json").stdout)["loadbalancers"]] == [lb["ID"]]
    (listed,) = json.loads(hnsctl("policylist", "list", "-o", "json").stdout)
    assert listed == json.loads(hnsctl("policylist", "show", lb["ID"], "-o", "json").stdout)
    assert listed["References"][0] == f"/endpoints/{local['ID'].lower()}"
    assert hnsctl("policylist", "list").stdout.splitlines()[1].split() == [lb["ID"], "1"]
    refused = hnsctl(
        "policylist", "list", extra_env={"LIBHNS_SIM_FAULTS": "HNSCall:GET /policylists/=0x803B0015"}, ok=False
    )
    assert refused.returncode == 1 and "GET /policylists/" in refused.stderr
    hnsctl("loadbalancer", "delete", lb["ID"])
    assert json.loads(hnsctl("loadbalancer", "list", "-o", "json").stdout) == []
    missing = hnsctl("loadbalancer", "show", lb["ID"], ok=False)
    assert missing.returncode == 1 and "not found" in missing.stderr


def test_kube_proxys_service_objects_on_the_simulator(hnsctl):
    """What kube-proxy makes on an Overlay node, made by hnsctl for tests: a remote endpoint for a
    Service VIP (outside the network's subnets) and one for another node's pod with its provider
    address, in both views; a DSR ClusterIP and a NodePort load balancer; a second load balancer
    on a frontend already held is refused, naming HNS's error."""
    hnsctl("network", "create", "vxlan0", "--type", "Overlay", "--subnet", "10.244.2.0/24")
    pod = json.loads(hnsctl("endpoint", "create", "pod", "--network", "vxlan0", "-o", "json").stdout)
    vip = json.loads(
        hnsctl("endpoint", "create", "", "--network", "vxlan0", "--ip", "10.96.0.1", "--remote", "-o", "json").stdout
    )
    assert vip["IpConfigurations"] == [{"IpAddress": "10.96.0.1"}] and vip["Flags"] == 1
    for view, policy in (((), {"Type": "ProviderAddress", "Settings": {"ProviderAddress": "192.0.2.7"}}),
                         (("--v1",), {"Type": "PA", "PA": "192.0.2.7"})):  # fmt: skip
        ip = "10.244.7.5" if not view else "10.244.7.6"
        made = hnsctl(
            "endpoint", "create", f"remote_{ip}", "--network", "vxlan0", "--ip", ip, "--remote",
            "--provider-address", "192.0.2.7", *view, "-o", "json",
        )  # fmt: skip
        assert json.loads(made.stdout)["Policies"] == [policy], view
    usage = hnsctl("endpoint", "create", "x", "--network", "vxlan0", "--provider-address", "192.0.2.7", ok=False)
    assert usage.returncode == 2 and "--remote" in usage.stderr
    cluster_ip = json.loads(
        hnsctl(
            "loadbalancer",
            "create",
            "--endpoint",
            pod["ID"],
            "--vip",
            "10.96.0.1",
            "--port",
            "443",
            "--target-port",
            "6443",
            "--dsr",
            "-o",
            "json",
        ).stdout  # fmt: skip
    )
    assert cluster_ip["Flags"] == 1
    node_port = json.loads(
        hnsctl(
            "loadbalancer", "create", "--endpoint", "pod", "--port", "30080", "--local-routed-vip", "-o", "json"
        ).stdout
    )
    assert node_port["FrontendVIPs"] == [] and node_port["PortMappings"][0]["Flags"] == 2
    (elb,) = json.loads(hnsctl("policylist", "show", cluster_ip["ID"], "-o", "json").stdout)["Policies"]
    assert elb == {"Type": "ELB", "Protocol": 6, "InternalPort": 6443, "ExternalPort": 443, "VIPs": ["10.96.0.1"],
                   "IsDSR": True}  # fmt: skip
    again = hnsctl("loadbalancer", "create", "--endpoint", "pod", "--vip", "10.96.0.1", "--port", "443", ok=False)
    assert again.returncode == 1 and "The specified port already exists" in again.stderr, again.stderr
    hnsctl("policylist", "delete", cluster_ip["ID"], node_port["ID"])
    assert json.loads(hnsctl("loadbalancer", "list", "-o", "json").stdout) == []
