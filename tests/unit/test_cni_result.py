"""CNI results: one 1.1.0-shaped model, rendered exactly as each CNI version can carry it."""

import ipaddress
import json

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from plugins.cni import version as ver
from plugins.cni.errors import DECODE_FAILURE, INCOMPATIBLE_VERSION, INVALID_CONFIG, CniError
from plugins.cni.result import DNS, Interface, IPConfig, Result, Route

LEGACY = ("0.1.0", "0.2.0")
WITH_IP_VERSION = ("0.3.0", "0.3.1", "0.4.0")

FULL = Result(
    interfaces=[
        Interface(
            name="eth0",
            mac="00-15-5d-00-00-01",
            sandbox="ns-1",
            mtu=1450,
            socket_path="/run/x.sock",
            pci_id="0000:00:01.0",
        )
    ],
    ips=[
        IPConfig(address="10.0.0.5/24", gateway="10.0.0.1", interface=0),
        IPConfig(address="10.0.0.6/24", interface=0),
        IPConfig(address="fd00::5/64", gateway="fd00::1", interface=0),
    ],
    routes=[
        Route(dst="0.0.0.0/0", gw="10.0.0.1", mtu=1400, advmss=1360, priority=10, table=0, scope=253),
        Route(dst="::/0", gw="fd00::1"),
    ],
    dns=DNS(nameservers=["10.96.0.10"], domain="cluster.local", search=["svc.cluster.local"], options=["ndots:5"]),
)
DNS_DOC = {
    "nameservers": ["10.96.0.10"],
    "domain": "cluster.local",
    "search": ["svc.cluster.local"],
    "options": ["ndots:5"],
}


def test_legacy_keeps_first_address_of_each_family_and_splits_routes():
    assert FULL.to_dict("0.2.0") == {
        "cniVersion": "0.2.0",
        "ip4": {"ip": "10.0.0.5/24", "gateway": "10.0.0.1", "routes": [{"dst": "0.0.0.0/0", "gw": "10.0.0.1"}]},
        "ip6": {"ip": "fd00::5/64", "gateway": "fd00::1", "routes": [{"dst": "::/0", "gw": "fd00::1"}]},
        "dns": DNS_DOC,
    }


def test_0_3_1_has_ip_version_and_interface_index_but_no_1_1_fields():
    assert FULL.to_dict("0.3.1") == {
        "cniVersion": "0.3.1",
        "interfaces": [{"name": "eth0", "mac": "00-15-5d-00-00-01", "sandbox": "ns-1"}],
        "ips": [
            {"version": "4", "interface": 0, "address": "10.0.0.5/24", "gateway": "10.0.0.1"},
            {"version": "4", "interface": 0, "address": "10.0.0.6/24"},
            {"version": "6", "interface": 0, "address": "fd00::5/64", "gateway": "fd00::1"},
        ],
        "routes": [{"dst": "0.0.0.0/0", "gw": "10.0.0.1"}, {"dst": "::/0", "gw": "fd00::1"}],
        "dns": DNS_DOC,
    }


def test_1_0_0_drops_ip_version():
    assert all("version" not in ip for ip in FULL.to_dict("1.0.0")["ips"])


def test_1_1_0_carries_interface_and_route_extras():
    doc = FULL.to_dict("1.1.0")
    assert doc["interfaces"][0] == {
        "name": "eth0",
        "mac": "00-15-5d-00-00-01",
        "mtu": 1450,
        "sandbox": "ns-1",
        "socketPath": "/run/x.sock",
        "pciID": "0000:00:01.0",
    }
    assert doc["routes"][0] == {
        "dst": "0.0.0.0/0",
        "gw": "10.0.0.1",
        "mtu": 1400,
        "advmss": 1360,
        "priority": 10,
        "table": 0,
        "scope": 253,
    }


def test_ipam_style_result_prints_empty_dns_as_object():
    doc = Result(ips=[IPConfig(address="10.0.0.5/24")]).to_dict("1.0.0")
    assert doc == {"cniVersion": "1.0.0", "ips": [{"address": "10.0.0.5/24"}], "dns": {}}


def test_empty_dns_strings_never_print_as_list_of_empty_string():
    dns = DNS(nameservers=[""], domain="", search=["", "svc.local"], options=[""])
    assert dns.to_dict() == {"search": ["svc.local"]}


@pytest.mark.parametrize("version", LEGACY)
def test_legacy_without_addresses_cannot_convert(version):
    with pytest.raises(CniError) as info:
        Result(routes=[Route(dst="0.0.0.0/0")]).to_dict(version)
    assert (info.value.code, info.value.msg) == (INCOMPATIBLE_VERSION, "cannot convert: no valid IP addresses")


def test_unsupported_output_version_is_code_1():
    with pytest.raises(CniError) as info:
        FULL.to_dict("0.5.0")
    assert info.value.code == INCOMPATIBLE_VERSION


# ---------------------------------------------------------------- parsing any version


def test_parses_a_0_2_0_prev_result():
    res = Result.from_dict(
        {
            "cniVersion": "0.2.0",
            "ip4": {"ip": "10.1.0.3/16", "gateway": "10.1.0.1", "routes": [{"dst": "0.0.0.0/0"}]},
            "dns": {"nameservers": [""]},
        }
    )
    assert res.ips == [IPConfig(address="10.1.0.3/16", gateway="10.1.0.1")]
    assert res.routes == [Route(dst="0.0.0.0/0")]
    assert res.dns == DNS()


def test_ip4_without_version_is_read_as_legacy():
    assert Result.from_dict({"ip4": {"ip": "10.1.0.3/16"}}).ips == [IPConfig(address="10.1.0.3/16")]


