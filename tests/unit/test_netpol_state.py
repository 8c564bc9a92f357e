"""The agent's state for ADD: what it holds (``tools.wincni.netpol.state``) and what ADD takes
of it (``plugins.winnet.netpolstate``): a known pod's rules, its namespace's safe default, none
for a namespace without policy, fail closed without the pod's name, refused when unsafe."""

from __future__ import annotations

import json
import os
import stat

import pytest

from plugins.cni.errors import CniError
from plugins.netpol import resources
from plugins.winnet import aclcompare as AC
from plugins.winnet import netpolstate
from plugins.winnet.policies import V1, V2
from test_netpol_agent import DB_ONLY_FROM_WEB, NODE, NODE_IPS, PODS
from tools.wincni.netpol import state

NAMESPACES = [{"metadata": {"name": n, "labels": {}}} for n in ("app", "other")]


def _doc() -> dict:
    return state.document(resources.read(NAMESPACES, PODS, [DB_ONLY_FROM_WEB]), NODE, NODE_IPS)


@pytest.fixture
def env(tmp_path):
    path = tmp_path / "netpol" / "state.json"
    state.StateFile(str(path)).write(_doc())
    return {netpolstate.ENV: str(path)}


def _acls(env, namespace="app", name="db", form=V2):
    args = {"K8S_POD_NAMESPACE": namespace, "K8S_POD_NAME": name} if namespace else {}
    return netpolstate.acls(env[netpolstate.ENV], args, form)


def _directions(acls) -> dict:
    """{(direction, action) at the band's end} of a rule list: what isolates."""
    return {(AC.canonical(a)[2], AC.canonical(a)[1]) for a in acls if AC.priority(a) == 4000}


def test_a_node_without_the_agent_gets_nothing(tmp_path):
    assert _acls({netpolstate.ENV: str(tmp_path / "absent.json")}) == []


def test_a_known_pod_gets_its_rules_without_its_own_address(env):
    got = _acls(env)
    assert got == _doc()["pods"]["app/db"] and _directions(got) == {("in", "block")}
    assert not any("10.244.1.5" in json.dumps(a) for a in got)


def test_an_unknown_pod_of_an_isolating_namespace_is_closed_with_the_node_allowed_in(env):
    got = _acls(env, name="not-yet-seen")
    assert _directions(got) == {("in", "block")}
    node_rule = next(a for a in got if AC.priority(a) == 2000)
    assert node_rule["Settings"]["RemoteAddresses"] == ",".join(NODE_IPS)


def test_a_pod_no_policy_can_select_gets_nothing(env):
    assert _acls(env, namespace="other", name="x") == []


def test_without_the_pods_name_both_directions_are_closed(env):
    assert _directions(_acls(env, namespace="")) == {("in", "block"), ("out", "block")}


def test_the_rules_come_in_the_adapters_form(env):
    assert _acls(env, form=V1) == [V1.fit(a) for a in _acls(env)]


def test_the_state_is_admin_only_and_written_only_when_it_changed(tmp_path):
    path = tmp_path / "netpol" / "state.json"
    writer = state.StateFile(str(path))
    assert writer.write(_doc()) and not writer.write(_doc())
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and os.listdir(path.parent) == ["state.json"]


@pytest.mark.parametrize(
    "content, words",
    [
        (b"{not json", "not a state"),
        (b'{"version": 99}', "not a state"),
        (b'{"version":1,"pods":{"app/db":[1]}}', "not ACL"),
    ],
)
def test_a_state_that_cannot_be_read_fails_the_add_rather_than_open_the_pod(tmp_path, content, words):
    path = tmp_path / "state.json"
    path.write_bytes(content)
    with pytest.raises(CniError) as err:
        _acls({netpolstate.ENV: str(path)})
    assert err.value.code == 5 and words in err.value.msg


def test_a_link_in_place_of_the_state_is_refused(env, tmp_path):
    path = env[netpolstate.ENV]
    os.rename(path, tmp_path / "real.json")
    os.symlink(tmp_path / "real.json", path)
    with pytest.raises(CniError) as err:
        _acls(env)
    assert err.value.code == 5 and "refusing" in err.value.msg


def test_a_fifo_in_place_of_the_state_is_refused_without_waiting(env):
    path = env[netpolstate.ENV]
    os.unlink(path)
    os.mkfifo(path)
    with pytest.raises(CniError) as err:
        _acls(env)
    assert err.value.code == 5


def test_a_state_larger_than_the_cap_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(netpolstate, "MAX_STATE", 64)
    path = tmp_path / "state.json"
    path.write_text(json.dumps({"version": 1, "pods": {}, "pad": "x" * 100}))
    with pytest.raises(CniError, match="not a state"):
        _acls({netpolstate.ENV: str(path)})


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_the_status_is_written_when_it_says_something_new_else_once_a_heartbeat(tmp_path):
    path, clock = tmp_path / "state.json", Clock()
    writer = state.StateFile(str(path), clock)
    quiet = {"endpoints": {}, "failed": 0, "lastError": None, "counts": {"apply": 1}, "synced": 1000.0}
    assert writer.write(_doc(), quiet)
    clock.now += 10
    assert not writer.write(status={**quiet, "counts": {"in-sync": 1}, "synced": 1010.0})  # only moving parts
    assert writer.write(status={**quiet, "failed": 1, "lastError": {"time": 1010.0, "text": "gone"}})
    clock.now += netpolstate.HEARTBEAT - 1
    assert not writer.write()
    clock.now += 1
    assert writer.write() and json.loads(path.read_text())["status"]["alive"] == clock.now
    assert json.loads(path.read_text())["pods"] == _doc()["pods"]  # ADD's part as it was


def test_the_status_keeps_when_the_last_full_sync_was_and_the_last_error():
    ok = state.report([], [], 0, 0, 0.01, 100.0, {})
    assert ok["synced"] == 100.0 and ok["lastError"] is None
    bad = state.report([], ["ep1: gone"], 0, 0, 0.01, 200.0, ok)
    assert bad["synced"] == 100.0 and bad["lastError"] == {"time": 200.0, "text": "ep1: gone"} and bad["failed"] == 1
    again = state.report([], [], 0, 0, 0.01, 300.0, bad)
    assert again["synced"] == 300.0 and again["lastError"] == bad["lastError"] and again["failed"] == 0
