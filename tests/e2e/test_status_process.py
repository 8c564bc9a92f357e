"""CNI STATUS as containerd 2.x calls it (no timeout; an error keeps the node from taking pods):
each node state's code, answered within a few seconds whatever HNS does. The plugins run as
processes on the simulator; every answer is timed."""

from __future__ import annotations

import time

import pytest

from hnsnode import Node, Run, fault_targets

pytestmark = pytest.mark.node("win-bridge", "win-overlay")

#: STATUS waits at most libhns.deadline.STATUS_SECONDS (3 s) on HNS; the rest is interpreter start.
BOUND = 5.0
#: HNS that answers long after anyone waits: the default hnsTimeout (30 s a call) would wait it out.
HUNG = "hang:60"


def status(node: Node, conf: dict, **env: str) -> tuple[Run, float]:
    start = time.monotonic()
    run = node.run("STATUS", conf, **env)
    return run, time.monotonic() - start


def hung(node: Node, conf: dict, what: str = HUNG) -> str:
    """LIBHNS_SIM_FAULTS making every HNS call a healthy STATUS makes do ``what``."""
    node.journal()
    assert node.run("STATUS", conf).ok
    return ",".join(sorted({f"{t.split('#')[0]}={what}" for t in fault_targets(node.journal())}))


def test_healthy_node_answers_0(node):
    run, took = status(node, node.conf("1.1.0"))
    assert run.ok and run.out is None, (run.out, run.stderr)
    assert took < BOUND


def test_missing_network_answers_50(node):
    run, took = status(node, node.conf("1.1.0", name="flannel.4096"))
    run.failed(50, "flannel.4096 not found", "flanneld")
    assert took < BOUND


@pytest.mark.parametrize("what, words", [(HUNG, ("no answer from HNS after", "3 s")), ("0x8007054F", ("HNSCall",))])
def test_hns_hung_or_failing_answers_50_in_bounded_time(node, what, words):
    conf = node.conf("1.1.0")
    faults = hung(node, conf, what)
    start = time.monotonic()
    run = node.run("STATUS", conf, LIBHNS_SIM_FAULTS=faults)
    took = time.monotonic() - start
    run.failed(50, *words, "Get-Service hns")
    assert took < BOUND, took


@pytest.mark.node("win-overlay")
def test_vxlan_problem_answers_51(node):
    node.hnsctl("network", "delete", node.network)
    node.overlay(node.network, 4095)
    run, took = status(node, node.conf("1.1.0"))
    run.failed(51, "VSID", "4095", "4096")
    assert took < BOUND


# ------------------------------------------------------------------ through flannel


def flannel_node(tmp_path, vsid: int = 4096) -> tuple[Node, dict]:
    node = Node(tmp_path, "flannel").overlay("vxlan0", vsid).lease()
    return node, node.flannel_conf("cni.conf.overlay-v1.json", cniVersion="1.1.0")


def test_flannel_healthy_answers_0(tmp_path):
    node, conf = flannel_node(tmp_path)
    run, took = status(node, conf)
    assert run.ok, (run.out, run.stderr)
    assert took < BOUND


def test_flannel_without_subnet_env_answers_50(tmp_path):
    node, conf = flannel_node(tmp_path)
    node.subnet_env.unlink()
    run, took = status(node, conf)
    run.failed(50, str(node.subnet_env), "flanneld")
    assert took < BOUND


def test_flannel_passes_the_delegates_code_through(tmp_path):
    node, conf = flannel_node(tmp_path, vsid=4095)
    status(node, conf)[0].failed(51, "VSID", "4095")
    node, conf = flannel_node(tmp_path / "hung")
    run, took = status(node, conf, LIBHNS_SIM_FAULTS=hung(node, conf))
    run.failed(50, "no answer from HNS after")
    assert took < BOUND, took