def test_missing_version_takes_the_default():
    assert Result.from_dict({"ips": []}, "0.4.0").cni_version == "0.4.0"


@pytest.mark.parametrize(
    "doc, code",
    [
        ([], DECODE_FAILURE),
        ("x", DECODE_FAILURE),
        ({"cniVersion": "1.0.0", "ips": [{"address": "10.0.0.300/24"}]}, INVALID_CONFIG),
        ({"cniVersion": "1.0.0", "ips": [{"gateway": "10.0.0.1"}]}, INVALID_CONFIG),
        ({"cniVersion": "1.0.0", "ips": ["10.0.0.5/24"]}, INVALID_CONFIG),
        ({"cniVersion": "1.0.0", "routes": [{"gw": "10.0.0.1"}]}, INVALID_CONFIG),
        ({"cniVersion": "1.1.0", "interfaces": [{"name": "eth0", "mtu": "big"}]}, INVALID_CONFIG),
        ({"cniVersion": "0.2.0", "ip4": {"ip": "nonsense"}}, INVALID_CONFIG),
    ],
)
def test_malformed_results_are_cni_errors(doc, code):
    with pytest.raises(CniError) as info:
        Result.from_dict(doc)
    assert info.value.code == code


# ---------------------------------------------------------------- properties


def _addr(version):
    ips = st.ip_addresses(v=version)
    prefix = st.integers(0, 32 if version == 4 else 128)
    return st.builds(lambda ip, p: f"{ip}/{p}", ips, prefix)


def _net(version):
    return _addr(version).map(lambda a: str(ipaddress.ip_interface(a).network))


_NAME = st.text("abcdefghijklmnopqrstuvwxyz0123456789-", min_size=1, max_size=15)
_WORD = st.text("abcdefghijklmnopqrstuvwxyz0123456789.:-", max_size=12)
_GW = {v: st.just("") | st.ip_addresses(v=v).map(str) for v in (4, 6)}

interfaces = st.lists(
    st.builds(
        Interface, name=_NAME, mac=_WORD, sandbox=_WORD, mtu=st.integers(0, 9000), socket_path=_WORD, pci_id=_WORD
    ),
    max_size=3,
)
ip_configs = st.lists(
    st.one_of(
        *[
            st.builds(IPConfig, address=_addr(v), gateway=_GW[v], interface=st.none() | st.integers(0, 2))
            for v in (4, 6)
        ]
    ),
    max_size=4,
)
routes = st.lists(
    st.one_of(
        *[
            st.builds(
                Route,
                dst=_net(v),
                gw=_GW[v],
                mtu=st.integers(0, 9000),
                advmss=st.integers(0, 9000),
                priority=st.integers(0, 100),
                table=st.none() | st.integers(0, 255),
                scope=st.none() | st.integers(0, 255),
            )
            for v in (4, 6)
        ]
    ),
    max_size=4,
)
dns = st.builds(
    DNS,
    nameservers=st.lists(_WORD, max_size=3),
    domain=_WORD,
    search=st.lists(_WORD, max_size=3),
    options=st.lists(_WORD, max_size=3),
)
results = st.builds(Result, interfaces=interfaces, ips=ip_configs, routes=routes, dns=dns)


def expected_after(res: Result, version: str) -> Result:
    """What a round trip through ``version`` must keep, written independently of result.py."""
    clean_dns = DNS(
        **{
            k: ([x for x in v if x] if isinstance(v, list) else v)
            for k, v in ((n, getattr(res.dns, n)) for n in DNS.__slots__)
        }
    )
    if version in LEGACY:
        firsts = [next((ip for ip in res.ips if ip.family == f), None) for f in (4, 6)]
        return Result(
            cni_version=version,
            dns=clean_dns,
            ips=[IPConfig(address=ip.address, gateway=ip.gateway) for ip in firsts if ip],
            routes=[
                Route(dst=r.dst, gw=r.gw)
                for first, fam in zip(firsts, (4, 6))
                if first
                for r in res.routes
                if r.family == fam
            ],
        )
    if version == "1.1.0":
        return Result(cni_version=version, interfaces=res.interfaces, ips=res.ips, routes=res.routes, dns=clean_dns)
    return Result(
        cni_version=version,
        dns=clean_dns,
        ips=res.ips,
        interfaces=[Interface(name=i.name, mac=i.mac, sandbox=i.sandbox) for i in res.interfaces],
        routes=[Route(dst=r.dst, gw=r.gw) for r in res.routes],
    )


@given(res=results, version=st.sampled_from(ver.SUPPORTED))
def test_round_trip_keeps_what_each_version_can_carry(res, version):
    try:
        doc = json.loads(json.dumps(res.to_dict(version)))
    except CniError as err:
        assert version in LEGACY and not res.ips
        assert err.msg == "cannot convert: no valid IP addresses"
        return
    assert doc["cniVersion"] == version
    assert all(("version" in ip) == (version in WITH_IP_VERSION) for ip in doc.get("ips", []))
    for value in doc["dns"].values():  # no [] and no [""]: an empty field is left out
        assert value and all(value if isinstance(value, list) else [value])
    assert Result.from_dict(doc) == expected_after(res, version)


@given(res=results, first=st.sampled_from(ver.SUPPORTED), second=st.sampled_from(ver.SUPPORTED))
def test_converting_twice_is_converting_once_to_the_poorer_version(res, first, second):
    """A prevResult passed along a chain loses only what the poorest hop cannot carry."""
    assume(res.ips or not {first, second} & set(LEGACY))
    via = Result.from_dict(res.to_dict(first)).to_dict(second)
    assert via == expected_after(expected_after(res, first), second).to_dict(second)
