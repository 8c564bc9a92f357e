"""The lifecycle win-bridge and win-overlay share, run as processes against the HNS simulator.

Each test runs for both plugins (parametrized), and where the API matters for V1 (dockershim:
pause container, HNSCall) and V2 (containerd: namespace GUID, HCN).
"""

from __future__ import annotations

import ipaddress

import pytest

from hnsnode import Node, call_names, creates, fault_targets, golden_calls

PLUGINS = ["win-bridge", "win-overlay"]
GOLDEN = {
    "win-bridge": {"v1": "wb-v1-basic.json", "v2": "wb-v2-basic.json"},
    "win-overlay": {"v1": "wo-v1-basic.json", "v2": "wo-v2-basic.json"},
}
pytestmark = pytest.mark.node(*PLUGINS)  # each test on both plugins' flanneld networks


def ep_name(node: Node, cid: str) -> str:
    return f"{cid}_{node.network}"


def is_attached(node: Node, cid: str, netns: str) -> bool:
    ep = node.endpoints()[ep_name(node, cid)]
    if netns == "none":
        return cid in ep["SharedContainers"]
    return ep.get("Namespace", {}).get("ID", "").upper() == netns.upper()


# ---------------------------------------------------------------------------------- ADD/CHECK/DEL
@pytest.mark.parametrize(
    "api,api_version", [("v1", 1), ("v2", 2), ("v1", None), ("v2", None)], ids=["v1", "v2", "auto-none", "auto-guid"]
)
def test_lifecycle(node, api, api_version, request):
    """ADD, retry, CHECK with prevResult, DEL, DEL again — and the raw HNS calls each makes."""
    extra = {} if api_version is None else {"apiVersion": api_version}
    conf = node.conf(**extra)
    netns = node.sandbox(api, "pod1")
    result = node.add(conf, "pod1", netns)
    add_calls = node.journal()
    # The API: HCN calls for a namespace GUID, HNSCall (+ HCS hot attach) for a pause container.
    hcn = [c for c in add_calls if c["op"].startswith("Hcn")]
    assert (bool(hcn), all(c["api"] == api for c in add_calls)) == (api == "v2", True), call_names(add_calls)
    assert is_attached(node, "pod1", netns)
    assert node.ipam_calls() == ["ADD pod1"]
    ip = result["ips"][0]["address"].split("/")[0]
    assert node.ip_files() == {ip: "pod1"}
    assert result["interfaces"][0]["name"] == ep_name(node, "pod1")
    assert result["interfaces"][0].get("sandbox") == (None if netns == "none" else netns)
    # Fewer raw calls than the Go reference for the same ADD.
    reference = golden_calls(GOLDEN[node.plugin][api], 0)
    assert len(call_names(add_calls)) <= len(reference), (call_names(add_calls), reference)

    # Idempotent retry: same answer, still one endpoint, one address, no IPAM call.
    again = node.add(conf, "pod1", netns)
    assert again == result
    assert not creates(node.journal())
    assert node.ipam_calls() == []
    assert [n for n in node.endpoints() if n.startswith("pod1")] == [ep_name(node, "pod1")]
    assert node.ip_files() == {ip: "pod1"}

    # libcni CHECK: prevResult is the ADD result.
    check = node.run("CHECK", {**conf, "prevResult": result}, "pod1", netns)
    assert check.ok, check.out
    assert node.ipam_calls() == ["CHECK pod1"]
    node.journal()

    assert node.run("DEL", {**conf, "prevResult": result}, "pod1", netns).ok
    del_calls = node.journal()
    node.assert_clean("pod1")
    assert node.ipam_calls() == ["DEL pod1"]
    assert len(call_names(del_calls)) <= len(golden_calls(GOLDEN[node.plugin][api], -1))
    second = node.run("DEL", conf, "pod1", netns)
    assert second.ok and second.out is None, second.out
    request.node.user_properties.append(
        (
            "calls",
            {"add": call_names(add_calls), "del": call_names(del_calls), "close": call_names(add_calls, close=True)},
        )
    )


