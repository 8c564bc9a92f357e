"""tools/wincni/addresses.py: an AddressSet covers an address or a network exactly when every one of
its addresses lies in one of the set's networks, whichever way the networks split and join."""

from __future__ import annotations

import ipaddress

from hypothesis import given
from hypothesis import strategies as st

from tools.wincni.judge.addresses import AddressSet, address, network

BASE = int(ipaddress.ip_address("10.1.2.0"))


def _block(start: int, prefix: int) -> ipaddress.IPv4Network:
    """A network inside 10.1.2.0/24 (host bits dropped, as HNS and the doctor read them)."""
    return ipaddress.ip_network((BASE + start, prefix), strict=False)


blocks = st.builds(_block, st.integers(0, 255), st.integers(24, 32))


@given(st.lists(blocks, max_size=8), blocks)
def test_a_network_is_in_the_set_when_every_address_is(members, probe):
    covered = {int(a) for n in members for a in n}
    expected = all(int(a) in covered for a in probe)
    assert (probe in AddressSet(members)) == expected
    assert (probe.network_address in AddressSet(members)) == (int(probe.network_address) in covered)


def test_versions_never_meet_and_text_is_read_as_a_network():
    both = AddressSet(["10.0.0.0/8", "fd00::/8", "not a network"])
    assert address("10.9.9.9") in both and address("fd00::1") in both
    assert address("192.168.0.1") not in both and network("fe80::/64") not in both
    assert "10.1.2.3" in both and "10.1.0.0/16" in both and "nonsense" not in both
    assert network("10.0.0.5/24") == ipaddress.ip_network("10.0.0.0/24")
    assert network("10.0.0.0/33") is None and network(7) is None and address("10.0.0") is None
