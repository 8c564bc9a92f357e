"""The two adapters answer every question where HCN (V2) and HNSCall (V1) differ, so the
lifecycle holds one ``EndpointApi`` and never asks which: what an endpoint takes of IPAM's
addresses and of the DNS settings, what CHECK says it is attached to, whether a network's own
document shows its management IP, and whether the command joins an existing endpoint."""

from __future__ import annotations

import pytest

from libhns.objects import HNSNetwork, HostComputeNetwork
from plugins.cni.errors import CniError
from plugins.cni.result import IPConfig
from plugins.winnet.config import DnsSettings
from plugins.winnet.hnsapi import EndpointApi, HcnApi, HnsV1Api, open_api

NETNS = "8C5E9A5B-1E5F-4C3E-9D4C-5F1E2A3B4C5D"
IPS = [IPConfig("fd00:4::5/64"), IPConfig("10.244.4.5/24"), IPConfig("10.244.4.6/24")]
DNS = DnsSettings(
    nameservers=("10.96.0.10",), domain="cluster.local", search=("svc.cluster.local",), options=("ndots:5",)
)


def api(tmp_path, version: int, netns: str = NETNS):
    return open_api(version, {"LIBHNS_BACKEND": "sim", "LIBHNS_SIM_DIR": str(tmp_path)}, None, "pod1", netns)


def test_open_api_gives_both_adapters_one_raw_stack(tmp_path):
    hcn, v1 = api(tmp_path, 2), api(tmp_path, 1, "none")
    assert type(hcn) is HcnApi and type(v1) is HnsV1Api
    assert hcn.hcn.raw is hcn.hnscall.raw and v1.hcn.raw is v1.hnscall.raw


def _public(cls: type) -> set[str]:
    """What a class offers its callers: methods, properties and class attributes, annotated ones too."""
    names = set()
    for c in cls.__mro__[:-1]:
        names |= set(vars(c)) | set(vars(c).get("__annotations__", {}))
    return {n for n in names if not n.startswith("_")}


@pytest.mark.parametrize("adapter", [HcnApi, HnsV1Api])
def test_the_protocol_says_everything_an_adapter_does(adapter):
    """A caller reads ``EndpointApi`` to know what it may ask; nothing an adapter does is missing
    from it, nothing in it is missing from an adapter."""
    assert _public(adapter) == _public(EndpointApi)


@pytest.mark.parametrize("adapter", [HcnApi, HnsV1Api])
def test_what_an_api_lacks_is_a_feature_libhns_names(adapter):
    """A misspelt name would quietly be a feature HNS's version answers for."""
    from libhns.client import Features

    assert set(adapter.lacks) <= set(Features.__slots__)


@pytest.mark.parametrize("version, netns", [(2, NETNS), (1, "none")])
def test_both_adapters_take_their_clients_by_name_only(tmp_path, version, netns):
    """A call written for another order fails at once instead of swapping the two clients."""
    made = api(tmp_path, version, netns)
    with pytest.raises(TypeError):
        type(made)(made.hcn, made.hnscall, "pod1", netns)
    again = type(made)(hcn=made.hcn, hnscall=made.hnscall, container_id="pod1", netns=netns)
    assert (again.hcn, again.hnscall) == (made.hcn, made.hnscall)


def test_an_hcn_endpoint_takes_every_address_and_all_of_the_dns(tmp_path):
    hcn = api(tmp_path, 2)
    assert list(hcn.usable_ips(IPS)) == IPS
    assert hcn.policy_form.applied_dns(DNS) == DNS
    assert hcn.attach_target == NETNS and not hcn.shared and hcn.lacks == ()


def test_a_v1_endpoint_takes_the_first_ipv4_address_and_servers_and_suffixes_only(tmp_path):
    v1 = api(tmp_path, 1, "none")
    assert v1.usable_ips(IPS) == [IPS[1]]
    assert v1.policy_form.applied_dns(DNS) == DnsSettings(nameservers=DNS.nameservers, search=DNS.search)
    assert v1.attach_target == "container pod1" and not v1.shared
    assert set(v1.lacks) == {"vxlan_port", "host_route"}


def test_a_v1_endpoint_without_an_ipv4_address_is_code_7(tmp_path):
    with pytest.raises(CniError) as err:
        api(tmp_path, 1, "none").usable_ips(IPS[:1])
    assert err.value.code == 7 and "IPv4" in err.value.msg and "apiVersion 2" in err.value.details


def test_an_app_container_joins_its_pause_containers_endpoint(tmp_path):
    assert api(tmp_path, 1, "container:pause1").shared


@pytest.mark.parametrize("type_", ["Overlay", "L2Bridge"])
def test_which_network_documents_show_the_management_ip(tmp_path, type_):
    """HCN: Overlay's ProviderAddress only (ADD then waits for it); HNSCall: every network's ManagementIP."""
    assert api(tmp_path, 2).shows_management_ip(HostComputeNetwork.from_json({"Type": type_})) == (type_ == "Overlay")
    assert api(tmp_path, 1, "none").shows_management_ip(HNSNetwork.from_json({"Type": type_.lower()}))


class NoHnsCall:
    """HNSCall as a node without it answers every list."""

    def list_endpoints(self, network_id=None):
        from libhns.errors import Unsupported

        raise Unsupported("HNSCall GET /endpoints/", None, None, "not served")


def test_the_survey_falls_back_to_hcn_where_hnscall_lists_nothing_and_says_so_once(tmp_path):
    import io

    from plugins.cni import log

    said = io.StringIO()
    log.configure("wincni", stderr=said)
    real = api(tmp_path, 2)
    net = real.hcn.create_network(
        {"Name": "cbr0", "Type": "L2Bridge", "Ipams": [{"Subnets": [{"IpAddressPrefix": "10.244.4.0/24"}]}]}
    )
    real.hcn.create_endpoint(net.id, {"Name": "pod1_cbr0", "IpConfigurations": [{"IpAddress": "10.244.4.5"}]})
    adapter = HcnApi(hcn=real.hcn, hnscall=NoHnsCall(), container_id="pod1", netns=NETNS)
    first, again = adapter.survey(net), adapter.survey(net)
    assert [e.name for e in first] == [e.name for e in again] == ["pod1_cbr0"]
    assert said.getvalue().count("HNSCall does not list endpoints") == 1