def test_api_version_2_needs_a_namespace(node):
    run = node.run("ADD", node.conf(apiVersion=2), "pod1", "none")
    run.failed(4, "CNI_NETNS", "apiVersion")
    assert node.ipam_calls() == []


@pytest.mark.parametrize("api", ["v1", "v2"])
def test_without_ipam_hns_chooses_the_address(node, api):
    conf = {k: v for k, v in node.conf().items() if k != "ipam"}
    netns = node.sandbox(api, "pod1")
    result = node.add(conf, "pod1", netns)
    ip = result["ips"][0]["address"].split("/")[0]
    assert node.endpoints()[ep_name(node, "pod1")]["IPAddress"] == ip and node.ipam_calls() == []
    assert node.add(conf, "pod1", netns) == result
    assert node.run("DEL", conf, "pod1", netns).ok
    node.assert_clean("pod1")


@pytest.mark.parametrize("version", ["0.2.0", "0.3.1", "1.0.0", "1.1.0"])
def test_result_versions(node, version):
    netns = node.sandbox("v2", "pod1")
    out = node.add(node.conf(version, dns={"nameservers": ["10.96.0.10"]}), "pod1", netns)
    assert out["cniVersion"] == version
    if version == "0.2.0":
        assert set(out) == {"cniVersion", "ip4", "dns"}
        assert ipaddress.ip_interface(out["ip4"]["ip"]) in ipaddress.ip_network("10.244.4.0/24")
        assert out["ip4"]["gateway"] and out["ip4"]["routes"] == [{"dst": "0.0.0.0/0", "gw": out["ip4"]["gateway"]}]
    else:
        ip = out["ips"][0]
        assert ("version" in ip) == (version == "0.3.1")
        assert ip["interface"] == 0 and out["interfaces"][0]["sandbox"] == netns
        assert out["routes"] == [{"dst": "0.0.0.0/0", "gw": ip["gateway"]}]
    assert out["dns"] == {"nameservers": ["10.96.0.10"]}
    assert '[""]' not in str(out).replace("'", '"')


# ---------------------------------------------------------------------------------- rollback
@pytest.mark.parametrize("api", ["v1", "v2"])
def test_rollback_when_any_hns_call_fails(node, api):
    """Fail each raw HNS call an ADD makes, in turn: nothing is left and IPAM DEL ran once."""
    conf = node.conf()
    node.add(conf, "probe", node.sandbox(api, "probe"))
    targets = fault_targets(node.journal())
    node.ipam_calls()
    assert len(targets) >= 4, targets
    for i, target in enumerate(targets):
        cid = f"fault{i}"
        netns = node.sandbox(api, cid)
        run = node.fault_run("ADD", conf, cid, netns, f"{target}=0x80004005")
        run.failed(100, "E_FAIL" if target.startswith("HNSCall") else "0x80004005")
        node.assert_clean(cid)
        ipam = node.ipam_calls()
        assert ipam in ([], [f"ADD {cid}", f"DEL {cid}"]), (target, ipam)
    # A later ADD of the same pod works: the rollback left nothing in the way.
    assert node.add(conf, "fault0", "none" if api == "v1" else node.sandbox(api, "x"))["ips"]


# ---------------------------------------------------------------------------------- DEL
def test_del_attempts_both_halves(node):
    conf = node.conf()
    for cid in ("a", "b"):
        node.add(conf, cid, node.sandbox("v1", cid))
    node.ipam_calls()
    # IPAM DEL fails (no such plugin): the endpoint still goes, the error is reported.
    broken = {**conf, "ipam": {**conf["ipam"], "type": "no-such-ipam"}}
    run = node.run("DEL", broken, "a", "none")
    assert run.rc == 1 and "no-such-ipam" in run.out["msg"], run.out
    assert ep_name(node, "a") not in node.endpoints()
    # HNS refuses the endpoint removal: the address is still released, the error reported, a retry cleans up.
    run = node.fault_run("DEL", conf, "b", "none", "HNSCall:DELETE /endpoints/*=0x80004005")
    run.failed(100, "E_FAIL", "b_" + node.network)
    assert "b" not in node.ip_files().values()
    assert ep_name(node, "b") in node.endpoints()
    assert node.run("DEL", conf, "b", "none").ok
    node.assert_clean("b")


