"""The doctor's NetworkPolicy checks and gauges on a simulated node the agent programmed
(``wincni netpol --once`` against the fake API server): the agent off, running, down, failing;
an endpoint whose ACLs drifted and one left open; the same verdicts from a bundle."""

from __future__ import annotations

import io
import json
from pathlib import Path

import promtext
from fakeapiserver import FakeApiServer, service_account
from hnsnode import Node, add_two_pods
from test_wincni_doctor import sim_node
from tools.wincni.cli.main import main
from tools.wincni.doctor.checks.netpol import STALE, netpol_agent
from tools.wincni.doctor.facts import NodeFacts
from tools.wincni.judge.verdict import FAIL, OK, WARN
from tools.wincni.node.source import Problem

AGENT_NODE = "n1"
NETPOL = ("netpol-agent", "netpol-drift", "netpol-unprotected")


def pod_ips(node: Node) -> dict[str, str]:
    """pod-a and pod-b's addresses, from their endpoints."""
    found = {}
    for e in node.hnsctl("endpoint", "list", "-o", "json"):
        name = e.get("Name", "").split("_")[0]
        if name in ("pod-a", "pod-b"):
            found[name] = e["IpConfigurations"][0]["IpAddress"]
    return found


def _stream(ips: dict[str, str]) -> dict:
    def pod(name: str, role: str) -> dict:
        return {
            "metadata": {"namespace": "app", "name": name, "labels": {"role": role}},
            "spec": {"nodeName": AGENT_NODE, "containers": []},
            "status": {"phase": "Running", "podIP": ips[name]},
        }

    policy = {
        "metadata": {"namespace": "app", "name": "db"},
        "spec": {
            "podSelector": {"matchLabels": {"role": "db"}},
            "policyTypes": ["Ingress"],
            "ingress": [{"from": [{"podSelector": {"matchLabels": {"role": "web"}}}]}],
        },
    }
    lists = {
        "pods": [{"metadata": {"resourceVersion": "7"}, "items": [pod("pod-a", "db"), pod("pod-b", "web")]}],
        "namespaces": [{"metadata": {"resourceVersion": "7"}, "items": [{"metadata": {"name": "app", "labels": {}}}]}],
        "networkpolicies": [{"metadata": {"resourceVersion": "7"}, "items": [policy]}],
    }
    return {"lists": lists, "watches": {k: [] for k in lists}}


def state_path(node: Node) -> Path:
    return node.root / "locks" / "netpol.json"


def agent_args(node: Node) -> tuple[str, ...]:
    return ("--netpol-state", str(state_path(node)))


def with_agent(node: Node) -> Node:
    """``node`` with two pods, a policy isolating pod-a, the fake API server serving them (kept on
    the node, in its environment as a HostProcess container has it) and ``wincni netpol --once``
    run: pod-a's endpoint programmed, the state written."""
    add_two_pods(node)
    server = FakeApiServer(_stream(pod_ips(node)))
    node.netpol_server = server  # type: ignore[attr-defined]  # served until the test's process ends
    service_account(node.root / "sandbox")
    node.env.update(
        KUBERNETES_SERVICE_HOST="127.0.0.1",
        KUBERNETES_SERVICE_PORT=str(server.server_address[1]),
        CONTAINER_SANDBOX_MOUNT_POINT=str(node.root / "sandbox"),
        WINCNI_NETPOL_STATE=str(state_path(node)),
    )
    node.write_cni_conf(node.cni_conf)
    out, err = io.StringIO(), io.StringIO()
    argv = ["netpol", "--once", "--node-name", AGENT_NODE, "--cni-conf", str(node.conf_dir)]
    rc = main(argv, out, err, node.env, platform="linux", cwd=str(node.root))
    assert (rc, out.getvalue()) == (0, ""), err.getvalue()
    return node


def set_acls(node: Node, pod: str, acls: list[dict]) -> None:
    (node.root / "acls.json").write_text(json.dumps(acls))
    ep = next(e["ID"] for e in node.hnsctl("endpoint", "list", "-o", "json") if e["Name"].startswith(f"{pod}_"))
    node.hnsctl("endpoint", "acls", ep, str(node.root / "acls.json"))


#: A rule in NetworkPolicy's band that no policy of the stream wants.
STRANGER = {
    "Type": "ACL",
    "Settings": {"Action": "Allow", "Direction": "In", "Priority": 2500, "RuleType": "Switch",
                 "RemoteAddresses": "192.0.2.9/32"},
}  # fmt: skip


def drift(node: Node) -> None:
    with_agent(node)
    set_acls(node, "pod-a", [STRANGER])


def strip(node: Node) -> None:
    with_agent(node)
    set_acls(node, "pod-a", [])


def silence(node: Node) -> None:
    """The agent stopped long ago: its heartbeat is old."""
    with_agent(node)
    doc = json.loads(state_path(node).read_text())
    doc["status"]["alive"] -= 10 * STALE
    state_path(node).write_text(json.dumps(doc))


def test_the_agent_off_is_said_once_and_passes(tmp_path: Path) -> None:
    node = sim_node(tmp_path)
    found = node.doctor(*agent_args(node))
    assert {found[c]["status"] for c in NETPOL} == {OK}
    assert "off" in found["netpol-agent"]["message"] and "ADD applies none" in found["netpol-agent"]["message"]
    assert all(found[c]["message"].endswith("the agent is off (netpol-agent)") for c in NETPOL[1:])  # said once


