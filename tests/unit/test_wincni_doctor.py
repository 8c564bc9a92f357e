"""``wincni doctor`` on simulated nodes: healthy passes; each misconfiguration fails its own check."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hnsnode import EXCEPTIONS, Node, lease_text, package_folder
from libhns.objects import HostComputeNetwork
from tools.wincni.cli.main import main
from tools.wincni.doctor.checks import registry as checks
from tools.wincni.doctor.checks.network import hns_network
from tools.wincni.doctor.checks.vip import source_vip
from tools.wincni.doctor.facts import NodeFacts
from tools.wincni.judge import config as judge
from tools.wincni.node.build import running_build
from tools.wincni.node.installed import MANIFEST
from tools.wincni.node.source import Problem

LEASE = lease_text("10.244.4.1/24")


def sim_node(
    root: Path, kind: str = "bridge", version: str | None = None, network: bool = True, vsid: int = 4096
) -> Node:
    """A healthy node as flanneld and kube-proxy leave it (bridge: cbr0, overlay: vxlan0); with
    ``network=False`` before flanneld made the HNS network."""
    node = Node(root, version=version)
    node.cni_conf = node.flannel_files(kind)
    if network:
        node.bridge(host_endpoint=False) if kind == "bridge" else node.overlay(vsid=vsid)
    return node


def failed(found: dict[str, dict], check_id: str, *words: str) -> dict:
    """Assert that exactly ``check_id`` failed (nothing else) and its message + fix name every word."""
    assert [k for k, c in found.items() if c["status"] == "fail"] == [check_id], found
    text = found[check_id]["message"] + " " + found[check_id]["fix"]
    for word in words:
        assert word in text, text
    assert found[check_id]["fix"]
    return found[check_id]


pytestmark = pytest.mark.node("bridge", "overlay", build=sim_node)  # each test taking `node` on both


@pytest.fixture
def bridge(tmp_path: Path) -> Node:
    return sim_node(tmp_path, "bridge")


@pytest.fixture
def overlay(tmp_path: Path) -> Node:
    return sim_node(tmp_path, "overlay")


#: kube-proxy's side of HNS (tools/wincni/proxychecks.py; tests/unit/test_wincni_doctor_checks_proxy.py).
PROXY_CHECKS = (
    "lb-backends",
    "policy-lists",
    "stale-remote-endpoints",
    "remote-endpoint-addresses",
    "duplicate-load-balancers",
    "dns-load-balancer",
    "old-network",
)
# Every check the doctor has (tests/unit/test_wincni_doctor_fixes.py breaks each and keeps its fix's promise).
CHECK_IDS = {
    "backend",
    "config",
    "plugins",
    "hns-network",
    "subnet-env",
    "exceptions",
    "reach",
    "net-conf",
    "vxlan",
    "source-vip",
    "hns-features",
    "ipam-store",
    "stale-endpoints",
    "pod-endpoints",
    "endpoint-state",
    "runtime-status",
    "build",
    "permissions",
} | set(PROXY_CHECKS)


def test_every_check_id_is_pinned() -> None:
    assert {c.id for c in checks.CHECKS} == CHECK_IDS


def test_healthy_node_passes_every_check(node: Node) -> None:
    found = node.doctor("--reach", "8.8.8.8", expect=0)
    assert {c["status"] for c in found.values()} == {"ok"}, found
    assert set(found) == CHECK_IDS  # every check listed, passing or not
    assert {c["run"] for c in found.values()} == {""}


def test_config_invalid_names_the_field(bridge: Node) -> None:
    bridge.cni_conf["delegate"]["loopbackDSR"] = "yes"
    failed(bridge.doctor(), "config", "loopbackDSR")


def test_config_absent_is_reported_not_raised(tmp_path: Path) -> None:
    node = sim_node(tmp_path)
    out, err = io.StringIO(), io.StringIO()
    rc = main(
        [
            "doctor",
            "--cni-conf",
            str(tmp_path / "nowhere"),
            "--cni-bin-dir",
            str(tmp_path / "nobin"),
            "--subnet-env",
            str(tmp_path / "none.env"),
            "--net-conf",
            str(node.bin),  # a directory
            "--source-vip",
            str(node.bin),
        ],
        out,
        err,
        node.env,
        platform="linux",
        cwd=str(tmp_path),
    )
    assert rc == 1 and err.getvalue() == ""
    text = out.getvalue()
    for words in (
        "FAIL  config",
        "does not exist",
        "FAIL  plugins",
        "--net-conf",
        "is a folder, not a regular file",
        "Traceback",
    ):
        assert (words in text) == (words != "Traceback"), text
    # what the failures hold up is said once, not as a fix line under each check it holds up
    waiting = [line for line in text.splitlines() if line.startswith("SKIP")]
    assert len(waiting) > 5 and "fix the failure above first" not in text, text
    said = [line for line in text.splitlines() if "checks were not checked because of the failures above" in line]
    assert len(said) == 1 and 0 < int(said[0].split()[0]) <= len(waiting), text


def test_plugins_missing_from_bin_dir(bridge: Node) -> None:
    (bridge.bin / "host-local").unlink()
    failed(bridge.doctor(), "plugins", "host-local")


@pytest.mark.parametrize(
    "spoil, words",
    [
        (
            lambda n: ((n.bin / "flannel").unlink(), (n.bin / "flannel").symlink_to(n.root / "elsewhere")),
            ("flannel is a symbolic link",),
        ),
        (lambda n: n.bin.chmod(0o777), ("writable by every user",)),
        (lambda n: (n.bin / "host-local").chmod(0o666), ("host-local is writable by",)),
    ],
)
def test_plugins_fails_a_launcher_others_could_swap_and_its_fix_line_works_as_printed(
    bridge: Node, tmp_path: Path, spoil, words: tuple
) -> None:
    spoil(bridge)
    check = failed(bridge.doctor(), "plugins", *words, "wincni install --from <the release zip>")
    _run_install_fix(bridge, tmp_path, check["fix"])
    assert bridge.doctor()["plugins"]["status"] == "ok"


def test_plugins_fails_a_contents_folder_the_manifest_does_not_vouch_for(bridge: Node, tmp_path: Path) -> None:
    rel = package_folder(tmp_path, "0.1.0-aaa-1")
    bridge.cni_bin, bridge.conf_dir = bridge.bin, bridge.conf_dir
    bridge.install("--from", str(rel))
    assert bridge.doctor()["plugins"]["status"] == "ok"
    (bridge.bin / "_wincni-0.1.0-aaa-1" / "python313.dll").write_text("payload")
    check = failed(bridge.doctor(), "plugins", "_wincni-0.1.0-aaa-1 is not the contents folder install laid")
    _run_install_fix(bridge, tmp_path, check["fix"])
    assert bridge.doctor()["plugins"]["status"] == "ok"
    assert (bridge.bin / "_wincni-0.1.0-aaa-1" / "python313.dll").read_text() == "python of 0.1.0-aaa-1"


def test_plugins_never_waits_on_a_fifo_in_a_contents_folder(bridge: Node, tmp_path: Path) -> None:
    """The digest opens without waiting and without following: a FIFO (or a link swapped in) in
    a ``_wincni-*`` folder of a bin dir others may write is a mismatch, not a doctor hung in open()."""
    import os
    import threading
    import time

    bridge.cni_bin, bridge.conf_dir = bridge.bin, bridge.conf_dir
    bridge.install("--from", str(package_folder(tmp_path, "0.1.0-aaa-1")))
    fifo = bridge.bin / "_wincni-0.1.0-aaa-1" / "plugins" / "pipe"
    os.mkfifo(fifo)
    unblock = threading.Timer(10, lambda: os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)))
    unblock.start()  # the old digest's open() returns only once a writer comes
    try:
        started = time.monotonic()
        failed(bridge.doctor(), "plugins", "_wincni-0.1.0-aaa-1 is not the contents folder install laid")
        assert time.monotonic() - started < 5
    finally:
        unblock.cancel()


def test_the_readiness_probe_leaves_the_contents_digest_to_the_full_doctor(bridge: Node, tmp_path: Path) -> None:
    """--quick runs every 30 s on every node: it hashes no contents folder (16 MiB each); the
    full doctor does."""
    bridge.cni_bin = bridge.bin
    bridge.install("--from", str(package_folder(tmp_path, "0.1.0-aaa-1")))
    (bridge.bin / "_wincni-0.1.0-aaa-1" / "python313.dll").write_text("payload")
    assert bridge.doctor("--quick")["plugins"]["status"] == "ok"
    failed(bridge.doctor(), "plugins", "_wincni-0.1.0-aaa-1 is not the contents folder install laid")
    bridge.bin.chmod(0o777)  # what is cheap to see, --quick still sees
    failed(bridge.doctor("--quick"), "plugins", "writable by every user")


def _run_install_fix(node: Node, tmp_path: Path, fix: str) -> None:
    """The fix line as printed, the package folder put where it says <the release zip>."""
    import shlex

    argv = shlex.split(fix.split(" (", 1)[0].replace("<the release zip>", str(package_folder(tmp_path, "0.1.0-aaa-1"))))
    assert argv[0] == "wincni"
    node.cni_bin = Path(argv[argv.index("--cni-bin-dir") + 1])
    node.conf_dir = Path(argv[argv.index("--cni-conf-dir") + 1])
    node.install(*argv[2:], dirs=False)


def test_hns_network_absent(bridge: Node) -> None:
    bridge.hnsctl("network", "delete", "cbr0")
    found = bridge.doctor()
    failed(found, "hns-network", "'cbr0'", "Waiting for the Network to be created")
    assert found["ipam-store"]["status"] == "not-checked"  # cannot be judged without the network


def test_hns_network_of_the_wrong_type(bridge: Node) -> None:
    bridge.cni_conf["delegate"]["type"] = "win-overlay"
    bridge.write_net_conf({"Backend": {"name": "cbr0", "type": "vxlan"}})
    found = bridge.doctor()
    assert found["hns-network"]["status"] == "fail" and "L2Bridge" in found["hns-network"]["message"]


def test_overlay_without_management_ip() -> None:
    """HNS fills ProviderAddress itself once the adapter has an IP; a network made too early lacks it."""
    network = HostComputeNetwork.from_json({"Name": "vxlan0", "Type": "Overlay", "Policies": []})
    check = hns_network(NodeFacts(name="vxlan0", delegate_type="win-overlay", network=network))
    assert check.status == "fail" and "ProviderAddress" in check.message and check.fix


def test_a_network_of_the_wrong_type_fails_even_when_the_config_does_not_load() -> None:
    """NodeFacts are built by hand: the delegate's flavor says which HNS types it needs."""
    from plugins.win_overlay.flavor import FLAVOR

    network = HostComputeNetwork.from_json({"Name": "vxlan0", "Type": "L2Bridge", "Policies": []})
    check = hns_network(
        NodeFacts(
            name="vxlan0",
            delegate_type="win-overlay",
            flavor=FLAVOR,
            network=network,
            conf_problem=Problem("bad", "fix it"),
        )
    )
    assert check.status == "fail" and "L2Bridge" in check.message and "Overlay" in check.message


