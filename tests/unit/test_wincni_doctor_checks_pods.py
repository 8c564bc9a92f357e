"""The doctor's pod-endpoints and endpoint-state checks on hand-built facts, and the sandbox a
recorded CNI_NETNS names."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from libhns.objects import HNSEndpoint, HostComputeNetwork
from tools.wincni.doctor.checks import pods as podchecks
from tools.wincni.doctor.checks.store import ipam_store, orphan_reservations
from tools.wincni.doctor.facts import NodeFacts
from tools.wincni.judge.verdict import FAIL, OK, SKIP, WARN
from tools.wincni.node.hns import Inventory
from tools.wincni.node.sandboxes import CONTAINER, NAMESPACE, PodSandbox, Sandbox, exists, sandbox_of

GUID = "5E3C8F0A-1B2C-4D5E-8F90-A1B2C3D4E5F6"
NET = HostComputeNetwork.from_json({"ID": "0C0A0000-0000-0000-0000-000000000001", "Name": "cbr0", "Type": "L2Bridge"})


def v1_endpoint(name: str, ip: str, state: int, remote: bool = False) -> HNSEndpoint:
    return HNSEndpoint.from_json(
        {
            "ID": f"E{abs(hash(name)) % 10**7:07d}-0000-0000-0000-000000000000",
            "Name": name,
            "VirtualNetwork": NET.id,
            "IPAddress": ip,
            "State": state,
            "IsRemoteEndpoint": remote,
        }
    )


def facts(reservations=(), endpoints=(), sandboxes=(), v1=(), young=frozenset(), stale=()) -> NodeFacts:
    return NodeFacts(
        name="cbr0",
        network=NET,
        reservations=tuple(reservations),
        endpoints=tuple(endpoints),
        sandboxes=tuple(sandboxes),
        inventory=Inventory(endpoints=tuple(v1)),
        young=frozenset(young),
        stale_endpoints=tuple(stale),
    )


def running(ip: str, cid: str, alive: bool | None = True) -> PodSandbox:
    return PodSandbox(ip, cid, "eth0", Sandbox(NAMESPACE, GUID), alive)


def test_a_pod_whose_sandbox_runs_without_its_endpoint_fails_naming_it_and_how_to_recreate_it():
    f = facts([("10.0.0.2", "pod1")], sandboxes=[running("10.0.0.2", "pod1")])
    check = podchecks.pod_endpoints(f)
    assert check.status == FAIL and check.run == ""
    assert f"pod sandbox pod1 (namespace {GUID})" in check.message and "cbr0 is gone" in check.message
    assert "crictl rmp pod1" in check.fix and "kubectl delete pod" in check.fix
    assert orphan_reservations(f) == []  # not an address to release
    store = ipam_store(f)
    assert store.status == OK and "1 kept for pods that run without their endpoint" in store.message


def test_a_pod_with_its_endpoint_a_gone_sandbox_or_the_nodes_own_is_fine():
    f = facts(
        [("10.0.0.2", "pod1"), ("10.0.0.3", "gone"), ("10.0.0.9", "_wincni-source-vip")],
        endpoints=[("pod1_cbr0", ("10.0.0.2",))],
        sandboxes=[running("10.0.0.2", "pod1"), running("10.0.0.3", "gone", False)],
    )
    assert podchecks.pod_endpoints(f).status == OK
    assert orphan_reservations(f) == [("10.0.0.3", "gone")]


def test_unknown_sandboxes_are_said_and_unrecorded_ones_left_to_the_age_rule():
    f = facts(
        [("10.0.0.2", "pod1")],
        sandboxes=[PodSandbox("10.0.0.2", "pod1", "eth0", Sandbox(CONTAINER, "pod1"), None, "cannot ask HNS: down")],
    )
    check = podchecks.pod_endpoints(f)
    assert check.status == WARN and "cannot ask HNS: down" in check.message
    f = facts([("10.0.0.2", "gopod")])
    check = podchecks.pod_endpoints(f)
    assert check.status == OK and "have no sandbox record" in check.message and "10.0.0.2 (gopod)" in check.message
    assert (
        podchecks.pod_endpoints(NodeFacts(name="cbr0", network=NET, reservations=())).status == SKIP
    )  # records unread


@pytest.mark.parametrize("state", [0, 1, 4, 5, 6])
def test_a_pod_endpoint_in_a_bad_state_fails_while_its_sandbox_runs_and_warns_otherwise(state):
    ep = v1_endpoint("pod1_cbr0", "10.0.0.2", state)
    name = podchecks.STATE_NAMES[state]
    live = facts([("10.0.0.2", "pod1")], [("pod1_cbr0", ("10.0.0.2",))], [running("10.0.0.2", "pod1")], [ep])
    check = podchecks.endpoint_state(live)
    assert check.status == FAIL and f"State {state} ({name})" in check.message and "crictl rmp pod1" in check.fix
    unknown = facts([("10.0.0.2", "pod1")], [("pod1_cbr0", ("10.0.0.2",))], v1=[ep])
    assert podchecks.endpoint_state(unknown).status == WARN


def test_healthy_states_remote_endpoints_adds_in_flight_and_stale_endpoints_are_not_endpoint_states():
    eps = [
        v1_endpoint("pod1_cbr0", "10.0.0.2", 2),
        v1_endpoint("pod2_cbr0", "10.0.0.3", 3),
        v1_endpoint("remote_10.0.1.5", "10.0.1.5", 1, remote=True),  # remote endpoints are Created by design
        v1_endpoint("pod3_cbr0", "10.0.0.4", 1),  # an ADD in flight: created, not yet attached
        v1_endpoint("gone_cbr0", "10.0.0.5", 4),  # no sandbox: the stale-endpoints check's
        v1_endpoint("cbr0_ep", "10.0.0.1", 1),  # flanneld's
    ]
    f = facts(v1=eps, young={"10.0.0.4"}, stale=[("gone_cbr0", eps[4].id, ("10.0.0.5",))])
    assert podchecks.endpoint_state(f).status == OK


names = st.from_regex(r"[a-z0-9][a-z0-9_.\-]{0,30}", fullmatch=True)


@given(names, st.uuids())
def test_the_sandbox_a_cni_netns_names(cid, guid):
    assert sandbox_of(cid, str(guid)) == Sandbox(NAMESPACE, str(guid).upper())
    assert sandbox_of(cid, "{" + str(guid) + "}") == Sandbox(NAMESPACE, str(guid).upper())
    assert sandbox_of(cid, "none") == sandbox_of(cid, "") == Sandbox(CONTAINER, cid)
    assert sandbox_of("app", f"container:{cid}") == Sandbox(CONTAINER, cid)
    assert sandbox_of(cid, "/var/run/netns/x") is None and sandbox_of(cid, "container:../x") is None


class FakeHns:
    """The two questions ``exists`` asks, counted."""

    def __init__(self, namespaces=(), containers=()) -> None:
        self.namespaces, self.containers, self.calls = namespaces, containers, []

    def namespace_ids(self):
        self.calls.append("namespaces")
        return {ns.upper() for ns in self.namespaces}

    def compute_system_exists(self, cid):
        self.calls.append(cid)
        return cid in self.containers


def test_exists_asks_once_for_namespaces_and_once_per_container():
    hns = FakeHns(namespaces=[GUID], containers=["pause1"])
    wanted = [
        Sandbox(NAMESPACE, GUID),
        Sandbox(NAMESPACE, "0" * 8 + GUID[8:]),
        Sandbox(CONTAINER, "pause1"),
        Sandbox(CONTAINER, "gone"),
    ]
    found = exists(wanted, hns, hns)
    assert found == dict(zip(wanted, (True, False, True, False)))
    assert sorted(hns.calls) == ["gone", "namespaces", "pause1"]
    assert exists([], hns, hns) == {} and len(hns.calls) == 3
