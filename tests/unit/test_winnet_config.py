"""Config model, API choice, naming, DNS merge and the pure document/result translation."""

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from plugins.cni.config import validate
from plugins.cni.errors import CniError
from plugins.cni.runtimeconfig import RuntimeDNS
from plugins.win_bridge.flavor import FLAVOR as BRIDGE
from plugins.win_bridge.flavor import bridge_gateway
from plugins.win_overlay.flavor import FLAVOR as OVERLAY
from plugins.win_overlay.flavor import overlay_mac
from plugins.winnet import documents as docs
from plugins.winnet.config import DnsSettings, NetConf, canonicalize, endpoint_name, merged_dns, sandbox_id
from plugins.winnet.hnsapi import choose_api
from testdata import FIXTURES


def test_go_style_keys_are_read_case_insensitively():
    conf = canonicalize(
        {
            "Name": "cbr0",
            "ApiVersion": 2,
            "Policies": [
                {
                    "Name": "EndpointPolicy",
                    "Value": {"Type": "OutBoundNAT", "Settings": {"Exceptions": ["10.0.0.0/8"]}},
                },
                {"Name": "someOtherType", "Value": {"someOtherKey": "someOtherValue"}},
            ],
            "DNS": {"Nameservers": ["10.96.0.10"], "Search": ["svc.cluster.local"]},
        }
    )
    n = NetConf.from_conf(conf)
    assert n.name == "cbr0" and n.api_version == 2
    assert n.policies == ({"Type": "OutBoundNAT", "Settings": {"Exceptions": ["10.0.0.0/8"]}},)
    assert n.policy_sources == ("policies[0].value",)
    assert n.dns == DnsSettings(nameservers=("10.96.0.10",), search=("svc.cluster.local",))


def test_additional_args_are_endpoint_policies_too():
    n = NetConf.from_conf(
        canonicalize(
            {
                "name": "n",
                "AdditionalArgs": [
                    {
                        "Name": "EndpointPolicy",
                        "Value": {"Type": "SDNRoute", "Settings": {"DestinationPrefix": "10.96.0.0/12"}},
                    },
                    {"Name": "NetworkPolicy", "Value": {"Type": "NetAdapterName", "Settings": {}}},
                ],
            }
        )
    )
    assert [p["Type"] for p in n.policies] == ["SDNRoute"]
    assert n.policy_sources == ("AdditionalArgs[0].value",)


@pytest.mark.parametrize(
    "api,netns,want",
    [
        (2, "none", 2),
        (1, "2f1178e7-5178-5b05-b18c-4f6337bce49f", 1),
        (None, "2f1178e7-5178-5b05-b18c-4f6337bce49f", 2),
        (None, "{2F1178E7-5178-5B05-B18C-4F6337BCE49F}", 2),
        (None, "none", 1),
        (None, "container:abc", 1),
        (None, "", 1),
        (0, "2f1178e7-5178-5b05-b18c-4f6337bce49f", 2),
    ],
)
def test_api_choice(api, netns, want):
    assert choose_api(api, netns) == want


def test_endpoint_name_uses_the_sandbox_for_shared_containers():
    assert sandbox_id("app1", "container:pause1") == "pause1"
    assert endpoint_name("app1", "container:pause1", "cbr0") == "pause1_cbr0"
    assert endpoint_name("pause1", "none", "cbr0") == "pause1_cbr0"
    assert endpoint_name("c1", "2f1178e7-5178-5b05-b18c-4f6337bce49f", "vxlan0") == "c1_vxlan0"


def test_dns_merge_runtime_wins_when_set():
    conf = DnsSettings(nameservers=("1.1.1.1",), domain="d", search=("a",), options=("o",))
    assert merged_dns(conf, RuntimeDNS()) == conf
    got = merged_dns(conf, RuntimeDNS(servers=("10.96.0.10",), searches=("svc",)))
    assert got == DnsSettings(nameservers=("10.96.0.10",), domain="d", search=("svc",), options=("o",))


@pytest.mark.parametrize("fixture", sorted(p.name for p in FIXTURES.glob("cni.conf.*.json")))
def test_every_fixture_delegate_validates(fixture):
    delegate = json.loads((FIXTURES / fixture).read_text())["delegate"]
    conf = canonicalize({**delegate, "name": "cbr0", "cniVersion": "0.3.0"})
    flavor = OVERLAY if delegate["type"] == "win-overlay" else BRIDGE
    validate(conf, flavor.schema())
    assert NetConf.from_conf(conf).policies


@pytest.mark.parametrize(
    "flavor,conf,field",
    [
        (BRIDGE, {"apiVersion": "2"}, "apiVersion"),
        (BRIDGE, {"ipMasqNetwork": "10.244.0.0/33"}, "ipMasqNetwork"),
        (BRIDGE, {"loopbackDSR": "yes"}, "loopbackDSR"),
        (BRIDGE, {"policies": [{"name": "EndpointPolicy"}]}, "policies[0]"),
        (BRIDGE, {"dns": {"nameservers": ["not-an-ip"]}}, "dns.nameservers[0]"),
        (
            BRIDGE,
            {"runtimeConfig": {"portMappings": [{"hostPort": 70000, "containerPort": 80}]}},
            "runtimeConfig.portMappings[0].hostPort",
        ),
        (OVERLAY, {"endpointMacPrefix": "0E2A"}, "endpointMacPrefix"),
        (OVERLAY, {"ipMasq": "true"}, "ipMasq"),
    ],
)
def test_bad_fields_are_code_7_naming_the_field(flavor, conf, field):
    with pytest.raises(CniError) as exc:
        validate(canonicalize({"name": "cbr0", **conf}), flavor.schema())
    assert exc.value.code == 7
    assert exc.value.msg.startswith(field)