def test_subnet_env_absent(bridge: Node) -> None:
    bridge.subnet_env.unlink()
    found = bridge.doctor()
    assert found["subnet-env"]["status"] == "fail" and "does not exist" in found["subnet-env"]["message"]
    assert found["config"]["status"] == "warn"  # the delegate cannot be built without the lease


def test_subnet_env_outside_the_hns_network(bridge: Node) -> None:
    bridge.lease("10.244.9.1/24")
    bridge.source_vip.write_text(json.dumps({"ip4": {"ip": "10.244.9.9/24"}}))  # kube-proxy already followed
    failed(bridge.doctor(), "subnet-env", "10.244.9.0/24", "cbr0")


def test_pods_of_an_earlier_lease_have_no_network(bridge: Node) -> None:
    """flanneld came back with another lease and made its network again (HNS deleted the pods'
    endpoints with the old one): pods still holding old addresses are named, however young."""
    store = bridge.ipam_dir / bridge.network
    store.mkdir(parents=True, exist_ok=True)
    (store / "10.244.9.7").write_bytes(b"oldpod\r\neth0")
    failed(bridge.doctor(), "subnet-env", "10.244.9.7 (oldpod)", "crictl rmp -f oldpod", "10.244.4.0/24")
    (store / "10.244.9.7").unlink()
    assert bridge.doctor()["subnet-env"]["status"] == "ok"


