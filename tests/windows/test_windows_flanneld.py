"""The real flanneld.exe builds the network our plugins run pods on (Wine, etcd, the simulator).

Every other test makes flanneld's part itself (``hnsctl`` plays it, the test writes subnet.env).
Here flannel's own daemon (v0.27.4, built from the Go module proxy) does it on a node of the
lane's own (``flannelnode.py``): etcd holds the network config as flanneld's etcd mode reads
it, flanneld.exe runs under Wine with the fake HNS DLLs inside the node's network namespace.
Then ``wincni.exe install`` renders from the same config as net-conf.json,
pods get addresses from flanneld's lease on flanneld's network, and ``wincni.exe doctor`` is
clean. One node per backend: vxlan (HCN V2, Overlay) and host-gw (HNSCall V1, L2Bridge).
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest

from basics import ipaddr
from flannelnode import (
    BACKENDS,
    NET_D,
    NETWORK,
    NODE_IP,
    OPT_BIN,
    SUBNET_MANAGERS,
    FlannelNode,
    flannel_node,
    host_endpoint_address,
    installed_conf,
)
from hnsnode import first_ip
from neighbours import wait_for
from winenode import LIBCNI_CACHE


@pytest.fixture(scope="module", params=[(b, m) for m in SUBNET_MANAGERS for b in BACKENDS], ids="-".join)
def cluster(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, package_zip: Path
) -> Iterator[FlannelNode]:
    backend, manager = request.param
    root = tmp_path_factory.mktemp(f"flanneld-{backend}-{manager}")
    with flannel_node(root, package_zip, backend, SUBNET_MANAGERS[manager]) as node:
        yield node


def test_flanneld_makes_its_network_and_lease_and_our_pods_run_on_them(cluster: FlannelNode) -> None:
    node = cluster.node
    env, lease = cluster.subnet_env, cluster.lease
    assert env["FLANNEL_NETWORK"] == NETWORK and cluster.flanneld.running()
    gateway = str(lease.network_address + 1)
    assert env["FLANNEL_SUBNET"] == f"{gateway}/{lease.prefixlen}"

    net = cluster.network()
    [subnet] = net["Ipams"][0]["Subnets"]
    assert subnet["IpAddressPrefix"] == str(lease)
    assert subnet["Routes"] == [{"NextHop": gateway, "DestinationPrefix": "0.0.0.0/0"}]
    if cluster.backend == "vxlan":
        policies = {p["Type"]: p["Settings"] for p in net["Policies"]}
        assert policies["ProviderAddress"] == {"ProviderAddress": NODE_IP}
    else:  # HNSCall V1: the management IP is a field, and the host's endpoint is at lease + 2
        [v1] = [n for n in node.hnsctl("network", "list", "--v1", "-o", "json") if n["Name"] == "cbr0"]
        assert v1["ManagementIP"] == NODE_IP
        assert node.endpoints()["cbr0_ep"]["IPAddress"] == str(lease.network_address + 2)
    assert {subnet: held["PublicIP"] for subnet, held in cluster.subnets.leases().items()} == {str(lease): NODE_IP}

    conf = cluster.conf
    assert conf["name"] == cluster.network_name and conf["type"] == "flannel"

    node.network = cluster.network_name
    # vxlan: the network's gateway; host-gw: the host's endpoint cbr0_ep, as the reference's flannel delegates
    pod_gateway = gateway if cluster.backend == "vxlan" else str(lease.network_address + 2)
    pods = {}
    for cid in ("fl-pod1", "fl-pod2"):
        netns = node.sandbox("v2", cid)
        add = cluster.libcni.ok("ADD", cid, netns)
        ip, gw = first_ip(add.out)
        assert ipaddr.ip_address(ip) in lease and gw == pod_gateway, add.out
        pods[cid] = (netns, ip)
        endpoint = node.endpoints_v2()[f"{cid}_{cluster.network_name}"]
        assert endpoint["HostComputeNetwork"] == net["ID"] and endpoint["HostComputeNamespace"] == netns
        nat = [p["Settings"] for p in endpoint["Policies"] if p["Type"] == "OutBoundNAT"]
        assert nat and NETWORK in nat[0]["Exceptions"], endpoint["Policies"]
        if cluster.backend == "vxlan":
            pa = [p["Settings"] for p in endpoint["Policies"] if p["Type"] == "ProviderAddress"]
            assert pa == [{"ProviderAddress": NODE_IP}], endpoint["Policies"]
        else:
            routes = [p["Settings"] for p in endpoint["Policies"] if p["Type"] == "SDNRoute"]
            assert {"DestinationPrefix": f"{NODE_IP}/32", "NeedEncap": True} in routes, endpoint["Policies"]
        cluster.libcni.ok("CHECK", cid, netns)
        assert cluster.node.path(rf"{LIBCNI_CACHE}\results\{conf['name']}-{cid}-eth0").is_file()
    cluster.libcni.ok("STATUS")

    rc, report = cluster.wincni("doctor", "--cni-conf", NET_D, "--cni-bin-dir", OPT_BIN)
    failing = {c["id"]: c for c in report["checks"] if c["status"] == "fail"}
    assert rc == 0 and not failing, failing

    for cid, (netns, _) in pods.items():
        cluster.libcni.ok("DEL", cid, netns)
        node.assert_clean(cid)
    assert cluster.network()["ID"] == net["ID"], "our pods' DEL must leave flanneld's network"


OTHER_NODE_IP, OTHER_LEASE, OTHER_VTEP = "198.51.100.20", "10.244.50.0/24", "0e:2a:0a:f4:32:00"


def other_node_lease(backend: str) -> dict:
    """A second node's lease as its flanneld writes it into etcd."""
    lease = {"PublicIP": OTHER_NODE_IP, "BackendType": backend}
    if backend == "vxlan":
        lease["BackendData"] = {"VNI": 4096, "VtepMAC": OTHER_VTEP}
    return lease


