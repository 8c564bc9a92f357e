"""The reference's pkg/hns netconf_windows_test.go cases (containernetworking/plugins), against our pure policy helpers,
plus the fitting of user policies to the chosen API."""

import pytest

from libhns import policies as hp
from plugins.cni.errors import CniError
from plugins.cni.runtimeconfig import PortMapping
from plugins.winnet import policies as pol
from plugins.winnet.policies import V1, V2


# --- ApplyLoopbackDSRPolicy (cases 1-4) -------------------------------------------------------
@pytest.mark.parametrize("form", [V1, V2])
def test_dsr_filters_duplicated_ip(form):
    out = pol.OutboundNat.add_destination([], "172.16.0.12", form)
    out = pol.OutboundNat.add_destination(out, "172.16.0.12", form)
    assert len(out) == 1
    assert out[0]["Type"] == "OutBoundNAT"
    dest = out[0]["Destinations"] if form == V1 else out[0]["Settings"]["Destinations"]
    assert dest == ["172.16.0.12"]


@pytest.mark.parametrize("form", [V1, V2])
def test_dsr_appends_different_ip(form):
    out = pol.OutboundNat.add_destination(pol.OutboundNat.add_destination([], "172.16.0.12", form), "172.16.0.13", form)
    assert len(out) == 2
    dest = out[1]["Destinations"] if form == V1 else out[1]["Settings"]["Destinations"]
    assert dest == ["172.16.0.13"]


# --- ApplyOutboundNatPolicy (cases 5-10) ------------------------------------------------------
def test_outbound_nat_v1_appends_different_cidr():
    out = pol.OutboundNat.add_exception(pol.OutboundNat.add_exception([], "192.168.0.0/16", V1), "10.244.0.0/16", V1)
    assert len(out) == 2
    assert out[1] == {"Type": "OutBoundNAT", "ExceptionList": ["10.244.0.0/16"]}


def test_outbound_nat_v1_appends_when_existing_has_no_exception_list():
    pre = [{"Type": "OutBoundNAT", "OtherList": []}]
    out = pol.OutboundNat.add_exception(pre, "10.244.0.0/16", V1)
    assert len(out) == 2 and out[0] == {"Type": "OutBoundNAT", "OtherList": []}
    assert out[1]["ExceptionList"] == ["10.244.0.0/16"]


def test_outbound_nat_v1_blank_cidr_is_noop():
    pre = [{"Type": "OutBoundNAT", "ExceptionList": []}]
    out = pol.OutboundNat.add_exception(pre, "", V1)
    assert out == [{"Type": "OutBoundNAT", "ExceptionList": []}]


def test_outbound_nat_v2_appends_different_cidr():
    out = pol.OutboundNat.add_exception(pol.OutboundNat.add_exception([], "192.168.0.0/16", V2), "10.244.0.0/16", V2)
    assert len(out) == 2
    assert out[1] == {"Type": "OutBoundNAT", "Settings": {"Exceptions": ["10.244.0.0/16"]}}


def test_outbound_nat_v2_appends_when_existing_has_no_exceptions():
    pre = [{"Type": "OutBoundNAT", "Settings": {"Others": []}}]
    out = pol.OutboundNat.add_exception(pre, "10.244.0.0/16", V2)
    assert len(out) == 2 and "Others" in out[0]["Settings"]
    assert out[1]["Settings"]["Exceptions"] == ["10.244.0.0/16"]


def test_outbound_nat_v2_blank_cidr_is_noop():
    pre = [{"Type": "OutBoundNAT", "Settings": {"Exceptions": []}}]
    assert pol.OutboundNat.add_exception(pre, "", V2) == pre


@pytest.mark.parametrize("form", [V1, V2])
def test_outbound_nat_existing_exception_is_noop(form):
    pre = [pol.OutboundNat.add_exception([], "10.244.0.0/16", form)[0]]
    assert pol.OutboundNat.add_exception(pre, "10.244.0.0/16", form) == pre


# --- ApplyDefaultPAPolicy (cases 11-14) -------------------------------------------------------
def test_pa_v1_appends_different_ip():
    out = pol.ProviderAddress.add(pol.ProviderAddress.add([], "192.168.0.1", V1), "192.168.0.2", V1)
    assert len(out) == 2 and out[1] == {"Type": "PA", "PA": "192.168.0.2"}