def test_exceptions_miss_the_service_cidr(node: Node) -> None:
    node.cni_conf["delegate"]["policies"][0]["Value"]["ExceptionList"] = ["10.244.0.0/16"]
    failed(node.doctor(), "exceptions", "10.96.0.0/12")


def test_exceptions_in_v2_shape_count(bridge: Node) -> None:
    bridge.cni_conf["delegate"]["policies"][0]["Value"] = {
        "Type": "OutBoundNAT",
        "Settings": {"Exceptions": EXCEPTIONS},
    }
    assert bridge.doctor(expect=0)["exceptions"]["status"] == "ok"


@pytest.mark.parametrize(
    "ip, status, word",
    [
        ("8.8.8.8", "ok", "is SNAT'ed"),
        ("10.96.0.10", "ok", "keeps the pod IP"),
        ("10.127.130.1", "fail", "not SNAT'ed"),
    ],
)
def test_reach(bridge: Node, ip: str, status: str, word: str) -> None:
    found = bridge.doctor("--reach", ip)
    assert found["reach"]["status"] == status and word in found["reach"]["message"], found["reach"]


def test_reach_to_cluster_address_that_is_snated(bridge: Node) -> None:
    bridge.cni_conf["delegate"]["policies"][0]["Value"]["ExceptionList"] = ["10.244.0.0/16", "10.127.130.0/24"]
    found = bridge.doctor("--reach", "10.96.0.10")
    assert found["reach"]["status"] == "fail" and "SNAT'ed to the node IP" in found["reach"]["message"]