def test_a_second_node_joins_and_leaves_and_our_pods_are_untouched(cluster: FlannelNode) -> None:
    node = cluster.node
    node.network = cluster.network_name
    netns = node.sandbox("v2", "fl-stay")
    cluster.libcni.ok("ADD", "fl-stay", netns)
    before = node.endpoints_v2()[f"fl-stay_{cluster.network_name}"]

    cluster.subnets.assign(OTHER_LEASE, other_node_lease(cluster.backend), ttl=3600)
    made = wait_for(
        "flanneld's route to the second node", lambda: cluster.route_to(OTHER_LEASE), 60, cluster.flanneld.log
    )
    if cluster.backend == "vxlan":
        assert made == {
            "DestinationPrefix": OTHER_LEASE,
            "IsolationId": 4096,
            "ProviderAddress": OTHER_NODE_IP,
            "DistributedRouterMacAddress": OTHER_VTEP,
        }
    else:
        assert made[2] == OTHER_NODE_IP
        new = [c for c in cluster.powershell_runs() if "New-NetRoute" in c]
        assert any(f"-DestinationPrefix {OTHER_LEASE} -NextHop  {OTHER_NODE_IP}" in c for c in new), new
    assert node.endpoints_v2()[f"fl-stay_{cluster.network_name}"] == before

    cluster.subnets.release(OTHER_LEASE)
    wait_for("the route's removal", lambda: cluster.route_to(OTHER_LEASE) is None, 60, cluster.flanneld.log)
    assert node.endpoints_v2()[f"fl-stay_{cluster.network_name}"] == before
    cluster.libcni.ok("CHECK", "fl-stay", netns)
    cluster.libcni.ok("DEL", "fl-stay", netns)


def test_flanneld_restarts_under_running_pods(cluster: FlannelNode) -> None:
    node = cluster.node
    node.network = cluster.network_name
    netns = node.sandbox("v2", "fl-before")
    cluster.libcni.ok("ADD", "fl-before", netns)
    lease, network_id = cluster.lease, cluster.network()["ID"]
    before = node.endpoints_v2()

    cluster.restart_flanneld()

    assert cluster.lease == lease and cluster.network()["ID"] == network_id
    assert node.endpoints_v2() == before
    cluster.libcni.ok("CHECK", "fl-before", netns)
    new_netns = node.sandbox("v2", "fl-after")
    again = cluster.libcni.ok("ADD", "fl-after", new_netns)
    assert ipaddr.ip_address(first_ip(again.out)[0]) in lease, again.out
    for cid, ns in (("fl-before", netns), ("fl-after", new_netns)):
        cluster.libcni.ok("DEL", cid, ns)
        node.assert_clean(cid)


def test_an_hns_restart_needs_flanneld_restarted_and_says_so(cluster: FlannelNode) -> None:
    """flanneld v0.27.4 makes its network only at start-up. vxlan's is non-persistent (Flags 8):
    an HNS restart drops it with our pods' endpoints, ADD is code 11 and the doctor fails, both
    saying to restart flanneld; after that, ADD works, DEL of the pods from before works and GC
    with the live list clears what is gone. host-gw's cbr0 (V1, no flags) survives the restart."""
    node = cluster.node
    node.network = cluster.network_name
    old_netns = node.sandbox("v2", "fl-old")
    cluster.libcni.ok("ADD", "fl-old", old_netns)
    lease = cluster.lease

    node.hnsctl("restart")
    new_netns = node.sandbox("v2", "fl-new")
    if cluster.backend == "host-gw":
        assert cluster.network()["Name"] == "cbr0"
        cluster.libcni.ok("ADD", "fl-new", new_netns)
    else:
        assert cluster.network_name not in names(cluster)
        refused, _ = cluster.libcni("ADD", "fl-new", new_netns)
        refused.failed(11, f"network {cluster.network_name} not found", "restart flanneld")
        status, _ = cluster.libcni("STATUS")
        status.failed(50, f"{cluster.network_name} not found", "flanneld")
        rc, report = cluster.wincni("doctor", "--cni-conf", NET_D, "--cni-bin-dir", OPT_BIN)
        check = {c["id"]: c for c in report["checks"]}["hns-network"]
        assert rc == 1 and check["status"] == "fail" and "restart flanneld" in check["fix"], check

        cluster.restart_flanneld()
        assert cluster.network_name in names(cluster)
        cluster.libcni.ok("STATUS")
        added = cluster.libcni.ok("ADD", "fl-new", new_netns)
        assert ipaddr.ip_address(first_ip(added.out)[0]) in lease, added.out
        assert cluster.lease == lease

    cluster.libcni.ok("GC", valid=["fl-new/eth0"])  # libcni DELs the cached fl-old, then the plugins' GC
    node.assert_clean("fl-old")
    assert f"fl-new_{cluster.network_name}" in node.endpoints_v2()
    cluster.libcni.ok("DEL", "fl-old", old_netns)
    cluster.libcni.ok("DEL", "fl-new", new_netns)
    node.assert_clean("fl-new")


