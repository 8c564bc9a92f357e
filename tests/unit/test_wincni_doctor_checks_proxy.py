"""``wincni doctor``'s checks of kube-proxy's side of HNS (tools/wincni/proxychecks.py): a node with
Services programmed, from the hand-made dumps (tests/data/services) or as the real kube-proxy left
it in the Windows lane (tests/data/kubeproxy), passes every check; each inconsistency kube-proxy
and HNS are known to leave, built on top of that state on the simulator (or, where the simulator
cannot hold it, in a bundle's recorded documents), fails its own check with its fix, a printed
command mends it, and the node's bundle replayed elsewhere finds what the live doctor found."""

from __future__ import annotations

import io
import ipaddress
import json
import tarfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hnsnode import (
    CLUSTER_DNS,
    PROXY_NODES,
    Node,
    endpoint_of,
    pod_address,
    proxy_node,
    remote_backend,
    source_vip_of,
    two_pods_node,
)
from libhns.objects import HNSEndpoint, HostComputeLoadBalancer, HostComputeNetwork
from test_wincni_doctor import PROXY_CHECKS
from test_wincni_doctor_archive import assert_replay_is_live
from test_wincni_doctor_fixes import run_as_printed
from tools.wincni.cli.main import main
from tools.wincni.doctor.checks import proxy as proxychecks
from tools.wincni.doctor.checks import registry as checks
from tools.wincni.doctor.facts import NodeFacts
from tools.wincni.node.hns import Inventory

pytestmark = pytest.mark.node(*PROXY_NODES, build=proxy_node)
#: The overlay nodes among them: kube-proxy runs with a source VIP there.
OVERLAY = pytest.mark.node("overlay", "vxlan", "vxlan-dsr", build=proxy_node)
#: A remote endpoint's address outside every node's pod subnet, which no load balancer lists.
UNLISTED = "10.244.99.7"


def load_balancer_id(node: Node, vip: str, port: int, protocol: int) -> str:
    (found,) = [
        lb["ID"]
        for lb in node.hnsctl("loadbalancer", "list", "-o", "json")
        if vip in (lb.get("FrontendVIPs") or ())
        and any(m["ExternalPort"] == port and m["Protocol"] == protocol for m in lb["PortMappings"])
    ]
    return found


def only_failure(found: dict[str, dict], check_id: str, *words: str) -> dict:
    """``check_id`` is the one failure, and its message and fix say every word."""
    assert [k for k, c in found.items() if c["status"] == "fail"] == [check_id], found
    check = found[check_id]
    for word in words:
        assert word in check["message"] + " " + check["fix"], check
    return check


def test_a_node_with_services_programmed_passes_every_check(node: Node, tmp_path: Path) -> None:
    """Load balancers over our pods and remote endpoints, the cluster DNS's on 53 UDP and TCP,
    remote endpoints for Service VIPs (overlay, the real kube-proxy's also for a Service with no
    load balancer) and for other nodes' pods, the source VIP's endpoint (overlay): every check
    passes, kube-proxy's with something to judge, and the bundle replays to the same."""
    found = node.doctor("--reach", "8.8.8.8", expect=0)
    assert {c["status"] for c in found.values()} == {"ok"}, found
    balancers = len(node.hnsctl("loadbalancer", "list", "-o", "json"))
    remote = sum(e.get("Flags", 0) & 1 for e in node.hnsctl("endpoint", "list", "-o", "json"))
    assert balancers >= 6 and remote >= 1
    assert f"every backend of the {balancers} load balancer(s) exists" in found["lb-backends"]["message"]
    assert found["policy-lists"]["message"] == f"{balancers} policy list(s), each in State 2"
    assert found["dns-load-balancer"]["message"] == f"cluster DNS {CLUSTER_DNS} has load balancers on 53 UDP and TCP"
    assert f"every remote endpoint ({remote}) has a load balancer" in found["stale-remote-endpoints"]["message"]
    if node.source_vip.exists():
        assert found["source-vip"]["message"].startswith(f"source VIP {source_vip_of(node)} lies inside")
    assert_replay_is_live(node, node.doctor(expect=0), tmp_path)