@pytest.mark.parametrize(
    "backend, words",
    [
        ({"name": "vxlan1", "type": "vxlan", "VNI": 4096}, ("vxlan1", "vxlan0")),
        ({"name": "vxlan0", "type": "vxlan", "VNI": 4095}, ("4095", "4096")),
        ({"name": "vxlan0", "type": "vxlan", "Port": 4790}, ("4790", "4789")),
        ({"name": "vxlan0", "type": "host-gw"}, ("win-bridge", "win-overlay")),
    ],
)
def test_net_conf_disagrees(overlay: Node, backend: dict, words: tuple) -> None:
    overlay.write_net_conf({"Backend": backend})
    failed(overlay.doctor(), "net-conf", *words)


def test_overlay_vni_in_hns_below_4096(tmp_path: Path) -> None:
    failed(sim_node(tmp_path, "overlay", vsid=4000).doctor(), "vxlan", "4000", "4096")


def test_source_vip_from_an_old_subnet(node: Node) -> None:
    node.source_vip.write_text(json.dumps({"cniVersion": "1.0.0", "ips": [{"address": "10.244.7.3/24"}]}))
    failed(node.doctor(), "source-vip", "10.244.7.3", "10.244.4.0/24", "restart kube-proxy")


def test_source_vip_newer_result_shape_inside(bridge: Node) -> None:
    bridge.source_vip.write_text(json.dumps({"cniVersion": "1.0.0", "ips": [{"address": "10.244.4.9/24"}]}))
    assert bridge.doctor(expect=0)["source-vip"]["status"] == "ok"


@pytest.mark.parametrize("text", ["{", '{"a": ' * 100_000 + "1" + "}" * 100_000])  # deep: was a traceback
def test_source_vip_not_json(bridge: Node, text: str) -> None:
    bridge.source_vip.write_text(text)
    failed(bridge.doctor(), "source-vip", "not a CNI result")


def test_files_larger_than_a_plugin_reads_are_problems_not_a_memory_error(bridge: Node) -> None:
    """The doctor reads the config and the source VIP file up to what a plugin reads of its config
    (/dev/zero given as either was a MemoryError)."""
    with bridge.source_vip.open("wb") as f:
        f.truncate((4 << 20) + 1)
    failed(bridge.doctor(), "source-vip", f"{bridge.source_vip} is over 4 MiB")
    bridge.source_vip.unlink()
    bridge.write_cni_conf(bridge.cni_conf)
    with (bridge.conf_dir / "10-flannel.conf").open("r+b") as f:
        f.truncate((4 << 20) + 1)
    bridge.cni_conf = None
    found = bridge.doctor(expect=1)
    assert found["config"]["status"] == "fail" and "is over 4 MiB" in found["config"]["message"], found["config"]