def test_pa_v1_same_ip_is_noop():
    out = pol.ProviderAddress.add(pol.ProviderAddress.add([], "192.168.0.1", V1), "192.168.0.1", V1)
    assert len(out) == 1


@pytest.mark.parametrize(
    "form,pre",
    [
        (V1, {"Type": "OutBoundNAT", "Exceptions": ["192.168.0.0/16"]}),
        (V2, {"Type": "OutBoundNAT", "Settings": {"Exceptions": ["192.168.0.0/16"]}}),
    ],
)
def test_pa_blank_is_noop(form, pre):
    assert pol.ProviderAddress.add([pre], "", form) == [pre]


def test_pa_v2_appends_different_ip():
    out = pol.ProviderAddress.add(pol.ProviderAddress.add([], "192.168.0.1", V2), "192.168.0.2", V2)
    assert len(out) == 2
    assert out[1] == {"Type": "ProviderAddress", "Settings": {"ProviderAddress": "192.168.0.2"}}


# --- ApplyPortMappingPolicy (cases 15-18) -----------------------------------------------------
@pytest.mark.parametrize("form", [V1, V2])
def test_port_mappings_empty(form):
    assert pol.PortMapping.add([], (), form) == []


PM = PortMapping(host_port=8080, container_port=80, protocol="TCP", host_ip="192.168.1.2")


def test_port_mapping_v1():
    assert pol.PortMapping.add([], [PM], V1) == [
        {"Type": "NAT", "InternalPort": 80, "ExternalPort": 8080, "Protocol": "TCP"}
    ]


def test_port_mapping_v2():
    assert pol.PortMapping.add([], [PM], V2) == [
        {
            "Type": "PortMapping",
            "Settings": {"InternalPort": 80, "ExternalPort": 8080, "Protocol": 6, "VIP": "192.168.1.2"},
        }
    ]


@pytest.mark.parametrize("form", [V1, V2])
def test_port_mapping_invalid_protocol_is_code_7_naming_the_field(form):
    bad = PortMapping(host_port=8080, container_port=80, protocol="sctp-ish")
    with pytest.raises(CniError) as exc:
        pol.PortMapping.add([], [PM, bad], form)
    assert exc.value.code == 7
    assert "runtimeConfig.portMappings[1].protocol" in exc.value.msg


# --- user policies (cases 19-20 and translation) ----------------------------------------------
def test_fit_keeps_policies_of_the_right_schema():
    v1 = {"Type": "OutBoundNAT", "ExceptionList": ["192.168.1.2"]}
    assert pol.UserPolicies.fit([v1], ["policies[0].value"], V1) == [v1]
    v2 = {"Type": "OutBoundNAT", "Settings": {"Exceptions": ["192.168.1.2"]}}
    assert pol.UserPolicies.fit([v2], ["policies[0].value"], V2) == [v2]


@pytest.mark.parametrize(
    "v1,v2",
    [
        (
            {"Type": "OutBoundNAT", "ExceptionList": ["10.244.0.0/16"]},
            {"Type": "OutBoundNAT", "Settings": {"Exceptions": ["10.244.0.0/16"]}},
        ),
        (
            {"Type": "ROUTE", "DestinationPrefix": "10.96.0.0/12", "NeedEncap": True},
            {"Type": "SDNRoute", "Settings": {"DestinationPrefix": "10.96.0.0/12", "NeedEncap": True}},
        ),
        ({"Type": "PA", "PA": "10.0.0.1"}, {"Type": "ProviderAddress", "Settings": {"ProviderAddress": "10.0.0.1"}}),
    ],
)
def test_fit_translates_between_schemas(v1, v2):
    assert pol.UserPolicies.fit([v1], ["p"], V2) == [v2]
    assert pol.UserPolicies.fit([v2], ["p"], V1) == [v1]


@pytest.mark.parametrize(
    "value,form,needle",
    [
        ({"Type": "ELB", "VIPs": []}, V2, "policies[3].value"),
        ({"Type": "NoSuchThing", "Settings": {}}, V2, "unknown HCN endpoint policy type"),
        ("not-an-object", V1, "is not an HNS policy"),
        ({"NoType": 1}, V2, "is not an HNS policy"),
        ({"Type": "NAT", "Protocol": "bogus", "InternalPort": 80}, V2, "unknown protocol 'bogus'"),
        ({"Type": "PortMapping", "Settings": {"Flags": "x"}}, V1, "no apiVersion 1 (HNS V1) equivalent"),
        ({"Type": "PortMapping", "Settings": {"Protocol": [6]}}, V1, "write it in the V1 schema"),
    ],
)
def test_fit_rejects_with_code_7_naming_the_policy(value, form, needle):
    with pytest.raises(CniError) as exc:
        pol.UserPolicies.fit([value], ["policies[3].value"], form)
    assert exc.value.code == 7
    assert needle in exc.value.msg + exc.value.details
    assert "policies[3].value" in exc.value.msg