def test_a_programmed_node_passes_and_says_what_the_agent_keeps(tmp_path: Path) -> None:
    node = with_agent(sim_node(tmp_path, "bridge"))
    found = node.doctor(*agent_args(node))
    assert {found[c]["status"] for c in NETPOL} == {OK}, [found[c] for c in NETPOL]
    assert "running" in found["netpol-agent"]["message"] and "2 endpoints kept" in found["netpol-agent"]["message"]
    assert found["netpol-drift"]["message"].startswith("2 endpoints hold the rules the agent wants")


def test_without_the_flag_the_doctor_reads_the_state_where_the_agent_wrote_it(tmp_path: Path) -> None:
    """The agent and ADD place the state by the environment (``WINCNI_NETPOL_STATE`` here, else
    ``WINCNI_LOCK_DIR``): the doctor's default follows it, so it finds the running agent."""
    node = with_agent(sim_node(tmp_path, "bridge"))
    found = node.doctor()
    assert "running" in found["netpol-agent"]["message"], found["netpol-agent"]


def test_drift_names_the_endpoint_and_the_pod(tmp_path: Path) -> None:
    node = sim_node(tmp_path, "bridge")
    drift(node)
    found = node.doctor(*agent_args(node))
    assert found["netpol-drift"]["status"] == WARN and "app/pod-a" in found["netpol-drift"]["message"]
    assert found["netpol-unprotected"]["status"] == OK  # it holds a rule of the band: not open
    assert "wincni netpol --once --node-name n1" in found["netpol-drift"]["run"]


def test_an_isolated_pod_without_rules_fails(tmp_path: Path) -> None:
    node = sim_node(tmp_path, "bridge")
    strip(node)
    found = node.doctor(*agent_args(node))
    assert found["netpol-unprotected"]["status"] == FAIL and "app/pod-a" in found["netpol-unprotected"]["message"]
    assert found["netpol-drift"]["status"] == WARN


def test_an_agent_gone_quiet_says_what_happens_meanwhile(tmp_path: Path) -> None:
    node = sim_node(tmp_path, "bridge")
    silence(node)
    check = node.doctor(*agent_args(node))["netpol-agent"]
    assert check["status"] == WARN and "down or stuck" in check["message"]
    assert "fails closed" in check["message"] and "rollout restart" in check["fix"] and not check["run"]


def test_a_failed_apply_and_an_unreadable_state_are_said() -> None:
    failing = {"version": 1, "status": {"alive": 100.0, "synced": 50.0, "failed": 1,
                                        "lastError": {"time": 100.0, "text": "ep1: gone"}}}  # fmt: skip
    from basics.inputfile import Input

    def facts(got: object) -> NodeFacts:
        return NodeFacts(files={"--netpol-state": got}, now=110.0)

    check = netpol_agent(facts(Input("/s", json.dumps(failing).encode(), "")))
    assert check.status == WARN and "ep1: gone" in check.message
    check = netpol_agent(facts(Input("/s", json.dumps({"version": 1}).encode(), "")))
    assert check.status == WARN and "no status" in check.message  # an agent from before the status
    check = netpol_agent(facts(Input("/s", b"{not json", "")))
    assert check.status == FAIL and "every ADD fails" in check.message
    check = netpol_agent(facts(Problem("--netpol-state /s is a FIFO", "remove it")))
    assert check.status == FAIL and "code 5" in check.fix


def test_the_gauges_count_the_agent(tmp_path: Path) -> None:
    node = sim_node(tmp_path, "bridge")
    drift(node)
    rc, out, err = node.wincni("metrics", "--textfile", str(tmp_path / "tf"), *agent_args(node))
    assert (rc, err) == (0, ""), err
    found = promtext.parse((tmp_path / "tf" / Path(out.strip()).name).read_text())

    def value(name: str, **labels: str) -> float:
        return found[name]["samples"][tuple(sorted(labels.items()))]

    ips = pod_ips(node)
    assert value("wincni_netpol_up") == 1 and 0 <= value("wincni_netpol_heartbeat_age_seconds") < STALE
    assert value("wincni_netpol_drifted_endpoints") == 1 and value("wincni_netpol_failed_applies") == 0
    assert value("wincni_netpol_endpoint_rules", pod="app/pod-a", address=ips["pod-a"]) > 0
    assert value("wincni_netpol_endpoint_rules", pod="app/pod-b", address=ips["pod-b"]) == 0
    assert value("wincni_netpol_sync_seconds") > 0 and value("wincni_netpol_watch_errors") == 0


def test_a_bundle_replays_the_same_verdicts(tmp_path: Path) -> None:
    node = sim_node(tmp_path, "bridge")
    drift(node)
    live = node.doctor(*agent_args(node))
    bundle = tmp_path / "b.tar.gz"
    rc, _, err = node.wincni("bundle", "--out", str(bundle), *agent_args(node))
    assert rc == 0, err
    out = io.StringIO()
    main(["doctor", "--replay", str(bundle), "-o", "json"], out, io.StringIO(), {}, platform="linux", cwd="/")
    replayed = {c["id"]: c for c in json.loads(out.getvalue())["checks"]}
    assert (
        {c: replayed[c]["status"] for c in NETPOL}
        == {c: live[c]["status"] for c in NETPOL}
        == {
            "netpol-agent": OK,
            "netpol-drift": WARN,
            "netpol-unprotected": OK,
        }
    )
    assert replayed["netpol-drift"]["message"] == live["netpol-drift"]["message"]