def test_hns_too_old_for_loopback_dsr(tmp_path: Path) -> None:
    node = sim_node(tmp_path, "bridge", version="9.2")
    node.cni_conf["delegate"]["loopbackDSR"] = True
    failed(node.doctor(), "hns-features", "9.2", "loopbackDSR")


def test_the_doctor_reads_the_policies_the_lifecycle_builds(bridge: Node) -> None:
    """Not a re-derivation: the ACLs, the user's and the automatic policies, as a pod's endpoint gets them."""
    from tools.wincni.doctor.gather import gather
    from tools.wincni.doctor.options import NodeFiles
    from tools.wincni.node.paths import default_paths

    bridge.cni_conf["delegate"]["acls"] = [{"action": "block", "direction": "out", "remoteAddresses": "10.0.0.9"}]
    bridge.write_cni_conf(bridge.cni_conf)
    defaults = default_paths("linux")
    opts = NodeFiles(
        cni_conf=str(bridge.conf_dir),
        subnet_env=defaults["subnet_env"],
        net_conf=defaults["net_conf"],
        cni_bin_dir=str(bridge.bin),
        source_vip=str(bridge.source_vip),
    )
    found = gather(opts, bridge.env, "linux", str(bridge.root))
    types = [p["Type"] for p in found.policies]
    assert types == ["OutBoundNAT", "ROUTE", "ACL"], found.policies  # the ipMasqNetwork exception is already there
    assert found.policies[-1]["RemoteAddresses"] == "10.0.0.9"


def test_an_acl_rule_hns_is_too_old_for_fails_the_config_as_the_plugin_would(tmp_path: Path) -> None:
    node = sim_node(tmp_path, "bridge", version="10.0")
    node.cni_conf["delegate"]["acls"] = [{"action": "allow", "direction": "in", "protocol": 252}]
    failed(node.doctor(), "config", "ACL rule 0", "protocol 252", "11.0", "upgrade Windows")


def test_hns_too_old_for_the_vxlan_port_policy(tmp_path: Path) -> None:
    failed(sim_node(tmp_path, "overlay", version="10.2").doctor(), "hns-features", "VXLAN port")


def test_store_and_endpoints_disagree_is_a_warning(bridge: Node) -> None:
    store = bridge.root / "ipam" / "cbr0"
    (store / "10.244.4.77").write_bytes(b"ghostpod\r\neth0")
    age(store / "10.244.4.77")
    bridge.hnsctl("endpoint", "create", "lostpod_cbr0", "--network", "cbr0", "--ip", "10.244.4.8")
    check = bridge.doctor(expect=0)["ipam-store"]
    assert check["status"] == "warn"
    for word in ("ghostpod", "10.244.4.77", "lostpod", "10.244.4.8", "crictl rmp", "wincni reclaim"):
        assert word in check["message"] + check["fix"]
    assert "10.244.4.9" not in check["message"]  # the source VIP's pinned reservation is the node's own


