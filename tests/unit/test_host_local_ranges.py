"""host-local ranges and range sets: the reference's range_test.go and range_set_test.go."""

from __future__ import annotations

import pytest

from basics import ipaddr
from plugins.ipam_host_local.ranges import Range, RangeError, RangeSet, parse_ip, parse_ip_or_cidr

ip = ipaddr.ip_address


def test_defaults_v4():
    r = Range.canonical("192.0.2.0/24")
    assert (str(r.range_start), str(r.range_end), str(r.gateway)) == ("192.0.2.1", "192.0.2.254", "192.0.2.1")


def test_defaults_v4_slash25():
    assert str(Range.canonical("192.0.2.0/25").range_end) == "192.0.2.126"


def test_defaults_v6():
    r = Range.canonical("2001:db8:1::/64")
    assert (r.range_start, r.range_end) == (ip("2001:db8:1::1"), ip("2001:db8:1::ffff:ffff:ffff:ffff"))


@pytest.mark.parametrize(
    "subnet,network",
    [
        ("192.0.2.12/24", "192.0.2.0"),
        ("2001:DB8:1::24:19ff:fee1:c44a/64", "2001:db8:1::"),
        ("2001:DB8:24:19ff::/63", "2001:db8:24:19fe::"),
        ("192.168.127.0/23", "192.168.126.0"),
    ],
)
def test_host_bits_rejected(subnet, network):
    prefix = subnet.split("/")[1]
    with pytest.raises(
        RangeError,
        match=f"^Network has host bits set. For a subnet mask of length {prefix} the network address is {network}$",
    ):
        Range.canonical(subnet)


@pytest.mark.parametrize("subnet", ["192.0.2.0/31", "192.0.2.0/32", "2001:db8::/127", "2001:db8::/128"])
def test_too_small(subnet):
    with pytest.raises(RangeError, match=f"^Network {subnet} too small to allocate from$"):
        Range.canonical(subnet)


@pytest.mark.parametrize(
    "start,end,msg",
    [
        ("192.0.3.0", None, "RangeStart 192.0.3.0 not in network 192.0.2.0/24"),
        (None, "192.0.4.0", "RangeEnd 192.0.4.0 not in network 192.0.2.0/24"),
        ("192.0.2.50", "192.0.2.40", "RangeStart 192.0.2.50 not in network 192.0.2.0/24"),
    ],
)
def test_bounds_outside(start, end, msg):
    with pytest.raises(RangeError, match=f"^{msg}$"):
        Range.canonical("192.0.2.0/24", start, end)


def test_explicit_fields_kept():
    r = Range.canonical("192.0.2.0/24", "192.0.2.40", "192.0.2.50", "192.0.2.254")
    assert (str(r.range_start), str(r.range_end), str(r.gateway)) == ("192.0.2.40", "192.0.2.50", "192.0.2.254")


@pytest.mark.parametrize(
    "addr,inside",
    [
        ("192.0.2.39", False),
        ("192.0.2.40", True),
        ("192.0.2.50", True),
        ("192.0.2.51", False),
        ("192.0.3.40", False),
        ("2001:db8::40", False),
    ],
)
def test_contains_v4(addr, inside):
    assert Range.canonical("192.0.2.0/24", "192.0.2.40", "192.0.2.50").contains(ip(addr)) is inside


@pytest.mark.parametrize(
    "addr,inside",
    [("2001:db8:1::39", False), ("2001:db8:1::40", True), ("2001:db8:1::50", True), ("2001:db8:1::51", False)],
)
def test_contains_v6(addr, inside):
    assert Range.canonical("2001:db8:1::/64", "2001:db8:1::40", "2001:db8:1::50").contains(ip(addr)) is inside


@pytest.mark.parametrize(
    "a,b,overlap",
    [
        (("10.0.0.0/24",), ("10.0.1.0/24",), False),
        (("0.0.0.0/24",), ("::/24",), False),
        (("10.0.0.0/24",), ("10.0.0.0/24",), True),
        (("10.0.0.0/20",), ("10.0.0.0/24",), True),
        (("10.0.0.0/24", None, "10.0.0.127"), ("10.0.0.0/24", "10.0.0.128"), False),
        (("10.0.0.0/24", None, "10.0.0.127"), ("10.0.0.0/24", "10.0.0.127"), True),
    ],
)
def test_overlaps_commutative(a, b, overlap):
    ra, rb = Range.canonical(*a), Range.canonical(*b)
    assert ra.overlaps(rb) is overlap and rb.overlaps(ra) is overlap


def test_range_set_membership_and_string():
    rs = RangeSet.canonical([Range.canonical("192.168.0.0/24"), Range.canonical("172.16.1.0/24")])
    assert rs.contains(ip("192.168.0.55")) and rs.contains(ip("172.16.1.55"))
    assert not rs.contains(ip("192.168.99.99"))
    assert str(rs) == "192.168.0.1-192.168.0.254,172.16.1.1-172.16.1.254"


def test_range_set_internal_overlap():
    with pytest.raises(RangeError, match="^subnets 192.168.0.1-192.168.15.254 and 192.168.2.1-192.168.2.254 overlap$"):
        RangeSet.canonical([Range.canonical("192.168.0.0/20"), Range.canonical("192.168.2.0/24")])


def test_range_set_cross_overlap():
    a = RangeSet.canonical([Range.canonical("192.168.0.0/20")])
    b = RangeSet.canonical([Range.canonical("192.168.2.0/24")])
    assert a.overlaps(b) and b.overlaps(a)


def test_range_set_empty_and_mixed():
    with pytest.raises(RangeError, match="^empty range set$"):
        RangeSet.canonical([])
    with pytest.raises(RangeError, match="^mixed address families$"):
        RangeSet.canonical([Range.canonical("10.0.0.0/24"), Range.canonical("2001:db8::/64")])


def test_size_excludes_gateway_only_when_inside():
    assert Range.canonical("10.0.0.0/29").size() == 5
    assert Range.canonical("10.0.0.0/29", gateway="10.0.0.7").size() == 6


@pytest.mark.parametrize("text", ["fe80::1%eth0", "10.0.0.256", "", 5])
def test_parse_ip_rejects(text):
    with pytest.raises(ValueError):
        parse_ip(text)


def test_parse_ip_v4_mapped_is_v4_and_prefix_dropped():
    assert parse_ip("::ffff:10.1.2.3") == ip("10.1.2.3")
    assert parse_ip_or_cidr("10.1.2.11/24") == ip("10.1.2.11")
    with pytest.raises(ValueError):
        parse_ip_or_cidr("10.1.2.11/33")