def names(cluster: FlannelNode) -> set[str]:
    return {n["Name"] for n in cluster.node.hnsctl("network", "list", "-o", "json")}


#: The node's next lease: the first of these that is not the one flanneld chose at random.
NEXT_LEASES = ("10.244.61.0/24", "10.244.62.0/24")


def test_a_lease_change_the_doctor_says_what_to_do_and_doing_it_works(cluster: FlannelNode) -> None:
    """The node comes back with another subnet: its lease gone from the subnet manager, another
    held for its address, flanneld restarted. flanneld deletes its network (HNS deletes our pod's
    endpoint with it) and makes it again on the new lease; the installed config stays as it was.
    What is left is host-local's reservation of the pod from before: the doctor names it and says
    to remove the pod's sandbox; once the runtime has (libcni's DEL, as containerd's
    RemovePodSandbox runs it), new pods get addresses of the new lease and nothing of the old one
    is left in host-local's store, flannel's, libcni's cache or HNS."""
    node = cluster.node
    node.network = cluster.network_name
    old_netns = node.sandbox("v2", "fl-before")
    old_ip = first_ip(cluster.libcni.ok("ADD", "fl-before", old_netns).out)[0]
    old, old_id = cluster.lease, cluster.network()["ID"]
    new_lease = next(subnet for subnet in NEXT_LEASES if subnet != str(old))

    cluster.flanneld.stop()
    attrs = cluster.subnets.leases()[str(old)]
    cluster.subnets.release(str(old))
    cluster.subnets.assign(new_lease, attrs, ttl=86400)
    if cluster.backend == "host-gw":
        host_endpoint_address(cluster.netns, new_lease)
    cluster.restart_flanneld()

    new = cluster.lease
    assert str(new) == new_lease and list(cluster.subnets.leases()) == [new_lease]
    net = cluster.network()
    assert net["ID"] != old_id and [s["IpAddressPrefix"] for s in net["Ipams"][0]["Subnets"]] == [new_lease]
    assert f"fl-before_{cluster.network_name}" not in node.endpoints(), "HNS deletes the endpoints with the network"
    assert node.ip_files().get(old_ip) == "fl-before"  # what leaks unless the operator acts
    assert installed_conf(cluster) == cluster.conf  # the config holds no lease
    cluster.libcni.ok("STATUS")

    rc, report = cluster.wincni("doctor", "--cni-conf", NET_D, "--cni-bin-dir", OPT_BIN)
    failing = {c["id"]: c for c in report["checks"] if c["status"] == "fail"}
    assert rc == 1 and sorted(failing) == ["pod-endpoints", "subnet-env"], failing
    said = failing["subnet-env"]["message"] + failing["subnet-env"]["fix"]
    assert f"{old_ip} (fl-before)" in said and "crictl rmp -f fl-before" in said and new_lease in said, said
    # the pod's namespace still runs without its endpoint: pod-endpoints says so too, for the same pod
    said = failing["pod-endpoints"]["message"] + failing["pod-endpoints"]["fix"]
    assert "fl-before" in said and old_ip in said and "crictl rmp fl-before" in said, said

    cluster.libcni.ok("DEL", "fl-before", old_netns)  # what crictl rmp has the runtime do
    node.assert_clean("fl-before")
    assert not (node.flannel_dir / "fl-before").exists()
    assert not node.path(rf"{LIBCNI_CACHE}\results\{cluster.conf['name']}-fl-before-eth0").exists()
    new_netns = node.sandbox("v2", "fl-after")
    new_ip = first_ip(cluster.libcni.ok("ADD", "fl-after", new_netns).out)[0]
    assert ipaddr.ip_address(new_ip) in new
    rc, report = cluster.wincni("doctor", "--cni-conf", NET_D, "--cni-bin-dir", OPT_BIN)
    assert rc == 0 and not [c for c in report["checks"] if c["status"] == "fail"], report
    assert not [ip for ip in node.ip_files() if ipaddr.ip_address(ip) in old]
    assert not [e for e in node.endpoints().values() if e.get("IPAddress") and ipaddr.ip_address(e["IPAddress"]) in old]
    cluster.libcni.ok("DEL", "fl-after", new_netns)
    node.assert_clean("fl-after")