def test_before_kube_proxy_programs_anything_its_checks_pass_saying_so(tmp_path: Path) -> None:
    found = two_pods_node(tmp_path, "overlay").doctor(expect=0)
    for id_ in PROXY_CHECKS:
        assert found[id_]["status"] == "ok", found[id_]
    assert found["lb-backends"]["message"] == "no load balancer yet: kube-proxy has programmed none"
    assert found["dns-load-balancer"]["message"] == found["lb-backends"]["message"]


def test_a_load_balancer_over_an_endpoint_hns_lost(node: Node) -> None:
    gone = endpoint_of(node, remote_backend(node))
    users = [
        proxychecks.describe(HostComputeLoadBalancer.from_json(lb))
        for lb in node.hnsctl("loadbalancer", "list", "-o", "json")
        if gone in lb["HostComputeEndpoints"]
    ]
    node.hnsctl("endpoint", "delete", gone)
    check = only_failure(node.doctor(), "lb-backends", gone, *users)
    assert check["fix"].startswith("restart kube-proxy") and not check["run"]


def test_a_remote_endpoint_no_load_balancer_lists_goes_with_the_printed_command(node: Node) -> None:
    net = node.cni_conf["name"]
    node.hnsctl("endpoint", "create", "", "--network", net, "--ip", UNLISTED, "--remote")
    check = node.doctor(expect=0)["stale-remote-endpoints"]
    assert check["status"] == "warn" and UNLISTED in check["message"], check
    run_as_printed(node, check["run"])
    assert node.doctor(expect=0)["stale-remote-endpoints"]["status"] == "ok"


@pytest.mark.parametrize("host", [0, 77], ids=["a local pod's", "in the pod subnet"])
def test_a_remote_endpoint_with_an_address_of_this_nodes_pods(node: Node, host: int) -> None:
    """kubernetes #130963: a remote endpoint sharing a local pod's address (or any of this node's
    pod subnet); the printed command deletes it, and only it: the local pod keeps its endpoint."""
    pod = pod_address(node)
    ip = str(ipaddress.ip_network(f"{pod}/24", strict=False)[host]) if host else pod
    node.hnsctl("endpoint", "create", "", "--network", node.cni_conf["name"], "--ip", ip, "--remote")
    check = only_failure(node.doctor(), "remote-endpoint-addresses", ip, "restart kube-proxy")
    run_as_printed(node, check["run"])
    assert node.doctor(expect=0)["remote-endpoint-addresses"]["status"] == "ok"
    assert endpoint_of(node, pod, remote=False)


def test_no_load_balancer_for_the_cluster_dns_over_tcp(node: Node) -> None:
    node.hnsctl("loadbalancer", "delete", load_balancer_id(node, CLUSTER_DNS, 53, 6))
    check = only_failure(node.doctor(), "dns-load-balancer", f"{CLUSTER_DNS} 53/TCP", "pods cannot resolve names")
    assert f"{CLUSTER_DNS} 53/UDP" not in check["message"]
    assert "kubectl -n kube-system get endpointslices -l k8s-app=kube-dns" in check["fix"]


@OVERLAY
def test_the_source_vip_endpoint_missing(node: Node) -> None:
    vip, net = source_vip_of(node), node.cni_conf["name"]
    node.hnsctl("endpoint", "delete", endpoint_of(node, vip, remote=False))
    check = only_failure(node.doctor(), "source-vip", f"no endpoint on {net} holds its source VIP {vip}")
    assert f"--source-vip={vip}" in check["fix"] and check["fix"].startswith("restart kube-proxy")


@OVERLAY
def test_load_balancers_with_the_source_vip_of_an_earlier_subnet(node: Node) -> None:
    """sig-windows-tools #250: kube-proxy kept the source VIP it started with after the node's
    pod subnet changed; the node's own address (kube-proxy's choice for some backends) is fine."""
    pod_b = endpoint_of(node, pod_address(node), remote=False)
    node.hnsctl(
        "loadbalancer", "create", "--endpoint", pod_b, "--vip", "10.96.0.44", "--port", "80",
        "--source-vip", "10.244.3.9",
    )  # fmt: skip
    check = only_failure(node.doctor(), "source-vip", "10.244.3.9 (outside the pod subnet)", "not ")
    assert f", with --source-vip={source_vip_of(node)}" in check["fix"]


