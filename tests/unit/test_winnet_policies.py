"""The reference's pkg/hns netconf_windows_test.go cases (containernetworking/plugins), against our pure policy helpers,
plus the fitting of user policies to the chosen API."""
import pytest

from plugins.cni.runtimeconfig import PortMapping
from plugins.cni.errors import CniError
from plugins.winnet import policies as pol


# --- ApplyLoopbackDSRPolicy (cases 1-4) -------------------------------------------------------
@pytest.mark.parametrize("schema", ["v1", "v2"])
def test_dsr_filters_duplicated_ip(schema):
    out = pol.add_loopback_dsr([], "172.16.0.12", schema)
    out = pol.add_loopback_dsr(out, "172.16.0.12", schema)
    assert len(out) == 1
    assert out[0]["Type"] == "OutBoundNAT"
    dest = out[0]["Destinations"] if schema == "v1" else out[0]["Settings"]["Destinations"]
    assert dest == ["172.16.0.12"]


@pytest.mark.parametrize("schema", ["v1", "v2"])
def test_dsr_appends_different_ip(schema):
    out = pol.add_loopback_dsr(pol.add_loopback_dsr([], "172.16.0.12", schema), "172.16.0.13", schema)
    assert len(out) == 2
    dest = out[1]["Destinations"] if schema == "v1" else out[1]["Settings"]["Destinations"]
    assert dest == ["172.16.0.13"]


# --- ApplyOutboundNatPolicy (cases 5-10) ------------------------------------------------------
def test_outbound_nat_v1_appends_different_cidr():
    out = pol.add_outbound_nat_exception(pol.add_outbound_nat_exception([], "192.168.0.0/16", "v1"), "10.244.0.0/16", "v1")
    assert len(out) == 2
    assert out[1] == {"Type": "OutBoundNAT", "ExceptionList": ["10.244.0.0/16"]}


def test_outbound_nat_v1_appends_when_existing_has_no_exception_list():
    pre = [{"Type": "OutBoundNAT", "OtherList": []}]
    out = pol.add_outbound_nat_exception(pre, "10.244.0.0/16", "v1")
    assert len(out) == 2 and out[0] == {"Type": "OutBoundNAT", "OtherList": []}
    assert out[1]["ExceptionList"] == ["10.244.0.0/16"]


def test_outbound_nat_v1_blank_cidr_is_noop():
    pre = [{"Type": "OutBoundNAT", "ExceptionList": []}]
    out = pol.add_outbound_nat_exception(pre, "", "v1")
    assert out == [{"Type": "OutBoundNAT", "ExceptionList": []}]


def test_outbound_nat_v2_appends_different_cidr():
    out = pol.add_outbound_nat_exception(pol.add_outbound_nat_exception([], "192.168.0.0/16", "v2"), "10.244.0.0/16", "v2")
    assert len(out) == 2
    assert out[1] == {"Type": "OutBoundNAT", "Settings": {"Exceptions": ["10.244.0.0/16"]}}


def test_outbound_nat_v2_appends_when_existing_has_no_exceptions():
    pre = [{"Type": "OutBoundNAT", "Settings": {"Others": []}}]
    out = pol.add_outbound_nat_exception(pre, "10.244.0.0/16", "v2")
    assert len(out) == 2 and "Others" in out[0]["Settings"]
    assert out[1]["Settings"]["Exceptions"] == ["10.244.0.0/16"]


def test_outbound_nat_v2_blank_cidr_is_noop():
    pre = [{"Type": "OutBoundNAT", "Settings": {"Exceptions": []}}]
    assert pol.add_outbound_nat_exception(pre, "", "v2") == pre


@pytest.mark.parametrize("schema", ["v1", "v2"])
def test_outbound_nat_existing_exception_is_noop(schema):
    pre = [pol.add_outbound_nat_exception([], "10.244.0.0/16", schema)[0]]
    assert pol.add_outbound_nat_exception(pre, "10.244.0.0/16", schema) == pre


# --- ApplyDefaultPAPolicy (cases 11-14) -------------------------------------------------------
def test_pa_v1_appends_different_ip():
    out = pol.add_provider_address(pol.add_provider_address([], "192.168.0.1", "v1"), "192.168.0.2", "v1")
    assert len(out) == 2 and out[1] == {"Type": "PA", "PA": "192.168.0.2"}


def test_pa_v1_same_ip_is_noop():
    out = pol.add_provider_address(pol.add_provider_address([], "192.168.0.1", "v1"), "192.168.0.1", "v1")
    assert len(out) == 1


