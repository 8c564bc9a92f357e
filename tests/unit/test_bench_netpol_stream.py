"""bench/netpol_stream.py's generated list+watch stream has the shapes a real kube-apiserver
sends (tests/data/netpol/recorded.json, taken by bench/record_netpol_stream.py): the pages'
fields, the objects' fields per kind, the event types with bookmarks, resourceVersions as
numbers in text that grow; and the agent's watch reads the recording itself, served as the API
server sent it."""

from __future__ import annotations

import json
import sys
from functools import partial
from pathlib import Path

import pytest

from fakeapiserver import FakeApiServer, service_account
from tools.wincni.netpol import kubeapi, watch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
import netpol_stream

RECORDED = json.loads((ROOT / "tests" / "data" / "netpol" / "recorded.json").read_text())


def _shape(obj: dict) -> set[str]:
    """``netpol_stream.shape`` less a policy's spec: what policies say is the user's (the
    translation's mix), not the API server's."""
    found = netpol_stream.shape(obj)
    if obj.get("kind") == "NetworkPolicy" or "podSelector" in (obj.get("spec") or {}):
        found = {p for p in found if not p.startswith("spec.")}
    return found


@pytest.fixture(scope="module")
def generated() -> list[dict]:
    return netpol_stream.lines()


def _events(kind: str, source: str, generated: list[dict]) -> list[dict]:
    if source == "recorded":
        return [e for w in RECORDED["watches"][kind] for e in w]
    return [line["event"] for line in generated if line["kind"] == kind and "event" in line]


def _pages(kind: str, source: str, generated: list[dict]) -> list[dict]:
    if source == "recorded":
        return RECORDED["lists"][kind]
    return [line["page"] for line in generated if line["kind"] == kind and "page" in line]


@pytest.mark.parametrize("kind", list(netpol_stream.KINDS))
def test_the_generated_lists_have_the_recorded_shape(kind, generated):
    real, ours = _pages(kind, "recorded", generated), _pages(kind, "generated", generated)
    assert {(p["kind"], p["apiVersion"]) for p in ours} == {(p["kind"], p["apiVersion"]) for p in real}
    assert {frozenset(p) for p in ours} == {frozenset(p) for p in real}
    metas = {frozenset(p["metadata"]) for p in ours}
    assert metas <= {frozenset(p["metadata"]) for p in real}  # a page with continue, the last without
    assert len(metas) == 2 or len(ours) == 1, metas
    items = [_shape(i) for p in ours for i in p["items"]]
    known = set().union(*(_shape(i) for p in real for i in p["items"]))
    assert set().union(*items) <= known, set().union(*items) - known  # no field the API server does not send
    for path in ("metadata.name", "metadata.uid", "metadata.resourceVersion", "metadata.creationTimestamp"):
        assert all(path in i for i in items), path


def test_the_generated_events_have_the_recorded_shape(generated):
    real = [e for kind in netpol_stream.KINDS for e in _events(kind, "recorded", generated)]
    ours = [e for kind in netpol_stream.KINDS for e in _events(kind, "generated", generated)]
    assert {frozenset(e) for e in ours} == {frozenset(e) for e in real} == {frozenset({"type", "object"})}
    assert {e["type"] for e in ours} <= {e["type"] for e in real} and "BOOKMARK" in {e["type"] for e in ours}
    marks = [netpol_stream.shape(e["object"]) for e in ours if e["type"] == "BOOKMARK"]
    assert marks and all(
        m in [netpol_stream.shape(e["object"]) for e in real if e["type"] == "BOOKMARK"] for m in marks
    )
    known = set().union(*(_shape(e["object"]) for e in real if e["type"] != "BOOKMARK"))
    for e in ours:
        if e["type"] != "BOOKMARK":
            assert {"kind", "apiVersion"} <= set(e["object"]) and _shape(e["object"]) <= known, (
                _shape(e["object"]) - known
            )


@pytest.mark.parametrize("source", ["recorded", "generated"])
def test_resource_versions_are_numbers_in_text_that_grow(source, generated):
    for kind in netpol_stream.KINDS:
        listed = int(_pages(kind, source, generated)[-1]["metadata"]["resourceVersion"])
        seen = [int(e["object"]["metadata"]["resourceVersion"]) for e in _events(kind, source, generated)]
        assert all(v > listed for v in seen) and seen == sorted(seen), (kind, listed, seen)
        assert seen or (source == "generated" and kind == "namespaces")  # the bench changes no namespace


def test_the_agent_reads_the_recording_as_the_api_server_sent_it(tmp_path):
    server = FakeApiServer(RECORDED)
    service_account(tmp_path)
    api = kubeapi.InCluster("127.0.0.1", server.server_address[1], str(tmp_path.joinpath(*kubeapi.SA_DIR)))
    try:
        for kind in netpol_stream.KINDS:
            r = watch.Reflector(api, kind)
            r.relist()
            changes: list[int] = []
            assert r.watch(partial(changes.append, 1)) == len(RECORDED["watches"][kind][0])
            last = RECORDED["watches"][kind][0][-1]["object"]["metadata"]["resourceVersion"]
            assert r.version == last and changes, kind  # the bookmark moved it on
            assert "app/db" in r.items or "/app" in r.items, (kind, sorted(r.items))
    finally:
        server.shutdown()