@OVERLAY
def test_the_source_vip_endpoint_is_kube_proxys_not_a_conflict(node: Node) -> None:
    """kube-proxy's endpoint on the source VIP (local, unnamed) neither fails source-vip nor
    ipam-store, and ``wincni sourcevip`` run again keeps the address it reserved."""
    found = node.doctor(expect=0)
    assert found["source-vip"]["status"] == found["ipam-store"]["status"] == "ok"
    out, err = io.StringIO(), io.StringIO()
    argv = [
        "sourcevip",
        "--cni-conf",
        str(node.conf_dir / "10-flannel.conf"),
        "--out",
        str(node.source_vip),
        "-o",
        "json",
    ]
    assert main(argv, out, err, node.env, platform="linux", cwd=str(node.root)) == 0, (out.getvalue(), err.getvalue())
    assert (
        json.loads(out.getvalue())["sourceVip"] == source_vip_of(node) and json.loads(out.getvalue())["released"] == []
    )


# --- states the simulator does not hold: the node's documents, changed in its bundle ---------------


def rebundle(node: Node, tmp_path: Path, change: Any) -> Path:
    """The node's bundle with ``change(members)`` made to its recorded documents (JSON by name)."""
    rc, _, err = node.wincni("bundle", "--out", str(tmp_path / "node.tar.gz"))
    assert rc == 0, err
    with tarfile.open(tmp_path / "node.tar.gz") as tar:
        members = {m.name: tar.extractfile(m).read() for m in tar if m.isfile()}
    docs = {name: json.loads(data) for name, data in members.items() if name.startswith("hns/")}
    change(docs)
    out = tmp_path / "changed.tar.gz"
    with tarfile.open(out, "w:gz") as tar:
        for name, data in members.items():
            data = json.dumps(docs[name]).encode() if name in docs else data
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out


def replayed(path: Path) -> dict[str, dict]:
    out = io.StringIO()
    main(["doctor", "--replay", str(path), "-o", "json"], out, io.StringIO(), {}, platform="linux", cwd="/")
    return {c["id"]: c for c in json.loads(out.getvalue())["checks"]}


def test_a_policy_list_not_applied(node: Node, tmp_path: Path) -> None:
    def unapplied(docs: dict) -> None:
        docs["hns/v1/policylists.json"][0]["State"] = 1

    check = replayed(rebundle(node, tmp_path, unapplied))["policy-lists"]
    assert check["status"] == "fail" and "is in State 1, not 2" in check["message"], check
    assert check["fix"].startswith("restart kube-proxy")


def test_two_load_balancers_for_one_frontend(node: Node, tmp_path: Path) -> None:
    """HNS refuses a second load balancer on a frontend (0x803B0013, as the simulator does), so two
    can only come from HNS's own state: a copy of the DNS's over UDP, under another ID."""

    def doubled(docs: dict) -> None:
        lists = docs["hns/v1/policylists.json"]  # the doctor reads the load balancers there
        (dns_udp,) = [
            p for p in lists
            if CLUSTER_DNS in (p["Policies"][0].get("VIPs") or ()) and p["Policies"][0]["Protocol"] == 17
        ]  # fmt: skip
        lists.append({**dns_udp, "ID": "0A0B0C0D-0E0F-4A1B-8C2D-3E4F5A6B7C8E"})

    check = replayed(rebundle(node, tmp_path, doubled))["duplicate-load-balancers"]
    assert check["status"] == "fail" and f"{CLUSTER_DNS} 53/UDP has 2 load balancers" in check["message"], check
    assert check["fix"].startswith("restart kube-proxy")


OLD_NETWORK = "0F0E0D0C-0B0A-4909-8807-060504030201"


