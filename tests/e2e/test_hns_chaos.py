"""Random sequences of ADD / DEL / GC on one node while HNS misbehaves at random: a
call hangs past the deadline, fails transiently or for good, a stale endpoint appears on the
pod's address, or the plugin is killed mid-command. After the runtime's own clean-up (DEL of
every pod whose last command failed, then GC) HNS endpoints, attachments and host-local's
reservations agree, and nothing of a deleted pod remains. Bounded: a few short sequences."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hnsnode import VENV_BIN, Node
from libhns.sim import Simulator

LIMITS = {"call": 0.5, "command": 10, "undo": 5}
TARGETS = {
    "v2": [
        "HcnEnumerateEndpoints",
        "HcnOpenNetwork",
        "HcnCreateEndpoint",
        "HcnQueryEndpointProperties",
        "HcnModifyNamespace",
        "HcnDeleteEndpoint",
    ],
    "v1": [
        "HNSCall:GET /networks/*",
        "HNSCall:POST /endpoints/",
        "HcsOpenComputeSystem",
        "HcsModifyComputeSystem",
        "HNSCall:DELETE /endpoints/*",
    ],
}
KINDS = ["hang:1.5", "0x800706BA", "0x80004005", "stale-ip", "kill"]
PODS = ["a", "b", "c"]

steps = st.lists(
    st.tuples(
        st.sampled_from(["ADD", "ADD", "DEL", "GC"]),
        st.sampled_from(PODS),
        st.sampled_from(KINDS + [""] * 2),
        st.integers(0, 5),
        st.floats(0.05, 0.8),
    ),
    min_size=2,
    max_size=5,
)


def run(node: Node, command: str, conf: dict, cid: str, netns: str, faults: str, kill_after: float | None):
    Simulator.from_env(node.env).reset_fault_counters()
    env = {**node.env, "CNI_COMMAND": command, "CNI_CONTAINERID": cid, "CNI_NETNS": netns, "LIBHNS_SIM_FAULTS": faults}
    proc = subprocess.Popen(
        [str(VENV_BIN / node.plugin)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        start_new_session=True,
    )
    try:
        out, _ = proc.communicate(json.dumps(conf).encode(), timeout=kill_after if kill_after is not None else 60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return None  # killed
    return proc.returncode, (json.loads(out) if out.strip() else None)


def assert_pod_ok(node: Node, cid: str, netns: str, eps: dict, reservations: dict[str, str]) -> None:
    """The pod's one endpoint is attached to its sandbox and holds the address reserved to it."""
    ep = eps[f"{cid}_{node.network}"]
    assert reservations.get(ep["IPAddress"]) == cid, (ep, reservations)
    attached = (
        cid in ep["SharedContainers"]
        if netns == "none"
        else ep.get("Namespace", {}).get("ID", "").upper() == netns.upper()
    )
    assert attached, ep


def assert_agree(node: Node, alive: dict[str, str]) -> None:
    """One attached endpoint per live pod on its reserved address; nothing else of ours."""
    eps = {n: e for n, e in node.endpoints().items() if n.endswith("_" + node.network) and n != f"{node.network}_ep"}
    assert set(eps) == {f"{cid}_{node.network}" for cid in alive}, (eps.keys(), alive)
    reservations = node.ip_files()
    assert sorted(reservations.values()) == sorted(alive), (reservations, alive)
    for cid, netns in alive.items():
        assert_pod_ok(node, cid, netns, eps, reservations)
    live_ids = {e["ID"].upper() for e in node.endpoints().values()}
    assert not node.attachments() - live_ids, "an attachment points at a deleted endpoint"


@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
@given(api=st.sampled_from(["v1", "v2"]), sequence=steps)
def test_random_commands_under_random_hns_faults_leave_hns_and_host_local_in_agreement(api, sequence):
    with tempfile.TemporaryDirectory() as tmp:
        node = Node(Path(tmp)).bridge()
        node.env.pop("LIBHNS_JOURNAL")
        conf = node.conf(cniVersion="1.1.0", hnsTimeout=LIMITS)
        netns = {cid: node.sandbox(api, cid) for cid in PODS}
        alive: dict[str, str] = {}  # pods whose last command was a successful ADD
        dirty: set[str] = set()  # pods whose last command failed: the runtime DELs them
        for command, cid, kind, target_index, kill_after in sequence:
            targets = TARGETS[api]
            faults = "" if kind in ("", "kill") else f"{targets[target_index % len(targets)]}#1-2={kind}"
            valid = [{"containerID": c, "ifname": "eth0"} for c in alive]
            doc = {**conf, "cni.dev/valid-attachments": valid} if command == "GC" else conf
            outcome = run(
                node,
                command,
                doc,
                "" if command == "GC" else cid,
                "" if command == "GC" else netns[cid],
                faults,
                kill_after if kind == "kill" else None,
            )
            ok = outcome is not None and outcome[0] == 0
            if outcome is not None and not ok:
                assert outcome[1]["code"] in (11, 100), outcome  # a CNI error, never a traceback
            if command == "GC":
                if ok:
                    dirty.clear()
                continue
            alive.pop(cid, None)
            dirty.discard(cid)
            if ok and command == "ADD":
                alive[cid] = netns[cid]
                assert_pod_ok(node, cid, netns[cid], node.endpoints(), node.ip_files())
            elif ok:
                node.assert_clean(cid)  # a DEL that succeeded leaves nothing of the pod
            else:
                dirty.add(cid)
        for cid in sorted(dirty):  # the runtime's clean-up: DEL until it succeeds, then GC
            assert run(node, "DEL", conf, cid, netns[cid], "", None) == (0, None)
            node.assert_clean(cid)
        valid = [{"containerID": c, "ifname": "eth0"} for c in alive]
        assert run(node, "GC", {**conf, "cni.dev/valid-attachments": valid}, "", "", "", None) == (0, None)
        assert_agree(node, alive)