def test_v2_document_and_result_dual_stack():
    plan = docs.EndpointPlan(
        name="c1_cbr0",
        network_id="NET",
        dns=DnsSettings(nameservers=("10.96.0.10",)),
        addresses=(docs.Address("10.244.4.3/24", "10.244.4.2"), docs.Address("fd00::3/64", "fd00::2")),
        policies=({"Type": "OutBoundNAT", "Settings": {"Exceptions": ["10.244.0.0/16"]}},),
    )
    doc = docs.v2_document(plan)
    assert doc["IpConfigurations"] == [{"IpAddress": "10.244.4.3"}, {"IpAddress": "fd00::3"}]
    assert doc["Routes"] == [
        {"NextHop": "10.244.4.2", "DestinationPrefix": "0.0.0.0/0"},
        {"NextHop": "fd00::2", "DestinationPrefix": "::/0"},
    ]
    assert doc["Dns"] == {"ServerList": ["10.96.0.10"]}
    assert doc["SchemaVersion"] == {"Major": 2, "Minor": 0}
    v1 = docs.v1_document(plan)
    assert v1 == {
        "Name": "c1_cbr0",
        "VirtualNetwork": "NET",
        "DNSServerList": "10.96.0.10",
        "GatewayAddress": "10.244.4.2",
        "IPAddress": "10.244.4.3",
        "Policies": [{"Type": "OutBoundNAT", "Settings": {"Exceptions": ["10.244.0.0/16"]}}],
    }
    res = docs.build_result("c1_cbr0", "00-15-5D-00-00-01", "ns", plan.addresses, plan.dns, "1.0.0").to_dict("1.0.0")
    assert res["ips"] == [
        {"interface": 0, "address": "10.244.4.3/24", "gateway": "10.244.4.2"},
        {"interface": 0, "address": "fd00::3/64", "gateway": "fd00::2"},
    ]
    assert res["dns"] == {"nameservers": ["10.96.0.10"]}


def test_empty_dns_is_omitted_not_blank_lists():
    plan = docs.EndpointPlan(
        name="e", network_id="N", dns=DnsSettings(), addresses=(docs.Address("10.0.0.3/24", "10.0.0.2"),)
    )
    assert "Dns" not in docs.v2_document(plan)
    assert "DNSServerList" not in docs.v1_document(plan)


@pytest.mark.parametrize(
    "ip,gw", [("10.244.1.7/24", "10.244.1.2"), ("10.244.1.200/25", "10.244.1.130"), ("fd00::5/64", "fd00::2")]
)
def test_bridge_gateway(ip, gw):
    assert bridge_gateway(ip) == gw


@given(st.ip_addresses(v=4))
def test_overlay_mac_is_prefix_plus_ip_bytes(ip):
    mac = overlay_mac("0E-2A", str(ip))
    assert mac.startswith("0E-2A-") and len(mac) == 17
    assert bytes(int(b, 16) for b in mac.split("-")[2:]) == ip.packed


def test_overlay_mac_example():
    assert overlay_mac("0E-2A", "10.244.1.5") == "0E-2A-0a-f4-01-05"


def test_bridge_ipam_conf_starts_after_the_gateway_unless_configured():
    conf = {"name": "cbr0", "ipam": {"type": "host-local", "subnet": "10.244.4.0/24"}}
    assert BRIDGE.ipam_conf(conf)["ipam"]["rangeStart"] == "10.244.4.3"
    assert "rangeStart" not in conf["ipam"]  # pure: input untouched
    explicit = {"name": "cbr0", "ipam": {"type": "host-local", "subnet": "10.244.4.0/24", "rangeStart": "10.244.4.10"}}
    assert BRIDGE.ipam_conf(explicit)["ipam"]["rangeStart"] == "10.244.4.10"
    ranges = {
        "name": "cbr0",
        "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.244.4.0/24"}], [{"subnet": "fd00::/64"}]]},
    }
    got = BRIDGE.ipam_conf(ranges)["ipam"]["ranges"]
    assert got[0][0]["rangeStart"] == "10.244.4.3" and "rangeStart" not in got[1][0]


@pytest.mark.parametrize("ranges", [5, "x", {"subnet": "10.244.4.0/24"}, [5, None]])
def test_bridge_ipam_conf_leaves_malformed_ranges_for_host_local_to_name(ranges):
    """A wrong shape is host-local's code 7 naming the field, not a crash here (it was a 999)."""
    conf = {"name": "cbr0", "ipam": {"type": "host-local", "ranges": ranges}}
    assert BRIDGE.ipam_conf(conf)["ipam"]["ranges"] == ranges


@pytest.mark.parametrize("flavor", [BRIDGE, OVERLAY])
def test_empty_ip_masq_network_is_absent_as_in_go(flavor):
    """Go's zero value: a config with "ipMasqNetwork": "" works with the Go plugins, so it must here."""
    conf = canonicalize({"name": "cbr0", "ipMasqNetwork": ""})
    validate(conf, flavor.schema())
    assert "ipMasqNetwork" not in conf
    assert NetConf.from_conf(conf).ip_masq_network == ""
