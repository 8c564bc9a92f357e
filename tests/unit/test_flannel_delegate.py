"""Delegate builder: Windows semantics on every OS, the reference's rules, and its saved bytes."""

from __future__ import annotations

import json

import pytest

from plugins.cni.errors import INVALID_CONFIG, CniError
from plugins.flannel import netconf
from plugins.flannel.config import FlannelConf
from plugins.flannel.delegate import build, encode
from plugins.flannel.subnet_env import parse
from testdata import FIXTURES, GOLDENS

GOLDEN = GOLDENS / "flannel-win-bridge.json"
LEASE = parse("FLANNEL_NETWORK=10.1.0.0/16\nFLANNEL_SUBNET=10.1.17.1/24\nFLANNEL_MTU=1472\nFLANNEL_IPMASQ=true\n", "s")


def conf_of(doc: dict) -> FlannelConf:
    return FlannelConf.from_conf(doc, "linux", "/")


def flannel(**extra) -> FlannelConf:
    return conf_of({"name": "cni-flannel", "type": "flannel", "subnetFile": "/s", "dataDir": "/d", **extra})


def backend(kind: str, name: str = "", vni: int = 4096, port: int = 0) -> netconf.Backend:
    return netconf.Backend(path="/etc/kube-flannel/net-conf.json", type=kind, name=name, vni=vni, port=port)


def test_windows_defaults_from_the_reference():
    assert build(flannel(), LEASE, None) == {
        "name": "cni-flannel",
        "type": "win-bridge",
        "ipMasq": True,
        "ipMasqNetwork": "10.1.0.0/16",
        "cniVersion": "0.2.0",
        "ipam": {"type": "host-local", "subnet": "10.1.17.0/24"},
    }


def test_ipmasq_follows_the_lease_and_is_not_inverted():
    lease = parse("FLANNEL_NETWORK=10.1.0.0/16\nFLANNEL_SUBNET=10.1.17.1/24\nFLANNEL_MTU=1\nFLANNEL_IPMASQ=false", "s")
    assert build(flannel(), lease, None)["ipMasq"] is False


def test_ipmasq_network_is_the_first_cluster_network():
    lease = parse(
        "FLANNEL_NETWORK=192.168.0.0/16,10.1.0.0/16\nFLANNEL_SUBNET=192.168.3.1/24\nFLANNEL_MTU=1\nFLANNEL_IPMASQ=true",
        "s",
    )
    assert build(flannel(), lease, None)["ipMasqNetwork"] == "192.168.0.0/16"


def test_config_version_runtime_config_and_delegate_keys_are_carried():
    conf = flannel(
        cniVersion="1.0.0",
        runtimeConfig={"portMappings": [{"hostPort": 80, "containerPort": 8080}]},
        delegate={"type": "win-overlay", "apiVersion": 2, "ipMasq": False, "cniVersion": "0.1.0"},
    )
    out = build(conf, LEASE, None)
    assert out["type"] == "win-overlay" and out["apiVersion"] == 2
    assert out["cniVersion"] == "1.0.0" and out["ipMasq"] is True  # flannel's values always win
    assert out["runtimeConfig"] == {"portMappings": [{"hostPort": 80, "containerPort": 8080}]}
    assert conf.delegate == {"type": "win-overlay", "apiVersion": 2, "ipMasq": False, "cniVersion": "0.1.0"}


@pytest.mark.parametrize(
    "delegate, msg",
    [
        ({"type": 5}, "'delegate' dictionary, if present, must have (string) 'type' field"),
        ({"name": "x"}, "'delegate' dictionary must not have 'name' field, it'll be set by flannel"),
        ({"ipam": {}}, "'delegate' dictionary must not have 'ipam' field, it'll be set by flannel"),
        ({"IPAM": {}}, "'delegate' dictionary must not have 'ipam' field, it'll be set by flannel"),
    ],
)
def test_the_reference_rules_on_the_delegate(delegate, msg):
    with pytest.raises(CniError) as err:
        build(flannel(delegate=delegate), LEASE, None)
    assert (err.value.code, err.value.msg) == (INVALID_CONFIG, msg)
    assert err.value.details


