"""flanneld's subnet.env parser: the reference's cases (flannel_linux_test.go), CRLF, repeats, bad values."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from basics import ipaddr
from plugins.flannel.subnet_env import Lease, LeaseError, LeaseProblem, load, parse
from testdata import FIXTURES

FIXTURE = FIXTURES / "subnet.env"
V4 = "FLANNEL_NETWORK=10.1.0.0/16\nFLANNEL_SUBNET=10.1.17.1/24\nFLANNEL_MTU=1472\nFLANNEL_IPMASQ=true\n"
V6 = "FLANNEL_IPV6_NETWORK=fc00::/48\nFLANNEL_IPV6_SUBNET=fc00::1/64\nFLANNEL_MTU=1472\nFLANNEL_IPMASQ=true\n"
net = ipaddr.ip_network


def test_v4_lease_is_read_as_networks():
    lease = parse(V4, "subnet.env")
    assert lease == Lease(
        networks=(net("10.1.0.0/16"),),
        subnet=net("10.1.17.0/24"),
        ipv6_networks=(),
        ipv6_subnet=None,
        mtu=1472,
        ipmasq=True,
    )


def test_v6_lease():
    lease = parse(V6, "subnet.env")
    assert (lease.networks, lease.subnet) == ((), None)
    assert (lease.ipv6_networks, lease.ipv6_subnet) == ((net("fc00::/48"),), net("fc00::/64"))
    assert lease.first_ipv4_network is None


def test_dual_stack_lease_has_both_families():
    lease = parse(V4 + V6, "subnet.env")
    assert lease.subnet == net("10.1.17.0/24") and lease.ipv6_subnet == net("fc00::/64")


def test_several_networks_keep_their_order():
    lease = parse(V4.replace("10.1.0.0/16", "10.1.0.0/16,192.168.0.0/16"), "subnet.env")
    assert lease.networks == (net("10.1.0.0/16"), net("192.168.0.0/16"))
    assert lease.first_ipv4_network == net("10.1.0.0/16")


def test_a_file_without_keys_lists_everything_missing_like_the_reference():
    with pytest.raises(LeaseError) as err:
        parse("foo=bar\n", "/run/flannel/subnet.env")
    assert err.value.problem is LeaseProblem.MALFORMED
    assert str(err.value) == (
        "/run/flannel/subnet.env is missing FLANNEL_NETWORK, FLANNEL_IPV6_NETWORK, "
        "FLANNEL_SUBNET, FLANNEL_IPV6_SUBNET, FLANNEL_MTU, FLANNEL_IPMASQ"
    )


def test_only_what_is_absent_is_listed():
    with pytest.raises(LeaseError, match=r"subnet.env is missing FLANNEL_MTU, FLANNEL_IPMASQ$"):
        parse("FLANNEL_NETWORK=10.1.0.0/16\nFLANNEL_SUBNET=10.1.17.1/24\n", "subnet.env")


def test_the_windows_node_fixture_with_crlf_line_ends():
    assert b"\r\n" in open(FIXTURE, "rb").read()
    lease = load(FIXTURE)
    assert lease.networks == (net("10.244.0.0/16"),) and lease.subnet == net("10.244.4.0/24")
    assert (lease.mtu, lease.ipmasq) == (1450, True)


def test_a_repeated_key_overrides_and_network_lists_accumulate_without_duplicates():
    lease = parse(
        V4 + "FLANNEL_SUBNET=10.1.18.1/24\nFLANNEL_NETWORK=10.1.2.3/16,10.2.0.0/16\nFLANNEL_IPMASQ=false\n",
        "subnet.env",
    )
    assert lease.subnet == net("10.1.18.0/24")
    assert lease.networks == (net("10.1.0.0/16"), net("10.2.0.0/16"))
    assert lease.ipmasq is False


@pytest.mark.parametrize("value", ["True", "1", "yes", "true "])
def test_ipmasq_is_true_only_for_the_exact_word(value):
    assert parse(V4.replace("FLANNEL_IPMASQ=true", f"FLANNEL_IPMASQ={value}"), "s").ipmasq is False


@pytest.mark.parametrize(
    "cidr",
    [
        "10.1.0.0",
        "10.1.0.0/255.255.0.0",
        "10.1.0.0/33",
        " 10.1.0.0/16",
        "10.1.0.0/16 ",
        "fe80::1%eth0/64",
        "10.1.0.0/+8",
        "",
    ],
)
def test_what_go_parsecidr_rejects_is_an_error_naming_line_and_key(cidr):
    with pytest.raises(LeaseError) as err:
        parse(V4.replace("10.1.0.0/16", cidr), "subnet.env")
    assert err.value.problem is LeaseProblem.MALFORMED
    assert str(err.value) == f"subnet.env line 1: FLANNEL_NETWORK: invalid CIDR address: {cidr}"


@pytest.mark.parametrize(
    "mtu, ok",
    [
        ("4294967295", True),
        ("0", True),
        ("4294967296", False),
        ("-1", False),
        ("1e3", False),
        ("1_450", False),
        ("", False),
        ("١٤٥٠", False),
    ],
)
def test_mtu_is_a_32_bit_decimal(mtu, ok):
    text = V4.replace("1472", mtu)
    if ok:
        assert parse(text, "s").mtu == int(mtu)
    else:
        with pytest.raises(LeaseError, match="line 3: FLANNEL_MTU"):
            parse(text, "s")


def test_keys_are_exact_and_untrimmed():
    with pytest.raises(LeaseError, match="is missing FLANNEL_MTU$"):
        parse(V4.replace("FLANNEL_MTU=", "FLANNEL_MTU ="), "s")
    with pytest.raises(LeaseError, match="is missing FLANNEL_IPMASQ$"):
        parse(V4.replace("FLANNEL_IPMASQ", "flannel_ipmasq"), "s")


def test_lines_without_equals_and_comments_are_ignored():
    assert parse("# written by flanneld\nFLANNEL_MTU\n" + V4, "s").mtu == 1472


def test_a_byte_order_mark_does_not_hide_the_first_key(tmp_path):
    path = tmp_path / "subnet.env"
    path.write_bytes(b"\xef\xbb\xbf" + V4.encode())
    assert load(str(path)).networks == (net("10.1.0.0/16"),)


def test_missing_and_unreadable_files_are_told_apart(tmp_path):
    with pytest.raises(LeaseError) as missing:
        load(str(tmp_path / "subnet.env"))
    assert missing.value.problem is LeaseProblem.MISSING and str(tmp_path / "subnet.env") in str(missing.value)
    with pytest.raises(LeaseError) as unreadable:
        load(str(tmp_path))  # a directory
    assert unreadable.value.problem is LeaseProblem.UNREADABLE and unreadable.value.path == str(tmp_path)


def test_invalid_utf8_is_a_parse_error_not_a_crash(tmp_path):
    path = tmp_path / "subnet.env"
    path.write_bytes(V4.replace("10.1.0.0/16", "10.1.0.0/1\xff6").encode("latin-1"))
    with pytest.raises(LeaseError, match="invalid CIDR address"):
        load(str(path))


# ---------------------------------------------------------------- properties


@settings(max_examples=300, deadline=None)
@given(
    st.text(
        alphabet=st.sampled_from(list("FLANNEL_NETWORKSUBIPV6MTQ=,/.:0123456789af \r\n\t#%é")) | st.characters(),
        max_size=200,
    )
)
def test_the_parser_never_crashes(text):
    try:
        assert isinstance(parse(text, "s"), Lease)
    except LeaseError as err:
        assert err.problem is LeaseProblem.MALFORMED


v4_nets = st.builds(
    lambda a, p: ipaddr.ip_network(f"{ipaddr.Address(a, 4)}/{p}", strict=False),
    st.integers(0, 2**32 - 1),
    st.integers(0, 32),
)
v6_nets = st.builds(
    lambda a, p: ipaddr.ip_network(f"{ipaddr.Address(a, 6)}/{p}", strict=False),
    st.integers(0, 2**128 - 1),
    st.integers(0, 128),
)


@settings(max_examples=200, deadline=None)
@given(
    networks=st.lists(v4_nets, min_size=1, max_size=4, unique=True),
    subnet=v4_nets,
    v6=st.none() | st.tuples(st.lists(v6_nets, min_size=1, max_size=3, unique=True), v6_nets),
    mtu=st.integers(0, 2**32 - 1),
    ipmasq=st.booleans(),
    eol=st.sampled_from(["\n", "\r\n"]),
    host_bits=st.booleans(),
)
def test_valid_leases_round_trip(networks, subnet, v6, mtu, ipmasq, eol, host_bits):
    # flanneld writes the subnet with the gateway's host bits set (10.1.17.1/24); both forms parse the same.
    sub = f"{subnet.network_address + (1 if host_bits and subnet.num_addresses > 1 else 0)}/{subnet.prefixlen}"
    lines = [
        f"FLANNEL_NETWORK={','.join(map(str, networks))}",
        f"FLANNEL_SUBNET={sub}",
        f"FLANNEL_MTU={mtu}",
        f"FLANNEL_IPMASQ={'true' if ipmasq else 'false'}",
    ]
    if v6:
        lines += [f"FLANNEL_IPV6_NETWORK={','.join(map(str, v6[0]))}", f"FLANNEL_IPV6_SUBNET={v6[1]}"]
    lease = parse(eol.join(lines) + eol, "s")
    assert lease == Lease(
        networks=tuple(networks),
        subnet=subnet,
        ipv6_networks=tuple(v6[0]) if v6 else (),
        ipv6_subnet=v6[1] if v6 else None,
        mtu=mtu,
        ipmasq=ipmasq,
    )


def test_a_file_far_larger_than_a_lease_is_malformed_and_never_read_whole(tmp_path):
    big = tmp_path / "subnet.env"
    big.write_bytes(b"FLANNEL_SUBNET=10.244.1.1/24\n" + b"#" * (64 << 10))
    with pytest.raises(LeaseError) as info:
        load(str(big))
    assert info.value.problem is LeaseProblem.MALFORMED and "over 64 KiB" in str(info.value)