def test_missing_policies_compares_as_subsets_case_insensitively():
    want = [{"Type": "OutBoundNAT", "Settings": {"Exceptions": ["10.244.0.0/16"]}}]
    have = [{"Type": "OutBoundNAT", "Settings": {"Exceptions": ["10.244.0.0/16"], "Flags": 0}}]
    assert pol.missing_policies(want, have) == []
    assert pol.missing_policies(want, [{"Type": "OutBoundNAT", "Settings": {"Exceptions": ["10.0.0.0/8"]}}]) == want


# --- one home per policy type, one list per endpoint -------------------------------------------
def test_every_home_names_config_keys_the_schemas_have():
    import json
    from pathlib import Path

    import plugins

    root = Path(plugins.__file__).parent
    keys = set()
    for schema in ("winnet", "win_bridge", "win_overlay"):
        keys |= set(json.loads((root / schema / "schema.json").read_text())["properties"])
    for home in pol.HOMES:
        assert set(home.CONFIG) <= keys, home


class _Network:
    management_ip = "10.127.130.36"
    subnets = ()


def _netconf(**extra):
    from plugins.win_overlay.flavor import FLAVOR
    from plugins.winnet.config import load

    conf = {
        "cniVersion": "1.0.0",
        "name": "vxlan0",
        "type": "win-overlay",
        "ipam": {"type": "host-local"},
        "policies": [
            {
                "Name": "EndpointPolicy",
                "Value": {"Type": "ROUTE", "DestinationPrefix": "10.96.0.0/12", "NeedEncap": True},
            }
        ],
        **extra,
    }
    return FLAVOR, load(conf, "ADD", FLAVOR.schema())[1]


@pytest.mark.parametrize("form", [V1, V2])
def test_endpoint_policies_are_user_automatic_port_mappings_dsr_then_acls(form):
    from plugins.winnet.documents import Address

    flavor, netconf = _netconf(loopbackDSR=True, acls=[{"action": "block", "direction": "out", "protocol": "tcp"}])
    asked = []
    out = pol.endpoint_policies(
        flavor,
        netconf,
        _Network(),
        (Address("10.244.4.5/24", "10.244.4.1"),),
        [PM],
        form,
        lambda name: asked.append(name) or True,
    )
    assert out == [
        form.fit({"Type": "ROUTE", "DestinationPrefix": "10.96.0.0/12", "NeedEncap": True}),
        form.policy(hp.PROVIDER_ADDRESS, "10.127.130.36"),
        form.policy(hp.PORT_MAPPING, 80, 8080, "TCP", vip="192.168.1.2"),
        form.policy(hp.OUTBOUND_NAT, destinations=["10.244.4.5"]),
        form.policy(hp.ACL, action="Block", direction="Out", protocols=6, rule_type="Switch"),
    ]
    assert asked == ["dsr"]  # the plain rule needs no feature


def test_endpoint_policies_before_the_network_and_addresses_are_known():
    """What ADD checks before IPAM (and the doctor reads without a network): no automatic policies, no DSR."""
    flavor, netconf = _netconf(loopbackDSR=True)
    out = pol.endpoint_policies(flavor, netconf, None, (), (), V2, lambda name: pytest.fail(f"asked for {name}"))
    assert out == [{"Type": "SDNRoute", "Settings": {"DestinationPrefix": "10.96.0.0/12", "NeedEncap": True}}]


def test_endpoint_policies_refuse_acls_this_hns_lacks():
    flavor, netconf = _netconf(acls=[{"action": "allow", "direction": "in", "protocol": "tcp", "localPorts": "80-90"}])
    with pytest.raises(CniError) as exc:
        pol.endpoint_policies(flavor, netconf, None, (), (), V1, lambda name: False)
    assert exc.value.code == 7 and "port ranges" in exc.value.msg