def test_an_ipv6_only_lease_cannot_serve_windows_pods():
    v6 = parse(
        "FLANNEL_IPV6_NETWORK=fc00::/48\nFLANNEL_IPV6_SUBNET=fc00::1/64\nFLANNEL_MTU=1\nFLANNEL_IPMASQ=true", "s"
    )
    with pytest.raises(CniError, match="has no IPv4 FLANNEL_NETWORK") as err:
        build(flannel(), v6, None)
    assert err.value.code == INVALID_CONFIG


@pytest.mark.parametrize(
    "kind, name, expected", [("vxlan", "cni-flannel", "win-overlay"), ("host-gw", "cni-flannel", "win-bridge")]
)
def test_the_backend_picks_the_delegate_when_the_config_does_not(kind, name, expected):
    assert build(flannel(), LEASE, backend(kind, name))["type"] == expected
    assert build(flannel(delegate={"type": "sdnbridge"}), LEASE, backend(kind, name))["type"] == "sdnbridge"


def test_an_unsupported_backend_is_an_error_only_when_it_must_pick():
    with pytest.raises(CniError, match=r'Backend.Type "udp" has no Windows plugin') as err:
        build(flannel(), LEASE, backend("udp"))
    assert err.value.code == INVALID_CONFIG and "host-gw" in err.value.details
    assert build(flannel(delegate={"type": "win-bridge"}), LEASE, backend("udp"))["type"] == "win-bridge"


def test_backend_checks_apply_even_with_an_explicit_type():
    with pytest.raises(CniError, match="Backend.Name is vxlan0, the CNI config names cni-flannel"):
        build(flannel(delegate={"type": "win-overlay"}), LEASE, backend("vxlan", "vxlan0"))


def test_the_recorded_go_run_saves_the_same_bytes():
    """flannel-win-bridge golden: our saved delegate config is byte-identical to the reference's."""
    step = json.load(open(GOLDEN))["steps"][0]
    subnet_file = step["stdin"]["subnetFile"].replace("\\", "/")
    lease = parse(json.load(open(GOLDEN))["initial_files"][subnet_file], subnet_file)
    saved = next(v for k, v in step["files_after"].items() if k.startswith("/var/lib/cni/flannel/"))
    assert encode(build(conf_of(step["stdin"]), lease, None)) == saved.encode()


@pytest.mark.parametrize(
    "conf_file, net_conf, expected_type",
    [
        ("cni.conf.l2bridge-v1.json", "net-conf.host-gw.json", "win-bridge"),
        ("cni.conf.l2bridge-v2.json", "net-conf.host-gw.json", "win-bridge"),
        ("cni.conf.overlay-v1.json", "net-conf.vxlan.json", "win-overlay"),
        ("cni.conf.overlay-v2.json", "net-conf.vxlan.json", "win-overlay"),
    ],
)
def test_every_node_fixture_builds_unchanged(conf_file, net_conf, expected_type):
    doc = json.load(open(f"{FIXTURES}/{conf_file}"))
    out = build(
        conf_of(doc), parse(open(f"{FIXTURES}/subnet.env").read(), "subnet.env"), netconf.load(f"{FIXTURES}/{net_conf}")
    )
    assert out["type"] == expected_type and out["name"] == doc["name"]
    assert out["ipam"] == {"type": "host-local", "subnet": "10.244.4.0/24"}
    assert (out["ipMasq"], out["ipMasqNetwork"], out["cniVersion"]) == (True, "10.244.0.0/16", doc["cniVersion"])
    assert {k: out[k] for k in doc["delegate"]} == doc["delegate"]


def test_encode_is_compact_and_sorted_like_go():
    assert encode({"b": 1, "a": {"d": [1, "é"], "c": True}}) == '{"a":{"c":true,"d":[1,"é"]},"b":1}'.encode()