def test_objects_of_a_network_that_was_recreated(node: Node, tmp_path: Path) -> None:
    """A remote endpoint and a policy list naming a network HNS no longer has: the load balancer
    fails (kube-proxy's restart clears it), the remote endpoint alone is a warning with its command."""

    backend = remote_backend(node)

    def remote_left(docs: dict) -> None:
        (kept,) = [e for e in docs["hns/v1/endpoints.json"] if e.get("IPAddress") == backend]
        left = {**kept, "ID": "0A0B0C0D-0E0F-4A1B-8C2D-3E4F5A6B7C8D", "IPAddress": "10.244.8.8"}
        docs["hns/v1/endpoints.json"].append({**left, "VirtualNetwork": OLD_NETWORK})

    check = replayed(rebundle(node, tmp_path, remote_left))["old-network"]
    assert check["status"] == "warn" and f"is on network {OLD_NETWORK}, which no longer exists" in check["message"]
    assert check["run"].startswith("hnsctl endpoint delete ") and len(check["run"].split()) == 4

    def list_left(docs: dict) -> None:
        docs["hns/v1/policylists.json"][0]["HostComputeNetwork"] = OLD_NETWORK

    check = replayed(rebundle(node, tmp_path, list_left))["old-network"]
    assert check["status"] == "fail" and "is on a network that no longer exists" in check["message"], check
    assert check["fix"].startswith("restart kube-proxy") and not check["run"]


# --- the checks alone, on facts -------------------------------------------------------------------


def lb(*backends: str, vip: str = "", port: Any = 80, protocol: Any = 6, **doc: Any) -> HostComputeLoadBalancer:
    return HostComputeLoadBalancer.from_json(
        {
            "ID": f"LB-{vip}-{port}-{protocol}",
            "HostComputeEndpoints": list(backends),
            "FrontendVIPs": [vip] if vip else [],
            "PortMappings": [{"Protocol": protocol, "InternalPort": port, "ExternalPort": port}],
            **doc,
        }
    )


def test_frontends_name_what_a_load_balancer_serves() -> None:
    dns = lb("E", vip="10.96.0.10", port=53, protocol=17)
    assert proxychecks.frontend_vips(dns) == ["10.96.0.10"] and proxychecks.ports(dns) == [(53, "UDP")]
    assert proxychecks.describe(lb("E", port=30080)) == "LB--30080-6 (node port 30080/TCP)"
    wide = lb(
        "E",
        FrontendVIPs=["10.96.0.1", "10.96.0.2"],
        PortMappings=[{"Protocol": 6, "ExternalPort": p} for p in (80, 443)],
    )
    assert proxychecks.describe(wide) == "LB--80-6 (10.96.0.1, 10.96.0.2 on 80/TCP, 443/TCP)"


frontend = st.tuples(
    st.sampled_from(["", "10.96.0.1", "10.96.0.2"]), st.sampled_from([53, 80]), st.sampled_from([6, 17])
)


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])  # a loaded machine's first draws
@given(st.lists(st.lists(frontend, max_size=4), max_size=5))
def test_shared_frontends_are_those_two_load_balancers_serve(served: list[list[tuple[str, int, int]]]) -> None:
    """Against the definition, every VIP with every port of each load balancer compared: the
    frontends served by more than one, and by which, in their order."""
    balancers = [
        HostComputeLoadBalancer.from_json(
            {
                "ID": f"LB{n}",
                "FrontendVIPs": [vip for vip, _, _ in fronts if vip],
                "PortMappings": [{"Protocol": proto, "ExternalPort": port} for _, port, proto in fronts],
            }
        )
        for n, fronts in enumerate(served)
    ]
    every: dict[tuple[str, int, str], list[str]] = {}
    for balancer in balancers:
        for vip in dict.fromkeys(balancer.vips or [""]):
            for port, proto in proxychecks.ports(balancer):
                every.setdefault((vip, port, proto), []).append(balancer.id)
    assert proxychecks.shared_frontends(balancers) == {k: ids for k, ids in every.items() if len(ids) > 1}


