"""The agent's list+watch against a small fake API server on loopback (TLS under a test cluster
CA), fed the recorded stream in ``tests/data/netpol/stream.json``: paged lists, what is kept of
each object, bookmarks, 410 Gone by listing again, reconnect with backoff, the token's rotation,
the CA checked, the service account found under a HostProcess container's mount point."""

from __future__ import annotations

import json
import os
import threading
import time
import tracemalloc
from pathlib import Path

import pytest

from fakeapiserver import DATA, FakeApiServer, service_account
from tools.wincni.netpol import kubeapi, watch

STREAM = json.loads((DATA / "stream.json").read_text())


@pytest.fixture
def server():
    s = FakeApiServer(STREAM)
    yield s
    s.close()


@pytest.fixture
def api(server, tmp_path):
    env = {"CONTAINER_SANDBOX_MOUNT_POINT": str(tmp_path), "KUBERNETES_SERVICE_HOST": "127.0.0.1"}
    env["KUBERNETES_SERVICE_PORT"] = str(server.server_address[1])
    service_account(tmp_path)
    return kubeapi.InCluster.from_env(env)


class StopAfter:
    """``stop`` for ``Reflector.run``: records each backoff and stops after ``n`` of them."""

    def __init__(self, n: int = 1) -> None:
        self.n, self.waits = n, []

    def is_set(self) -> bool:
        return len(self.waits) >= self.n

    def wait(self, seconds: float) -> None:
        self.waits.append(seconds)


def test_the_service_account_is_found_under_the_hostprocess_mount_point(api, tmp_path):
    assert api.account == str(tmp_path.joinpath(*kubeapi.SA_DIR)) and api.token() == "token-1"


def test_without_the_service_variables_the_agent_says_it_needs_a_pod():
    with pytest.raises(kubeapi.ApiError, match="service account"):
        kubeapi.InCluster.from_env({})


def test_pages_are_listed_and_only_what_the_model_reads_is_kept(api, server):
    r = watch.Reflector(api, "pods")
    r.relist()
    assert [q.get("continue", "") for q in server.requested("pods", False)] == [
        "",
        STREAM["lists"]["pods"][0]["metadata"]["continue"],
    ]
    assert all(q["limit"] == str(kubeapi.PAGE) for q in server.requested("pods", False))
    assert r.version == "100" and sorted(r.items) == ["app/db", "app/hostnet", "app/web"]
    assert r.items["app/db"] == {
        "metadata": {"namespace": "app", "name": "db", "labels": {"role": "db"}},
        "spec": {
            "nodeName": "n1",
            "containers": [{"ports": [{"name": "http", "containerPort": 80, "protocol": "TCP"}]}],
        },
        "status": {"podIP": "10.244.1.5"},
    }
    assert r.items["app/hostnet"]["status"] == {}  # a host-network pod has no address of its own


def test_the_watch_follows_events_and_bookmarks_and_calls_back_only_on_a_change(api, server):
    r = watch.Reflector(api, "pods")
    r.relist()
    changes = []
    assert r.watch(lambda: changes.append(sorted(r.items))) == 6
    (q,) = server.requested("pods", True)
    assert q["resourceVersion"] == "100" and q["allowWatchBookmarks"] == "true"
    # the label change, the new pod, its finish (its address dropped), the deletion; not the status-only change
    assert len(changes) == 4 and r.version == "121"
    assert sorted(r.items) == ["app/db", "app/hostnet", "app/new"] and r.items["app/new"]["status"] == {}


def test_an_open_watch_streams_what_is_pushed_past_its_version_as_it_comes_until_the_server_closes(tmp_path):
    server = FakeApiServer({"lists": STREAM["lists"], "watches": {k: [] for k in STREAM["lists"]}}, open_watches=True)
    service_account(tmp_path)
    api = kubeapi.InCluster("127.0.0.1", server.server_address[1], str(tmp_path.joinpath(*kubeapi.SA_DIR)))
    r = watch.Reflector(api, "pods")
    r.relist()
    events = STREAM["watches"]["pods"][0]
    stale = json.loads(json.dumps(events[0]))
    stale["object"]["metadata"]["resourceVersion"] = "99"  # before the list's "100": not sent
    server.push("pods", [stale, *events[:2]])
    seen: list[int] = []
    t = threading.Thread(target=lambda: seen.append(r.watch(lambda: None)))
    t.start()
    try:
        _until(lambda: server.sent["pods"] == 2)
        server.push("pods", events[2:])
        _until(lambda: server.sent["pods"] == len(events))
    finally:
        server.close()
    t.join(10)
    assert seen == [len(events)] and r.version == "121"
    assert sorted(r.items) == ["app/db", "app/hostnet", "app/new"]