def test_stale_endpoints_and_an_address_hns_and_host_local_disagree_on(bridge: Node) -> None:
    """An endpoint of ours attached to nothing is stale (the fix deletes it by ID); an endpoint
    holding an address host-local reserves for another pod is named with both."""
    from libhns.client import open_clients

    bridge.hnsctl("endpoint", "create", "gone_cbr0", "--network", "cbr0", "--ip", "10.244.4.19")
    stale_id = open_clients(bridge.env)[0].get_endpoint_by_name("gone_cbr0").id
    store = bridge.root / "ipam" / "cbr0"
    store.mkdir(parents=True, exist_ok=True)  # the node's source VIP is there already
    (store / "10.244.4.19").write_bytes(b"otherpod\r\neth0")
    (store / "10.244.4.20").write_bytes(b"gone\r\neth0")
    bridge.hnsctl("endpoint", "create", "moved_cbr0", "--network", "cbr0", "--ip", "10.244.4.21")
    (store / "10.244.4.22").write_bytes(b"moved\r\neth0")
    found = bridge.doctor(expect=0)
    check = found["stale-endpoints"]
    assert check["status"] == "warn" and "gone_cbr0" in check["message"] and "10.244.4.19" in check["message"]
    assert check["run"].startswith(f"hnsctl endpoint delete {stale_id}") and "ipam-store" in check["fix"]
    store_check = found["ipam-store"]
    assert "endpoint gone_cbr0 holds 10.244.4.19, which host-local reserves for otherpod" in store_check["message"]
    assert "endpoint moved_cbr0 holds 10.244.4.21, which host-local has not reserved" in store_check["message"]
    assert "stale-endpoints" in store_check["fix"] and "gone, moved" in store_check["fix"]


def age(*paths: Path, seconds: float = 3600) -> None:
    """Reservations made ``seconds`` ago: past reclaim's --min-age, so stale when no endpoint holds them."""
    import os
    import time

    for path in paths:
        os.utime(path, (time.time() - seconds,) * 2)


def test_a_young_reservation_without_an_endpoint_is_an_add_in_flight(bridge: Node) -> None:
    store = bridge.root / "ipam" / "cbr0"
    (store / "10.244.4.77").write_bytes(b"starting\r\neth0")
    check = bridge.doctor(expect=0)["ipam-store"]
    assert check["status"] == "ok" and "1 younger than 5 minutes have no endpoint yet" in check["message"], check
    age(store / "10.244.4.77")
    check = bridge.doctor(expect=0)["ipam-store"]
    assert check["status"] == "warn" and "10.244.4.77 reserved for starting" in check["message"], check


def test_table_output_puts_a_fix_under_each_failure(bridge: Node) -> None:
    (bridge.bin / "host-local").unlink()
    bridge.write_cni_conf(bridge.cni_conf)
    out = io.StringIO()
    rc = main(
        bridge.doctor_argv(output="table"),
        out,
        io.StringIO(),
        bridge.env,
        platform="linux",
    )
    lines = out.getvalue().splitlines()
    assert rc == 1
    at = next(i for i, line in enumerate(lines) if line.startswith("FAIL  plugins"))
    assert lines[at + 1].strip().startswith("fix: copy host-local")
    # runtime-status warns too: STATUS cannot find host-local either
    assert lines[0].startswith("OK    backend") and lines[-1] == "24 checks: 22 ok, 1 failed, 1 warnings, 0 not checked"


@pytest.mark.parametrize("argv", [["doctor", "--bogus"], ["doctor", "-o", "yaml"], ["cure"]])
def test_usage_errors_exit_2(argv: list[str]) -> None:
    out, err = io.StringIO(), io.StringIO()
    assert main(argv, out, err, {}) == 2
    assert out.getvalue() == "" and err.getvalue().startswith("wincni")


def test_checks_are_pure_functions_of_facts() -> None:
    """No files or HNS: facts alone decide (here: an overlay node whose source VIP is not in the lease)."""
    from plugins.flannel.subnet_env import parse

    facts = NodeFacts(
        lease=parse(LEASE, "subnet.env"),
        source_vip=("10.1.0.1",),
        source_vip_path="sv.json",
        delegate_type="win-overlay",
    )
    assert source_vip(facts).status == "fail"
    assert judge.excepted_set([{"Type": "OutBoundNAT", "ExceptionList": ["10.0.0.0/8"]}]).__contains__("10.1.2.3")


def test_exception_entries_that_are_not_cidrs(bridge: Node) -> None:
    bridge.cni_conf["delegate"]["policies"][0]["Value"]["ExceptionList"] = EXCEPTIONS + ["bogus", "10.0.0.0/33"]
    failed(bridge.doctor("--reach", "10.0.0.1"), "exceptions", "bogus", "10.0.0.0/33")


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


