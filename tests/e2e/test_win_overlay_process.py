"""win-overlay as the kubelet runs it, on a simulated flannel vxlan node (vxlan0, VSID 4096).

The shared lifecycle (rollback, CHECK, GC, STATUS, parallel pods, result versions) is covered for
both plugins in test_winnet_lifecycle.py; here is what is win-overlay's own.
"""

from __future__ import annotations

import pytest

from hnsnode import MGMT_IP, SUBNET, Node, creates, first_ip, fixture_policies

USER = [
    {"name": "EndpointPolicy", "value": {"Type": "OutBoundNAT", "ExceptionList": ["10.244.0.0/16", "10.96.0.0/12"]}},
    {
        "name": "EndpointPolicy",
        "value": {"Type": "SDNRoute", "Settings": {"DestinationPrefix": "10.96.0.0/12", "NeedEncap": True}},
    },
]

pytestmark = pytest.mark.node("win-overlay")  # flanneld's vxlan0, VSID 4096


def mac_of(ip: str, prefix: str = "0E-2A") -> str:
    return prefix + "".join(f"-{int(b):02x}" for b in ip.split("."))


@pytest.mark.parametrize("api", ["v1", "v2"])
def test_overlay_endpoint_document(node, api):
    """Reference order: user policies, PA from the management IP, ipMasq's exception for the node's
    pod subnet; then port mappings (which the Go plugin drops on overlay); MAC from the IPv4 bytes."""
    conf = node.conf(
        ipMasq=True,
        policies=USER,
        capabilities={"portMappings": True},
        runtimeConfig={"portMappings": [{"hostPort": 8080, "containerPort": 80, "protocol": "TCP", "hostIP": MGMT_IP}]},
    )
    netns = node.sandbox(api, "pod1")
    result = node.add(conf, "pod1", netns)
    [doc] = creates(node.journal())
    ip, gateway = first_ip(result)
    assert gateway == "10.244.4.1"
    assert result["interfaces"][0]["mac"].upper() == mac_of(ip).upper()
    if api == "v2":
        assert doc["MacAddress"] == mac_of(ip)
        assert doc["Routes"] == [{"NextHop": "10.244.4.1", "DestinationPrefix": "0.0.0.0/0"}]
        assert doc["Policies"] == [
            {"Type": "OutBoundNAT", "Settings": {"Exceptions": ["10.244.0.0/16", "10.96.0.0/12"]}},
            {"Type": "SDNRoute", "Settings": {"DestinationPrefix": "10.96.0.0/12", "NeedEncap": True}},
            {"Type": "ProviderAddress", "Settings": {"ProviderAddress": MGMT_IP}},
            {"Type": "OutBoundNAT", "Settings": {"Exceptions": [SUBNET]}},
            {
                "Type": "PortMapping",
                "Settings": {"InternalPort": 80, "ExternalPort": 8080, "Protocol": 6, "VIP": MGMT_IP},
            },
        ]
    else:
        assert (doc["MacAddress"], doc["GatewayAddress"], doc["IPAddress"]) == (mac_of(ip), "10.244.4.1", ip)
        assert doc["Policies"] == [
            {"Type": "OutBoundNAT", "ExceptionList": ["10.244.0.0/16", "10.96.0.0/12"]},
            {"Type": "ROUTE", "DestinationPrefix": "10.96.0.0/12", "NeedEncap": True},
            {"Type": "PA", "PA": MGMT_IP},
            {"Type": "OutBoundNAT", "ExceptionList": [SUBNET]},
            {"Type": "NAT", "InternalPort": 80, "ExternalPort": 8080, "Protocol": "TCP"},
        ]
    assert node.add(conf, "pod1", netns) == result
    assert node.run("CHECK", {**conf, "prevResult": result}, "pod1", netns).ok


def test_custom_mac_prefix_and_no_ipmasq(node):
    netns = node.sandbox("v2", "pod1")
    result = node.add(node.conf(endpointMacPrefix="0a-1B"), "pod1", netns)
    [doc] = creates(node.journal())
    ip, _ = first_ip(result)
    assert doc["MacAddress"] == mac_of(ip, "0a-1B")
    assert doc["Policies"] == [{"Type": "ProviderAddress", "Settings": {"ProviderAddress": MGMT_IP}}]


def test_ipv6_is_rejected_and_leaks_nothing(node):
    conf = node.conf(
        ipam={
            "type": "host-local",
            "dataDir": str(node.ipam_dir),
            "ranges": [[{"subnet": SUBNET}], [{"subnet": "fd00:10:244:4::/64"}]],
        }
    )
    node.run("ADD", conf, "pod1", node.sandbox("v2", "pod1")).failed(7, "IPv6", "win-overlay")
    assert node.ipam_calls() == ["ADD pod1", "DEL pod1"]
    node.assert_clean("pod1")


def test_vxlan_settings_linux_flannel_cannot_talk_to(tmp_path):
    node = Node(tmp_path, "win-overlay").overlay("vxlan0", 4095)
    status = node.run("STATUS", node.conf("1.1.0"))
    status.failed(51, "VSID", "4095", "4096")
    run = node.run("ADD", node.conf(), "pod1", node.sandbox("v2", "pod1"))
    assert run.ok and "4095" in run.stderr and "warning" in run.stderr, (run.out, run.stderr)


@pytest.mark.parametrize(
    "fixture,api",
    [("cni.conf.overlay-v1.json", "v1"), ("cni.conf.overlay-v1.json", "v2"), ("cni.conf.overlay-v2.json", "v2")],
)
def test_node_fixtures_work_unchanged(node, fixture, api):
    doc, result = node.fixture_lifecycle(fixture, api)
    assert doc["Policies"][:2] == fixture_policies(f"cni.conf.overlay-{api}.json")
    assert first_ip(result)[1] == "10.244.4.1"


BAD = [
    (dict(endpointMacPrefix="0E2A"), "endpointMacPrefix"),
    (dict(endpointMacPrefix="GG-00"), "endpointMacPrefix"),
    (dict(ipMasq="true"), "ipMasq"),
    (
        dict(runtimeConfig={"portMappings": [{"hostPort": 80, "containerPort": 80, "protocol": "bogus"}]}),
        "portMappings[0].protocol",
    ),
    (dict(policies=[{"name": "EndpointPolicy", "value": {"Type": "ELB"}}]), "policies[0].value"),
]


def test_bad_input_table(node):
    node.assert_bad_inputs(BAD)


def test_empty_ip_masq_network_is_accepted(node):
    """Not a win-overlay key, but the same rule holds: "" is absent, the pod starts."""
    conf = node.conf(ipMasqNetwork="")
    netns = node.sandbox("v2", "pod1")
    assert node.add(conf, "pod1", netns)["ips"]
    assert node.run("DEL", conf, "pod1", netns).ok
