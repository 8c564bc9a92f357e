"""plugins.cni.ownership: the one rule reclaim, GC, the doctor and ADD's stale-endpoint cleanup share."""

from __future__ import annotations

import io
import os
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from plugins.cni import log, procs
from plugins.cni import ownership as o


@pytest.mark.parametrize(
    "owner, live, age, min_age, alive, kept",
    [
        ("_wincni-source-vip", set(), 10**6, 0, False, o.NODE_OWNED),  # the node's own: whatever its age
        ("pod1", {"pod1"}, 10**6, 0, False, o.LIVE_ENDPOINT),
        ("pod1", {"pod1"}, 10**6, 0, True, o.LIVE_ENDPOINT),
        ("pod1", set(), 10**6, 0, True, o.SANDBOX_ALIVE),  # a pod without its endpoint: whatever its age
        ("pod1", set(), 299, 300, False, o.IN_FLIGHT),  # an ADD (or its retry) in flight
        ("pod1", set(), 300, 300, False, ""),  # abandoned: reclaim may take it
        ("", set(), 0, 0, False, ""),  # an unreadable owner
    ],
)
def test_what_keeps_a_reservation(owner, live, age, min_age, alive, kept):
    assert o.reservation_kept(owner, live, age, min_age, alive) == kept


@given(st.sampled_from(["pod1", "_wincni-vip", ""]), st.booleans(), st.floats(0, 1000), st.booleans())
def test_a_live_sandbox_keeps_its_reservation_and_is_a_lost_endpoint_exactly_when_nothing_else_keeps_it(
    owner, has_endpoint, age, alive
):
    live = {owner} if has_endpoint else set()
    kept = o.reservation_kept(owner, live, age, 300.0, alive)
    if alive:
        assert kept  # never freed while its sandbox exists
    lost = o.sandbox_lost_endpoint(owner, live, alive)
    assert lost == (alive and not o.pinned(owner) and not (owner and has_endpoint))


def test_the_runtimes_gc_keeps_what_it_lists_and_the_nodes_own():
    valid = {("pod1", "eth0")}
    assert o.gc_keeps("pod1", "eth0", valid) and not o.gc_keeps("pod1", "eth1", valid)
    assert o.gc_keeps("pod1", "", valid) and not o.gc_keeps("pod2", "", valid)  # legacy id-only
    assert o.gc_keeps("_wincni-source-vip", "sourcevip", set())


@pytest.mark.parametrize(
    "age, writer_alive, kept",
    [
        (0, True, o.WRITING),  # an ADD saving its config: nobody's to delete, whatever lists say
        (o.IN_FLIGHT_SECONDS - 1, True, o.WRITING),
        (o.IN_FLIGHT_SECONDS, True, ""),  # older than any ADD: the PID is a stranger's now
        (0, False, ""),  # its writer was killed before the rename
    ],
)
def test_what_keeps_a_temporary_file(age, writer_alive, kept):
    assert o.temporary_kept(age, writer_alive) == kept


def test_a_process_is_alive_until_it_has_exited():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    assert procs.alive(os.getpid()) and not procs.alive(proc.pid)
    assert not procs.alive(0) and not procs.alive(-1)  # process groups, never a writer


@pytest.mark.parametrize(
    "name, alive, kept",
    [
        ("pod1_cbr0", True, o.ATTACHED),  # on any network: a live sandbox holds it
        ("pod1_cbr0", False, ""),
        ("cbr0_ep", False, o.FLANNELD),
        ("vm-nic", False, o.NOT_OURS),
        ("_cbr0", False, o.NOT_OURS),
    ],
)
def test_what_keeps_an_endpoint(name, alive, kept):
    assert o.endpoint_kept(name, "cbr0", alive) == kept


def test_conflicts_name_every_endpoint_on_an_address_reserved_for_another():
    reservations = [("10.244.4.2", "_wincni-source-vip"), ("10.244.4.3", "pod1"), ("10.244.4.4", "pod9")]
    endpoints = [("cbr0_ep", ("10.244.4.2",)), ("pod1_cbr0", ("10.244.4.3",)), ("pod2_cbr0", ("10.244.4.4",))]
    assert o.conflicts(reservations, endpoints, "cbr0") == [
        "endpoint cbr0_ep holds 10.244.4.2, which host-local reserves for _wincni-source-vip",
        "endpoint pod2_cbr0 holds 10.244.4.4, which host-local reserves for pod9",
    ]
    # kube-proxy's source VIP endpoint (local, unnamed) holds the node's own reservation: no conflict,
    # but an unnamed endpoint on a pod's reservation is one
    kube_proxys = [("", ("10.244.4.2",)), ("", ("10.244.4.3",))]
    assert o.conflicts(reservations, kube_proxys, "cbr0") == [
        "endpoint  holds 10.244.4.3, which host-local reserves for pod1"
    ]


def test_every_freeing_says_who_what_and_why():
    err = io.StringIO()
    log.configure("host-local", stderr=err)
    try:
        o.freed("host-local GC", "the reservation of 10.244.4.7", "pod7 is gone")
    finally:
        log.reset()
    assert (
        err.getvalue() == "host-local: warning: host-local GC: removing the reservation of 10.244.4.7: pod7 is gone\n"
    )


def test_reclaim_below_the_in_flight_age_risks_adds_in_flight():
    assert o.min_age_risk(o.IN_FLIGHT_SECONDS) == "" and o.min_age_risk(10**6) == ""
    assert o.min_age_risk(o.IN_FLIGHT_SECONDS - 1).startswith("ADDs in flight may lose their address")


@pytest.mark.parametrize(
    "name, remote, ours",
    [
        ("c1_cbr0", False, True),  # our pod's endpoint
        ("c1_cbr0", True, False),  # a remote endpoint of that name: kube-proxy's, never ours
        ("cbr0_ep", False, False),  # flanneld's host endpoint
        ("", False, False),  # kube-proxy's source VIP endpoint
        ("_wincni-sourcevip_cbr0", False, False),  # the node's pinned owner
        ("c1_vxlan0", False, False),  # another network's
    ],
)
def test_the_networkpolicy_agent_is_given_our_pods_endpoints_only(name, remote, ours):
    assert o.acl_target(name, "cbr0", remote) is ours