def test_v1_del_with_empty_netns_removes_the_pause_endpoint(node):
    conf = node.conf()
    node.add(conf, "pause", node.sandbox("v1", "pause"))
    assert node.run("DEL", conf, "pause", "").ok
    node.assert_clean("pause")


# ---------------------------------------------------------------------------------- CHECK
@pytest.mark.parametrize("api", ["v1", "v2"])
def test_check_names_what_differs(node, api):
    conf = node.conf()
    netns = node.sandbox(api, "pod1")
    result = node.add(conf, "pod1", netns)
    with_prev = {**conf, "prevResult": result}
    # A prevResult address the endpoint does not carry.
    moved = {**result, "ips": [{**result["ips"][0], "address": "10.244.4.99/24"}]}
    node.run("CHECK", {**conf, "prevResult": moved}, "pod1", netns).failed(101, "10.244.4.99")
    # Detached behind our back.
    ep_id = node.endpoints()[ep_name(node, "pod1")]["ID"]
    if api == "v2":
        node.hnsctl("namespace", "detach", netns, ep_id)
    else:
        node.hnsctl("container", "delete", "pod1")
    node.run("CHECK", with_prev, "pod1", netns).failed(101, "not attached")
    # Deleted behind our back.
    node.hnsctl("endpoint", "delete", ep_id)
    node.run("CHECK", with_prev, "pod1", netns).failed(101, ep_name(node, "pod1"), "does not exist")
    # CHECK came with 0.4.0.
    node.run("CHECK", {**with_prev, "cniVersion": "0.3.1"}, "pod1", netns).failed(1, "CHECK")


# ---------------------------------------------------------------------------------- GC / STATUS
def test_gc_removes_endpoints_of_unknown_sandboxes(node):
    conf = node.conf("1.1.0")
    for cid, api in (("keep", "v2"), ("gone1", "v2"), ("gone2", "v1")):
        node.add(conf, cid, node.sandbox(api, cid))
    node.ipam_calls()
    gc = {**conf, "cni.dev/valid-attachments": [{"containerID": "keep", "ifname": "eth0"}]}
    run = node.run("GC", gc, "", "")
    assert run.ok, run.out
    eps = node.endpoints()
    assert ep_name(node, "keep") in eps and not {ep_name(node, "gone1"), ep_name(node, "gone2")} & set(eps)
    if node.plugin == "win-bridge":
        assert "cbr0_ep" in eps
    assert sorted(node.ip_files().values()) == ["keep"]
    assert node.ipam_calls() == ["GC "]
    node.assert_clean("gone1")
    node.assert_clean("gone2")


def test_status(node):
    conf = node.conf("1.1.0")
    assert node.run("STATUS", conf).ok
    missing = node.conf("1.1.0", name="flannel.4096")
    node.run("STATUS", missing).failed(50, "network flannel.4096 not found: is flanneld running on this node?")


# ---------------------------------------------------------------------------------- errors
def other_network(node: Node) -> tuple[str, str]:
    """Create a network of the other plugin's type on the node; (its name, its type)."""
    mine = node.network
    if node.plugin == "win-bridge":
        node.overlay("vxlan0")
        other = ("vxlan0", "Overlay")
    else:
        node.bridge("cbr0", host_endpoint=False)
        other = ("cbr0", "L2Bridge")
    node.network = mine
    return other