@given(
    policies=st.lists(
        st.fixed_dictionaries(
            {"Type": st.sampled_from(["OutBoundNAT", "ROUTE", "SDNRoute", "x"])},
            optional={"ExceptionList": _JSON, "DestinationPrefix": _JSON, "Settings": _JSON},
        ),
        max_size=4,
    ),
    reach=st.ip_addresses().map(str),  # the parser takes nothing else (test_operator_small)
)
def test_address_checks_never_raise(policies: list, reach: str) -> None:
    """Whatever shape the policies take, the checks answer ok/warn/fail instead of raising."""
    from plugins.flannel.subnet_env import parse

    facts = NodeFacts(lease=parse(LEASE, "subnet.env"), netconf=object(), policies=tuple(policies), reach=reach)
    assert checks.config.exceptions(facts).status in ("ok", "fail")
    assert checks.config.reach(facts).status in ("ok", "fail")


def test_help_names_the_version_and_commit_like_every_executable(capsys):
    from plugins.cni.buildinfo import describe
    from tools.wincni.cli.main import main

    assert main(["--help"], io.StringIO(), io.StringIO(), {}) == 0
    assert f"wincni {describe()}" in capsys.readouterr().out


def standalone_conf(node: Node, subnet: str = "10.244.4.0/24") -> dict:
    return {
        "cniVersion": "1.0.0",
        "name": "cbr0",
        "type": "win-bridge",
        "policies": node.cni_conf["delegate"]["policies"],
        "network": {"subnet": subnet, "adapter": "Ethernet"},
        "ipam": {"type": "host-local", "subnet": subnet, "dataDir": str(node.root / "ipam")},
    }


def test_standalone_mode_before_the_first_add_is_healthy(tmp_path: Path) -> None:
    node = sim_node(tmp_path, network=False)
    node.cni_conf = standalone_conf(node)
    found = node.doctor(expect=0)
    assert found["hns-network"]["status"] == "ok" and "the first ADD creates it" in found["hns-network"]["message"]


def test_standalone_mode_with_a_network_of_another_subnet(tmp_path: Path) -> None:
    node = sim_node(tmp_path)
    node.cni_conf = standalone_conf(node, "10.244.9.0/24")
    failed(node.doctor(), "hns-network", "10.244.4.0/24", "10.244.9.0/24", "never replaces")


def test_standalone_mode_with_a_matching_network_is_judged_as_usual(tmp_path: Path) -> None:
    node = sim_node(tmp_path)
    node.cni_conf = standalone_conf(node)
    assert node.doctor(expect=0)["hns-network"]["message"].startswith("cbr0 is L2Bridge")


def test_standalone_mode_with_pod_addresses_outside_the_network(tmp_path: Path) -> None:
    node = sim_node(tmp_path, network=False)
    node.cni_conf = standalone_conf(node)
    node.cni_conf["ipam"]["subnet"] = "10.244.5.0/24"
    failed(node.doctor(), "hns-network", "ipam.subnet", "outside network.subnet 10.244.4.0/24")


def test_a_bad_libhns_variable_is_reported_not_raised(bridge: Node) -> None:
    bridge.env["LIBHNS_SIM_VERSION"] = "x"
    failed(bridge.doctor(), "hns-network", "LIBHNS_SIM_VERSION", "fix or unset")


def test_runtime_status_says_whether_containerd_asks_and_what_status_answers(overlay: Node) -> None:
    config_toml = overlay.root / "config.toml"
    config_toml.write_text("version = 2\n")  # containerd 1.x never asks
    check = overlay.doctor(expect=0)["runtime-status"]
    assert check["status"] == "ok" and "answers ready" in check["message"] and "does not ask" in check["message"]
    config_toml.write_text("version = 3\n")  # containerd 2.x asks only configs of 1.1.0 or later
    check = overlay.doctor(expect=0)["runtime-status"]
    assert check["status"] == "warn" and "never asks" in check["message"] and "1.0.0" in check["message"], check
    assert '"cniVersion" to "1.1.0"' in check["fix"]
    overlay.cni_conf["cniVersion"] = "1.1.0"
    check = overlay.doctor(expect=0)["runtime-status"]
    assert check["status"] == "ok" and "asks STATUS" in check["message"], check
    overlay.hnsctl("network", "delete", "vxlan0")
    overlay.overlay(vsid=4000)  # STATUS: limited connectivity, and containerd asks: a failure
    check = overlay.doctor(expect=1)["runtime-status"]
    assert check["status"] == "fail" and "code 51" in check["message"] and "4000" in check["message"], check
    overlay.subnet_env.unlink()
    check = overlay.doctor(expect=1)["runtime-status"]
    assert check["status"] == "fail" and "code 50" in check["message"] and "flanneld" in check["fix"], check


