"""The agent's loop end to end on loopback: the fake API server's lists -> the state ADD reads and
the simulated node's endpoints; a second pass and a restart change nothing; an object the model
refuses is left out, not the reason the others stop; the loop syncs on a change."""

from __future__ import annotations

import json
import threading

from fakeapiserver import FakeApiServer, service_account
from plugins.winnet import netpolstate
from plugins.winnet.aclcompare import digest
from plugins.winnet.acls import netpol_owned
from test_netpol_agent import DB_ONLY_FROM_WEB, NODE, POD_IPS, PODS, Node
from tools.wincni.netpol import agent as A
from tools.wincni.netpol import kubeapi, state, watch
from tools.wincni.netpol import plan as P


def _stream(pods=PODS, policies=(DB_ONLY_FROM_WEB,)) -> dict:
    def page(items):
        return {"metadata": {"resourceVersion": "7"}, "items": list(items)}

    namespaces = [{"metadata": {"name": "app", "labels": {}}}]
    lists = {"pods": [page(pods)], "namespaces": [page(namespaces)], "networkpolicies": [page(policies)]}
    return {"lists": lists, "watches": {k: [] for k in lists}}


def _agent(tmp_path, stream, version=2):
    server = FakeApiServer(stream)
    service_account(tmp_path / "sandbox")
    api = kubeapi.InCluster(
        "127.0.0.1", server.server_address[1], str((tmp_path / "sandbox").joinpath(*kubeapi.SA_DIR))
    )
    cw = watch.ClusterWatch(api)
    for r in cw.reflectors.values():
        r.relist()
    node = Node(tmp_path, version)
    path = tmp_path / "netpol" / "netpol.json"
    return server, node, A.Agent(cw, node.agent(), state.StateFile(str(path)), NODE), path


def test_a_pass_writes_the_state_and_sets_what_differs_and_a_second_pass_nothing(tmp_path):
    server, node, agent, path = _agent(tmp_path, _stream())
    first = agent.sync()
    assert first.counts == {P.APPLY: 1, P.IN_SYNC: 1, P.NO_POD: 0} and first.state_written and not first.failures
    assert len(node.calls()) == 1
    assert set(json.loads(path.read_text())["pods"]) == {"app/db"}
    assert netpolstate.acls(str(path), {"K8S_POD_NAMESPACE": "app", "K8S_POD_NAME": "db"}, node.agent().api.policy_form)
    second = agent.sync()
    assert second.counts == {P.APPLY: 0, P.IN_SYNC: 2, P.NO_POD: 0} and not second.state_written
    assert node.calls(changes_only=False) == []
    status = json.loads(path.read_text())["status"]
    held = [a for a in node.acls("db") if netpol_owned(a)]
    assert status["endpoints"][POD_IPS["db"]] == {"pod": "app/db", "rules": len(held), "acls": digest(held)}
    assert status["endpoints"][POD_IPS["web"]]["rules"] == 0 and status["failed"] == 0 and status["synced"]
    server.shutdown()


def test_an_object_the_model_refuses_is_left_out(tmp_path):
    bad = {"metadata": {"namespace": "app", "name": "bad"}, "spec": {"podSelector": {}, "policyTypes": ["Sideways"]}}
    server, node, agent, _ = _agent(tmp_path, _stream(policies=(DB_ONLY_FROM_WEB, bad)))
    result = agent.sync()
    assert result.counts[P.APPLY] == 1 and len(result.refused) == 1 and "policyTypes" in result.refused[0]
    server.shutdown()


def test_the_loop_syncs_after_a_change_and_stops(tmp_path):
    server, node, agent, _ = _agent(tmp_path, _stream())
    stop = threading.Event()
    reports = []

    def report(sync):
        reports.append(sync)
        stop.set()

    agent.watch.changed.set()
    agent.run(report, stop)
    assert len(reports) == 1 and reports[0].counts[P.APPLY] == 1
    server.shutdown()


def test_a_policy_change_keeps_the_pods_model_and_a_pod_change_makes_it_again(tmp_path):
    server, node, agent, path = _agent(tmp_path, _stream())
    agent.sync()
    node.calls()
    model, r = agent.pods_model, agent.watch.reflectors
    wider = {**DB_ONLY_FROM_WEB, "spec": {**DB_ONLY_FROM_WEB["spec"], "ingress": [{}]}}  # from anywhere
    watch.apply_event(r["networkpolicies"].items, {"type": "MODIFIED", "object": wider}, watch.slim_policy)
    changed = agent.sync()
    assert agent.pods_model is model and changed.counts[P.APPLY] == 1 and len(node.calls()) == 1
    assert changed.state_written and json.loads(path.read_text())["pods"]["app/db"] != []
    web = {**PODS[1], "metadata": {**PODS[1]["metadata"], "labels": {"role": "db"}}}  # now isolated too
    watch.apply_event(r["pods"].items, {"type": "MODIFIED", "object": web}, watch.slim_pod)
    again = agent.sync()
    assert agent.pods_model is not model and again.counts[P.APPLY] == 1 and len(node.calls()) == 1
    assert set(json.loads(path.read_text())["pods"]) == {"app/db", "app/web"}
    server.shutdown()


class Ticking:
    """The watch's ``changed``, never set: each wait moves ``clock`` on by its timeout."""

    def __init__(self, clock: list[float]) -> None:
        self.clock, self.waits = clock, []

    def wait(self, timeout: float) -> bool:
        self.waits.append(timeout)
        self.clock[0] += timeout
        return False

    def is_set(self) -> bool:
        return False

    def clear(self) -> None:
        pass


def test_a_quiet_watch_still_beats_once_a_heartbeat_and_syncs_nothing(tmp_path):
    server, node, agent, path = _agent(tmp_path, _stream())
    clock = [1000.0]
    agent.clock = agent.state.clock = lambda: clock[0]
    agent.sync()
    node.calls()
    agent.watch.changed = ticking = Ticking(clock)
    stop = StopAfterTicks(ticking, 3)
    reports: list = []
    agent.run(reports.append, stop)
    assert ticking.waits == [netpolstate.HEARTBEAT] * 3 and not reports and node.calls(changes_only=False) == []
    # a beat after each of the first two waits; the third ends the loop
    assert json.loads(path.read_text())["status"]["alive"] == 1000.0 + 2 * netpolstate.HEARTBEAT
    server.shutdown()


class StopAfterTicks:
    """The loop's stop: set once ``ticking`` has waited ``n`` times."""

    def __init__(self, ticking: Ticking, n: int) -> None:
        self.ticking, self.n = ticking, n

    def is_set(self) -> bool:
        return len(self.ticking.waits) >= self.n

    def wait(self, timeout: float) -> None:
        pass


def test_without_an_event_the_loop_reads_hns_again_each_resync_and_repairs_what_changed(tmp_path):
    """HNS restarted and the same pods' endpoints made again (new IDs, their first rules): no event
    comes, the resync finds them."""
    server, node, agent, _ = _agent(tmp_path, _stream())
    agent.resync = 0.05
    assert agent.sync().counts[P.APPLY] == 1
    node.hcn.delete_network(node.net)
    node.make()
    stop = threading.Event()
    reports = []

    def report(sync):
        reports.append(sync)
        stop.set()

    agent.run(report, stop)
    assert reports[0].counts[P.APPLY] == 1 and len(node.calls()) == 1
    server.shutdown()