def test_network_missing_or_of_the_wrong_type(node):
    netns = node.sandbox("v2", "pod1")
    node.run("ADD", node.conf(name="nope"), "pod1", netns).failed(11, "network nope not found")
    other, hns_type = other_network(node)
    node.run("ADD", node.conf(name=other), "pod1", netns).failed(7, f"network {other}", hns_type)
    assert node.ipam_calls() == []


def test_endpoint_of_the_same_name_on_another_network_is_replaced(node):
    other, _ = other_network(node)
    stale = node.hnsctl("endpoint", "create", ep_name(node, "pod1"), "--network", other, "-o", "json")
    run = node.run("ADD", node.conf(), "pod1", node.sandbox("v2", "pod1"))
    assert run.ok and "another network" in run.stderr, (run.out, run.stderr)
    ep = node.endpoints_v2()[ep_name(node, "pod1")]
    assert ep["ID"] != stale["ID"] and ep["HostComputeNetwork"] != stale["HostComputeNetwork"]
    assert stale["ID"] not in {e["ID"] for e in node.endpoints_v2().values()}


def test_endpoint_of_the_same_name_on_another_network_in_use_is_left_alone(node):
    other, _ = other_network(node)
    live = node.hnsctl("endpoint", "create", ep_name(node, "pod1"), "--network", other, "-o", "json")
    node.hnsctl("namespace", "attach", node.hnsctl("namespace", "create", "-o", "json")["ID"], live["ID"])
    run = node.run("ADD", node.conf(), "pod1", node.sandbox("v2", "pod1"))
    run.failed(11, live["ID"], "another network")
    assert "removing stale" not in run.stderr, run.stderr
    assert {e["ID"] for e in node.endpoints_v2().values()} >= {live["ID"]}
    assert node.ipam_calls() == ["DEL pod1"]  # no address taken; a killed earlier ADD's is released


# ---------------------------------------------------------------------------------- scale
def test_twenty_pods_in_parallel(node):
    conf = node.conf()
    pods = [(f"pod{i:02d}", node.sandbox("v2" if i % 2 else "v1", f"pod{i:02d}")) for i in range(20)]
    runs = node.run_many(("ADD", conf, cid, netns) for cid, netns in pods)
    assert all(r.ok for r in runs), [r.out for r in runs if not r.ok]
    ips = [r.out["ips"][0]["address"] for r in runs]
    assert len(set(ips)) == 20 and "10.244.4.1/24" not in ips
    assert ("10.244.4.2/24" in ips) == (node.plugin == "win-overlay"), "only win-bridge keeps .2 (cbr0_ep) free"
    eps = node.endpoints()
    assert {ep_name(node, cid) for cid, _ in pods} <= set(eps)
    assert len({eps[ep_name(node, cid)]["ID"] for cid, _ in pods}) == 20
    assert sorted(node.ip_files().values()) == sorted(cid for cid, _ in pods)
    runs = node.run_many(("DEL", conf, cid, netns) for cid, netns in pods)
    assert all(r.ok for r in runs), [r.out for r in runs if not r.ok]
    assert node.ip_files() == {}
    assert not [n for n in node.endpoints() if n.startswith("pod")]


@pytest.mark.parametrize(
    "var,value",
    [
        ("LIBHNS_BACKEND", "bogus"),
        ("LIBHNS_SIM_VERSION", "x"),
        ("LIBHNS_SIM_FAULTS", "nonsense"),
        ("LIBHNS_SIM_MGMT_DELAY", "-1"),
        ("LIBHNS_SIM_ADAPTERS", "Ethernet"),
    ],
)
def test_a_bad_libhns_variable_is_code_4_naming_it_before_ipam(node, var, value):
    """The environment's fault, not HNS's: code 4, no traceback (it was a 999), no IP taken."""
    for command in ("ADD", "DEL"):
        run = node.run(command, node.conf(), "pod1", node.sandbox("v2", "pod1"), **{var: value})
        run.failed(4, var, "fix or unset")
        assert "Traceback" not in run.stderr
    assert "ADD pod1" not in node.ipam_calls()