def test_runtime_status_warns_of_a_failing_status_the_runtime_does_not_ask(bridge: Node) -> None:
    bridge.subnet_env.unlink()
    check = bridge.doctor()["runtime-status"]
    assert check["status"] == "warn" and "code 50" in check["message"] and "subnet.env" in check["message"], check


def test_vxlan_without_explicit_vni_and_port_warns_about_linux_peers(overlay: Node) -> None:
    """Linux flanneld reads the same net-conf.json and defaults to VNI 1 / UDP 8472: say so, name both values."""
    overlay.write_net_conf({"Network": "10.244.0.0/16", "Backend": {"name": "vxlan0", "type": "vxlan"}})
    found = overlay.doctor(expect=0)
    check = found["net-conf"]
    assert check["status"] == "warn", check
    for word in ("VNI 1", "8472", "4096", "4789", "Linux"):
        assert word in check["message"], check
    assert '"VNI": 4096' in check["fix"] and '"Port": 4789' in check["fix"]
    assert "agree only if" in found["vxlan"]["message"]


def test_every_net_conf_problem_is_reported_in_one_run(overlay: Node) -> None:
    overlay.write_net_conf({"Backend": {"name": "vxlan1", "type": "vxlan", "VNI": 1, "Port": 8472}})
    failed(overlay.doctor(), "net-conf", "VNI 1", "Port 8472", "vxlan1", "4096", "4789")


def test_not_checked_is_kept_apart_from_warnings_everywhere(overlay: Node) -> None:
    """Without subnet.env the checks that need the delegate say so (vxlan too, listed, not dropped);
    the table, the JSON and the summary count them apart, and only a failure sets the exit code."""
    overlay.subnet_env.unlink()
    found = overlay.doctor(expect=1)
    assert set(found) == CHECK_IDS - {"reach"}
    vxlan = found["vxlan"]
    assert (vxlan["status"], vxlan["message"]) == ("not-checked", "not checked: no valid delegate config"), vxlan
    out = io.StringIO()
    assert main(overlay.doctor_argv(output="json"), out, io.StringIO(), overlay.env, platform="linux") == 1
    summary = json.loads(out.getvalue())["summary"]
    statuses = [c["status"] for c in found.values()]
    assert summary == {s: statuses.count(s) for s in ("ok", "warn", "fail", "not-checked")}
    assert summary["not-checked"] >= 3 and summary["warn"] < summary["not-checked"], summary
    out = io.StringIO()
    main(overlay.doctor_argv(output="table"), out, io.StringIO(), overlay.env, platform="linux")
    lines = out.getvalue().splitlines()
    assert any(line.startswith("SKIP  vxlan ") for line in lines), lines
    assert lines[-1] == (
        f"{len(found)} checks: {summary['ok']} ok, {summary['fail']} failed, {summary['warn']} warnings, "
        f"{summary['not-checked']} not checked"
    )


def test_the_installed_build_is_named_and_another_build_warned_about(bridge: Node) -> None:
    found = bridge.doctor(expect=0)["build"]
    assert found["status"] == "ok" and f"are build {running_build()}-1, this wincni's" in found["message"], found
    bridge.write_manifest("0.0.9-0123456789ab-20260101T000000")
    found = bridge.doctor(expect=0)["build"]
    assert found["status"] == "warn" and "0.0.9-0123456789ab-20260101T000000; this wincni is" in found["message"]
    (bridge.bin / MANIFEST).unlink()  # laid by hand (build.ps1 -Install writes none): said, not warned
    found = bridge.doctor(expect=0)["build"]
    assert (found["status"], found["fix"]) == ("not-checked", "") and MANIFEST in found["message"], found
