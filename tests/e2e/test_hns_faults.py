"""When HNS misbehaves, run as processes against the simulator: every raw HNS call of
ADD and DEL, V1 and V2, in turn hangs past the deadline (code 11 in time, nothing left, the retry
converges) or fails transiently as while HNS restarts (retried: the command succeeds)."""

from __future__ import annotations

import time

import pytest

from hnsnode import Node, call_names, fault_targets

#: Short limits so a hang costs about a second; the process must answer within this margin of it
#: (interpreter start, host-local, the undo) even on a loaded 2-core machine.
LIMITS = {"call": 0.8, "command": 20, "undo": 5}
MARGIN = 4.0
HANG = "hang:4"  # longer than the per-call limit: the answer comes after the plugin gave up


def probe(node: Node, conf: dict, api: str) -> tuple[list[str], list[str]]:
    """The fault targets of one ADD and one DEL (each raw call, numbered)."""
    add, dele = map(fault_targets, node.add_del_calls(conf, "probe", api))
    node.ipam_calls()
    return add, dele


def timed(node: Node, command: str, conf: dict, cid: str, netns: str, faults: str):
    start = time.monotonic()
    run = node.fault_run(command, conf, cid, netns, faults)
    return run, time.monotonic() - start


@pytest.mark.parametrize("api", ["v1", "v2"])
def test_a_hung_call_ends_the_command_with_code_11_in_time_and_nothing_leaks(node, api):
    conf = node.conf(hnsTimeout=LIMITS)
    add_targets, del_targets = probe(node, conf, api)
    assert len(add_targets) >= 4 and len(del_targets) >= 3, (add_targets, del_targets)
    for i, target in enumerate(add_targets):
        cid = f"hung{i}"
        netns = node.sandbox(api, cid)
        run, took = timed(node, "ADD", conf, cid, netns, f"{target}={HANG}")
        run.failed(11, target.split("#")[0].split(":")[0], "no answer from HNS after", "per-call timeout 0.8 s")
        assert took < LIMITS["call"] + MARGIN, (target, took)
        node.assert_clean(cid)
        # The runtime retries: one endpoint, one address, and its DEL leaves nothing.
        out = node.add(conf, cid, netns)
        assert [ip for ip, owner in node.ip_files().items() if owner == cid] == [out["ips"][0]["address"].split("/")[0]]
        assert sum(name.startswith(cid + "_") for name in node.endpoints()) == 1
        assert node.run("DEL", conf, cid, netns).ok
        node.assert_clean(cid)
    for i, target in enumerate(del_targets):
        cid = f"hungdel{i}"
        netns = node.sandbox(api, cid)
        node.add(conf, cid, netns)
        run, took = timed(node, "DEL", conf, cid, netns, f"{target}={HANG}")
        run.failed(11, "no answer from HNS after")
        assert took < LIMITS["call"] + MARGIN, (target, took)
        assert cid not in node.ip_files().values()  # DEL released the address first
        assert node.run("DEL", conf, cid, netns).ok  # the runtime's retry
        node.assert_clean(cid)


@pytest.mark.parametrize(
    "api, hresult",
    [("v1", "0x800706BA"), ("v2", "0x800706BA"), ("v2", "0x80070005"), ("v1", "0x803B0020")],
    ids=["v1-rpc-unavailable", "v2-rpc-unavailable", "v2-access-denied", "v1-manager-stopped"],
)
def test_transient_errors_on_each_call_are_retried(node, api, hresult):
    conf = node.conf()
    add_targets, del_targets = probe(node, conf, api)
    for i, target in enumerate(add_targets):
        cid = f"t{i}"
        netns = node.sandbox(api, cid)
        name, n = target.split("#")
        run = node.fault_run("ADD", conf, cid, netns, f"{name}#{n}-{int(n) + 1}={hresult}")
        assert run.ok, (target, run.out, run.stderr)
        assert node.endpoints()[f"{cid}_{node.network}"]
        node.journal()
        run = node.fault_run("DEL", conf, cid, netns, f"{del_targets[i % len(del_targets)]}={hresult}")
        assert run.ok, (del_targets[i % len(del_targets)], run.out)
        node.assert_clean(cid)


def test_a_permanent_error_is_not_retried(node):
    conf = node.conf()
    netns = node.sandbox("v2", "p")
    run = node.fault_run("ADD", conf, "p", netns, "HcnCreateEndpoint=0x80004005")
    run.failed(100, "0x80004005")
    assert call_names(node.journal()).count("HcnCreateEndpoint") == 1
    node.assert_clean("p")


def test_access_denied_is_retried_briefly_then_reported(node):
    """A caller that is not elevated always gets E_ACCESSDENIED: a short retry, then code 11."""
    conf = node.conf()
    netns = node.sandbox("v2", "p")
    run, took = timed(node, "ADD", conf, "p", netns, "HcnCreateEndpoint=0x80070005")
    run.failed(11, "E_ACCESSDENIED")
    assert took < 2.0 + MARGIN, took
    assert 3 <= call_names(node.journal()).count("HcnCreateEndpoint") <= 8
    node.assert_clean("p")


def test_the_command_deadline_bounds_all_calls_together_and_the_undo_gets_its_own(node):
    """The attach hangs past the command deadline: the endpoint it was attaching is still deleted,
    under the undo deadline, though the command's own had passed."""
    conf = node.conf(hnsTimeout={"call": 10, "command": 1})
    netns = node.sandbox("v2", "p")
    run, took = timed(node, "ADD", conf, "p", netns, "HcnModifyNamespace#1=hang:4")
    run.failed(11, "HcnModifyNamespace", "command deadline 1 s")
    assert took < 1 + MARGIN, took
    assert "rollback" not in run.stderr, run.stderr
    node.assert_clean("p")


def test_limits_from_the_environment(node):
    netns = node.sandbox("v2", "p")
    run = node.run(
        "ADD", node.conf(), "p", netns, LIBHNS_SIM_FAULTS="HcnModifyNamespace=hang:4", LIBHNS_CALL_TIMEOUT="0.5"
    )
    run.failed(11, "HcnModifyNamespace", "per-call timeout 0.5 s")
    node.assert_clean("p")
    run = node.run("ADD", node.conf(), "p", netns, LIBHNS_CALL_TIMEOUT="soon")
    run.failed(4, "LIBHNS_CALL_TIMEOUT")


def test_a_bad_hns_timeout_is_code_7_on_add_and_ignored_by_del(node):
    netns = node.sandbox("v2", "p")
    node.run("ADD", node.conf(hnsTimeout={"call": 0}), "p", netns).failed(7, "hnsTimeout.call")
    run = node.run("DEL", node.conf(hnsTimeout="soon"), "p", netns)
    assert run.ok and "DEL ignores hnsTimeout" in run.stderr