documents = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=10,
)


@given(
    backends=documents,
    vips=documents,
    mappings=documents,
    source_vip=documents,
    policy_lists=st.lists(documents, max_size=3),
)
def test_kube_proxys_checks_read_any_recorded_document_without_raising(
    backends: Any, vips: Any, mappings: Any, source_vip: Any, policy_lists: list
) -> None:
    """A bundle comes from anywhere: whatever its load balancers and policy lists hold, each check
    answers a status instead of raising."""
    doc = {"ID": backends, "HostComputeEndpoints": backends, "FrontendVIPs": vips, "PortMappings": mappings}
    balancer = HostComputeLoadBalancer.from_json({**doc, "SourceVIP": source_vip})
    network = HostComputeNetwork.from_json({"ID": "N", "Name": "vxlan0"})
    remote = HNSEndpoint.from_json(
        {"ID": "R", "IPAddress": "10.244.4.7", "IsRemoteEndpoint": True, "VirtualNetwork": "N"}
    )
    inv = Inventory((network,), (remote,), (balancer,), tuple(policy_lists))
    facts = NodeFacts(inventory=inv, network=network, delegate_type="win-overlay", endpoints=(("", ("10.244.4.9",)),))
    for check in [getattr(proxychecks, i.replace("-", "_")) for i in PROXY_CHECKS if i != "dns-load-balancer"]:
        assert check(facts).status in ("ok", "warn", "fail", "not-checked")
    proxychecks.source_vip_in_hns(facts, "10.244.4.9")


def test_every_check_of_kube_proxys_state_is_the_doctors() -> None:
    assert set(checks.BY_ID) >= set(PROXY_CHECKS)
    assert not set(PROXY_CHECKS) & {
        c.id for c in checks.CHECKS if c.live_only
    }  # each runs from a bundle as on the node


def test_what_hns_did_not_give_is_not_checked() -> None:
    """HNS not read: every check of kube-proxy's state says not checked; HNS without V1 policy
    lists (where kube-proxy cannot start): policy-lists alone says so."""
    for id_ in PROXY_CHECKS:
        check = getattr(proxychecks, id_.replace("-", "_"))(NodeFacts())
        assert check.status == "not-checked" and check.message.startswith("not checked"), check
    balancer = lb("E", vip="10.96.0.10")
    endpoint = HNSEndpoint.from_json({"ID": "E", "IPAddress": "10.244.4.2", "VirtualNetwork": "N"})
    network = HostComputeNetwork.from_json({"ID": "N", "Name": "vxlan0"})
    check = proxychecks.policy_lists(NodeFacts(inventory=Inventory((network,), (endpoint,), (balancer,), None)))
    assert check.status == "not-checked" and "GET /policylists/" in check.message
    assert "Windows kernel is not compatible for Kernel mode" in check.fix


@pytest.mark.parametrize("pa, status", [("198.51.100.10", "ok"), ("198.51.100.30", "warn")])
def test_a_service_vip_endpoint_before_its_load_balancer_is_kube_proxys(pa: str, status: str) -> None:
    """On overlay kube-proxy makes a Service VIP's remote endpoint (this node's provider address)
    whether or not the Service has a load balancer yet, as the real one left 10.96.0.1: not stale;
    one with another node's provider address and no load balancer is."""
    network = HostComputeNetwork.from_json(
        {
            "ID": "N",
            "Name": "flannel.4096",
            "Policies": [{"Type": "ProviderAddress", "Settings": {"ProviderAddress": "198.51.100.10"}}],
        }
    )
    vip = HNSEndpoint.from_json(
        {"ID": "V", "IPAddress": "10.96.0.1", "IsRemoteEndpoint": True, "VirtualNetwork": "n",
         "Policies": [{"Type": "PA", "PA": pa}]}
    )  # fmt: skip
    inv = Inventory((network,), (vip,), (lb("E", vip="10.96.0.10"),), ())
    assert proxychecks.stale_remote_endpoints(NodeFacts(inventory=inv, network=network)).status == status
