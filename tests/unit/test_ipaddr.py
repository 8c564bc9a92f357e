"""basics.ipaddr against the standard library's ipaddress, on generated text: the same answers
(value, version, text, prefix) and the same refusals, so swapping one for the other on the pod path
changes no behaviour."""

from __future__ import annotations

import ipaddress
import sys

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from basics import ipaddr

OCTET = st.one_of(st.integers(0, 255).map(str), st.sampled_from(["", "00", "01", "256", "1a", " 1", "٣", "0x1"]))
V4 = st.lists(OCTET, min_size=1, max_size=5).map(".".join)
HEXTET = st.one_of(
    st.integers(0, 0xFFFF).map(lambda n: f"{n:x}"),
    st.integers(0, 0xFFFF).map(lambda n: f"{n:04X}"),
    st.sampled_from(["", "0", "00000", "g", "ffff"]),
)
V6 = st.builds(
    lambda groups, tail: ":".join(groups) + tail,
    st.lists(HEXTET, min_size=0, max_size=10),
    st.one_of(st.just(""), V4.map(lambda t: ":" + t)),
)
REAL_V6 = st.integers(0, (1 << 128) - 1).map(lambda n: str(ipaddress.IPv6Address(n)))
REAL_V4 = st.integers(0, (1 << 32) - 1).map(lambda n: str(ipaddress.IPv4Address(n)))
ADDRESS = st.one_of(V4, V6, REAL_V4, REAL_V6, st.text(max_size=12))
PREFIX = st.one_of(
    st.integers(0, 130).map(str),
    st.sampled_from(
        ["", "08", "-1", "+8", "255.255.255.0", "0.0.0.255", "255.0.255.0", "0.0.0.0", "255.255.255.255", "x"]
    ),
)


def stdlib(fn, text):
    try:
        return fn(text), None
    except ValueError as exc:
        return None, exc


def printed(value) -> str:
    if sys.version_info >= (3, 13) and getattr(value, "version", 4) == 6:  # 3.13 prints ::ffff:a.b.c.d
        return "(mapped)" if "." in str(value) else str(value)
    return str(value)


@pytest.mark.slow
@settings(max_examples=3000)
@given(ADDRESS)
@example("::")
@example("1::")
@example("::1")
@example("1:2:3:4:5:6:7::")
@example("::ffff:1.2.3.4")
@example("1:2:3:4:5:6:7:8:9")
@example(":1:2:3:4:5:6:7")
@example("1::2::3")
@example("0:0:1:0:0:0:1:0")
@example("1:0:0:2:0:0:0:3")
def test_addresses_parse_and_print_as_ipaddress_does(text):
    want, error = stdlib(ipaddress.ip_address, text)
    if "%" in text:
        want, error = None, ValueError("zone")  # refused on purpose: Go refuses zones
    if error is not None:
        with pytest.raises(ValueError):
            ipaddr.ip_address(text)
        return
    got = ipaddr.ip_address(text)
    assert (int(got), got.version, got.packed) == (int(want), want.version, want.packed)
    if printed(want) != "(mapped)":
        assert str(got) == str(want)
    mapped = want.ipv4_mapped if want.version == 6 else None
    assert (got.ipv4_mapped and int(got.ipv4_mapped)) == (mapped and int(mapped))


@pytest.mark.slow
@settings(max_examples=3000)
@given(st.one_of(REAL_V4, REAL_V6, V4, V6), PREFIX, st.booleans())
def test_networks_and_interfaces_as_ipaddress(addr, prefix, strict):
    text = f"{addr}/{prefix}"
    for ours, theirs in (
        (lambda t: ipaddr.ip_network(t, strict=strict), lambda t: ipaddress.ip_network(t, strict=strict)),
        (ipaddr.ip_interface, ipaddress.ip_interface),
    ):
        want, error = stdlib(theirs, text)
        if "%" in text:
            want, error = None, ValueError("zone")
        if error is not None:
            with pytest.raises(ValueError):
                ours(text)
            continue
        got = ours(text)
        net, want_net = (got, want) if hasattr(want, "prefixlen") else (got.network, want.network)
        assert (int(net.network_address), net.prefixlen, net.version, net.num_addresses) == (
            int(want_net.network_address),
            want_net.prefixlen,
            want_net.version,
            want_net.num_addresses,
        )
        assert int(net.broadcast_address) == int(want_net.broadcast_address)
        if printed(want_net.network_address) != "(mapped)":
            assert str(got) == str(want)


@given(st.integers(0, (1 << 32) - 1), st.integers(0, 32), st.integers(0, (1 << 32) - 1))
def test_membership_order_and_hosts_as_ipaddress(base, plen, probe):
    net, want = (
        ipaddr.ip_network(f"{ipaddress.IPv4Address(base)}/{plen}", strict=False),
        ipaddress.ip_network(f"{ipaddress.IPv4Address(base)}/{plen}", strict=False),
    )
    ip, want_ip = ipaddr.ip_address(str(ipaddress.IPv4Address(probe))), ipaddress.IPv4Address(probe)
    assert (ip in net) == (want_ip in want)
    assert (ip < net.network_address) == (want_ip < want.network_address)
    assert [int(a) for a, _ in zip(net.hosts(), range(3))] == [int(a) for a, _ in zip(want.hosts(), range(3))]
    assert net.subnet_of(ipaddr.ip_network("0.0.0.0/0")) and not net.subnet_of(ipaddr.ip_network("::/0"))


def test_families_do_not_mix_and_bounds_hold():
    v4, v6 = ipaddr.ip_address("10.0.0.1"), ipaddr.ip_address("::1")
    assert v4 != v6 and v6 not in ipaddr.ip_network("10.0.0.0/8")
    with pytest.raises(TypeError):
        assert v4 < v6
    with pytest.raises(ValueError):
        ipaddr.ip_address("255.255.255.255") + 1
    assert ipaddr.ip_address("10.0.0.255") + 1 == ipaddr.ip_address("10.0.1.0")
    assert {v4, ipaddr.ip_address("10.0.0.1")} == {v4}
    with pytest.raises(ValueError):
        ipaddr.ip_address(167772161)  # text only
    assert [str(a) for a in ipaddr.ip_network("fd00::/127").hosts()] == ["fd00::", "fd00::1"]