def _until(ok, limit: float = 10.0) -> None:
    deadline = time.monotonic() + limit
    while not ok():
        assert time.monotonic() < deadline, "not within the limit"
        time.sleep(0.01)


def test_410_gone_lists_again_and_the_watch_resumes_from_the_new_list(api, server):
    r = watch.Reflector(api, "pods")
    changes = []
    r.run(lambda: changes.append(1), StopAfter(1))
    lists = [q for q in server.requested("pods", False) if not q.get("continue")]
    watches = server.requested("pods", True)
    assert len(lists) == 2  # the start, and after the ERROR 410 event
    assert [q["resourceVersion"] for q in watches] == ["100", "121", "100"]  # the third got the 500
    assert r.errors == 1 and r.synced


def test_a_failing_server_is_retried_with_a_doubling_backoff_and_the_last_objects_stay(api, server):
    r = watch.Reflector(api, "namespaces")
    stop = StopAfter(4)
    r.run(lambda: None, stop)
    assert stop.waits == [watch.BACKOFF * 2**i for i in range(4)]
    assert sorted(r.items) == ["/app", "/other"] and r.errors == 4


def test_a_rotated_token_is_read_again_after_a_401(api, server, tmp_path):
    api.token()
    service_account(tmp_path, token="token-2")
    server.tokens = {"token-2"}
    kubeapi.read_json(api.get("/api/v1/namespaces", {}))
    assert [t for _, _, t in server.requests] == ["token-1", "token-2"]


def test_the_token_is_read_again_after_its_ttl(tmp_path):
    now = [0.0]
    service_account(tmp_path)
    api = kubeapi.InCluster("127.0.0.1", 1, str(tmp_path.joinpath(*kubeapi.SA_DIR)), clock=lambda: now[0])
    assert api.token() == "token-1"
    service_account(tmp_path, token="token-2")
    now[0] = kubeapi.TOKEN_TTL - 1
    assert api.token() == "token-1"
    now[0] = kubeapi.TOKEN_TTL
    assert api.token() == "token-2"


def test_a_server_the_cluster_ca_did_not_sign_is_refused(api, server, tmp_path):
    service_account(tmp_path, ca="other-ca.crt")
    fresh = kubeapi.InCluster(api.host, api.port, api.account)
    with pytest.raises(kubeapi.ApiError, match="CERTIFICATE_VERIFY_FAILED"):
        fresh.get("/api/v1/namespaces", {})
    assert server.requests == []


def test_a_token_that_is_a_link_a_user_planted_is_refused(api, tmp_path):
    if os.geteuid() != 0:
        pytest.skip("needs root: the file must belong to another user")
    account = Path(api.account)
    elsewhere = tmp_path / "planted"
    elsewhere.write_text("stolen")
    os.chown(elsewhere, 1000, 1000)
    (account / "token").unlink()
    (account / "token").symlink_to(elsewhere)
    os.lchown(account / "token", 1000, 1000)
    with pytest.raises(kubeapi.ApiError, match="cannot read"):
        api.token(fresh=True)


def test_an_event_larger_than_the_cap_ends_the_watch(api, server, monkeypatch):
    monkeypatch.setattr(kubeapi, "MAX_EVENT", 256)
    r = watch.Reflector(api, "pods")
    r.relist()
    with pytest.raises(kubeapi.ApiError, match="larger than"):
        r.watch(lambda: None)


def test_5000_pods_are_kept_in_a_few_megabytes():
    pod = json.loads(json.dumps(STREAM["lists"]["pods"][0]["items"][0]))
    tracemalloc.start()
    items = {}
    for i in range(5000):  # each as the API server sends it, then slimmed (slim copies what it keeps)
        pod["metadata"]["name"] = f"p{i}"
        pod["status"]["podIP"] = f"10.{i >> 16 & 255}.{i >> 8 & 255}.{i & 255}"
        items[watch.key(pod)] = watch.slim_pod(pod)
    used = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    assert used < 12 << 20, used


def test_a_bookmark_moves_the_resource_version_and_changes_nothing():
    items = {"app/db": {"x": 1}}
    bookmark = STREAM["watches"]["pods"][0][4]
    assert bookmark["type"] == "BOOKMARK"
    assert watch.apply_event(items, bookmark, watch.slim_pod) == ("120", False) and items == {"app/db": {"x": 1}}


def test_an_error_event_other_than_410_is_an_api_error_not_gone():
    event = {"type": "ERROR", "object": {"kind": "Status", "code": 500, "message": "internal"}}
    with pytest.raises(kubeapi.ApiError) as err:
        watch.apply_event({}, event, watch.slim_pod)
    assert type(err.value) is kubeapi.ApiError and err.value.status == 500