@pytest.mark.parametrize("schema,pre", [
    ("v1", {"Type": "OutBoundNAT", "Exceptions": ["192.168.0.0/16"]}),
    ("v2", {"Type": "OutBoundNAT", "Settings": {"Exceptions": ["192.168.0.0/16"]}}),
])
def test_pa_blank_is_noop(schema, pre):
    assert pol.add_provider_address([pre], "", schema) == [pre]


def test_pa_v2_appends_different_ip():
    out = pol.add_provider_address(pol.add_provider_address([], "192.168.0.1", "v2"), "192.168.0.2", "v2")
    assert len(out) == 2
    assert out[1] == {"Type": "ProviderAddress", "Settings": {"ProviderAddress": "192.168.0.2"}}


# --- ApplyPortMappingPolicy (cases 15-18) -----------------------------------------------------
@pytest.mark.parametrize("schema", ["v1", "v2"])
def test_port_mappings_empty(schema):
    assert pol.add_port_mappings([], (), schema) == []


PM = PortMapping(host_port=8080, container_port=80, protocol="TCP", host_ip="192.168.1.2")


def test_port_mapping_v1():
    assert pol.add_port_mappings([], [PM], "v1") == [
        {"Type": "NAT", "InternalPort": 80, "ExternalPort": 8080, "Protocol": "TCP"}]


def test_port_mapping_v2():
    assert pol.add_port_mappings([], [PM], "v2") == [
        {"Type": "PortMapping", "Settings": {"InternalPort": 80, "ExternalPort": 8080, "Protocol": 6, "VIP": "192.168.1.2"}}]


@pytest.mark.parametrize("schema", ["v1", "v2"])
def test_port_mapping_invalid_protocol_is_code_7_naming_the_field(schema):
    bad = PortMapping(host_port=8080, container_port=80, protocol="sctp-ish")
    with pytest.raises(CniError) as exc:
        pol.add_port_mappings([], [PM, bad], schema)
    assert exc.value.code == 7
    assert "runtimeConfig.portMappings[1].protocol" in exc.value.msg


# --- user policies (cases 19-20 and translation) ----------------------------------------------
def test_fit_keeps_policies_of_the_right_schema():
    v1 = {"Type": "OutBoundNAT", "ExceptionList": ["192.168.1.2"]}
    assert pol.fit_user_policies([v1], ["policies[0].value"], "v1") == [v1]
    v2 = {"Type": "OutBoundNAT", "Settings": {"Exceptions": ["192.168.1.2"]}}
    assert pol.fit_user_policies([v2], ["policies[0].value"], "v2") == [v2]


@pytest.mark.parametrize("v1,v2", [
    ({"Type": "OutBoundNAT", "ExceptionList": ["10.244.0.0/16"]}, {"Type": "OutBoundNAT", "Settings": {"Exceptions": ["10.244.0.0/16"]}}),
    ({"Type": "ROUTE", "DestinationPrefix": "10.96.0.0/12", "NeedEncap": True},
     {"Type": "SDNRoute", "Settings": {"DestinationPrefix": "10.96.0.0/12", "NeedEncap": True}}),
    ({"Type": "PA", "PA": "10.0.0.1"}, {"Type": "ProviderAddress", "Settings": {"ProviderAddress": "10.0.0.1"}}),
])
def test_fit_translates_between_schemas(v1, v2):
    assert pol.fit_user_policies([v1], ["p"], "v2") == [v2]
    assert pol.fit_user_policies([v2], ["p"], "v1") == [v1]


@pytest.mark.parametrize("value,schema,needle", [
    ({"Type": "ELB", "VIPs": []}, "v2", "policies[3].value"),
    ({"Type": "NoSuchThing", "Settings": {}}, "v2", "unknown HCN endpoint policy type"),
    ("not-an-object", "v1", "is not an HNS policy"),
    ({"NoType": 1}, "v2", "is not an HNS policy"),
])
def test_fit_rejects_with_code_7_naming_the_policy(value, schema, needle):
    with pytest.raises(CniError) as exc:
        pol.fit_user_policies([value], ["policies[3].value"], schema)
    assert exc.value.code == 7
    assert needle in exc.value.msg + exc.value.details
    assert "policies[3].value" in exc.value.msg


def test_missing_policies_compares_as_subsets_case_insensitively():
    want = [{"Type": "OutBoundNAT", "Settings": {"Exceptions": ["10.244.0.0/16"]}}]
    have = [{"Type": "OutBoundNAT", "Settings": {"Exceptions": ["10.244.0.0/16"], "Flags": 0}}]
    assert pol.missing_policies(want, have) == []
    assert pol.missing_policies(want, [{"Type": "OutBoundNAT", "Settings": {"Exceptions": ["10.0.0.0/8"]}}]) == want
