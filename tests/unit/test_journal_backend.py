"""libhns.journal and libhns.backend, over a small in-test RawHns."""

from __future__ import annotations

import json
import multiprocessing
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from libhns import errors
from libhns.backend import open_backend
from libhns.ctypes_backend import CtypesBackend
from libhns.journal import JournalBackend

NET = "9B219D6E-6847-43FC-8258-81DB4B63C09C"
NET_UPPER = "9B219D6E-6847-43FC-8258-81DB4B63C09C"
EP = "0A1B2C3D-0000-4000-8000-00000000000E"


class Recorder:
    """A RawHns that answers from a script and remembers what it was asked."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...]]] = []
        self.fail: errors.HnsError | None = None
        self.next_handle = 100

    def _do(self, name: str, *args: Any) -> None:
        self.calls.append((name, args))
        if self.fail is not None:
            failure, self.fail = self.fail, None
            raise failure

    def _handle(self) -> int:
        self.next_handle += 1
        return self.next_handle

    def hcn_enumerate(self, kind: str, query: str) -> str:
        self._do("hcn_enumerate", kind, query)
        return f'["{NET_UPPER}"]'

    def hcn_create(self, kind: str, id: str | None, settings: str, network: Any = None) -> int:
        self._do("hcn_create", kind, id, settings, network)
        return self._handle()

    def hcn_open(self, kind: str, id: str) -> int:
        self._do("hcn_open", kind, id)
        return self._handle()

    def hcn_modify(self, kind: str, handle: Any, settings: str) -> None:
        self._do("hcn_modify", kind, handle, settings)

    def hcn_query(self, kind: str, handle: Any, query: str) -> str:
        self._do("hcn_query", kind, handle, query)
        return f'{{"id":"{EP.lower()}","Name":"ep"}}' if kind == "Endpoint" else "not json"

    def hcn_delete(self, kind: str, id: str) -> None:
        self._do("hcn_delete", kind, id)

    def hcn_close(self, kind: str, handle: Any) -> None:
        self._do("hcn_close", kind, handle)

    def hns_call(self, method: str, path: str, request: str) -> str:
        self._do("hns_call", method, path, request)
        return '{"Success":true,"Output":{"Major":13,"Minor":2}}'

    def hcs_open_compute_system(self, id: str) -> int:
        self._do("hcs_open_compute_system", id)
        return self._handle()

    def hcs_modify_compute_system(self, handle: Any, configuration: str) -> None:
        self._do("hcs_modify_compute_system", handle, configuration)

    def hcs_close_compute_system(self, handle: Any) -> None:
        self._do("hcs_close_compute_system", handle)


@pytest.fixture
def inner() -> Recorder:
    return Recorder()


@pytest.fixture
def journal_path(tmp_path: Path) -> Path:
    return tmp_path / "hns.jsonl"


@pytest.fixture
def journal(inner: Recorder, journal_path: Path) -> JournalBackend:
    return JournalBackend(inner, journal_path)


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


KEYS = {"ts", "api", "op", "method", "path", "id", "request", "hresult", "response", "ms"}


def test_enumerate_line(journal: JournalBackend, inner: Recorder, journal_path: Path) -> None:
    query = '{"SchemaVersion":{"Major":2,"Minor":0},"Filter":"{\\"Name\\":\\"cbr0\\"}"}'
    assert journal.hcn_enumerate("Network", query) == f'["{NET_UPPER}"]'
    assert inner.calls == [("hcn_enumerate", ("Network", query))]
    (line,) = lines(journal_path)
    assert set(line) == KEYS
    assert line["api"] == "v2" and line["op"] == "HcnEnumerateNetworks"
    assert line["request"] == {"SchemaVersion": {"Major": 2, "Minor": 0}, "Filter": '{"Name":"cbr0"}'}
    assert line["response"] == [NET_UPPER]
    assert line["hresult"] == "0x00000000"
    assert (line["method"], line["path"], line["id"]) == (None, None, None)
    assert isinstance(line["ms"], float) and line["ms"] >= 0
    assert line["ts"].endswith("+00:00")


def test_handle_calls_carry_the_id_of_the_opened_object(journal: JournalBackend, journal_path: Path) -> None:
    handle = journal.hcn_open("Network", NET)
    journal.hcn_modify("Network", handle, '{"ResourceType":"Policy"}')
    assert journal.hcn_query("Network", handle, "") == "not json"
    journal.hcn_close("Network", handle)
    journal.hcn_delete("Network", NET)
    got = [(line["op"], line["id"], line["request"], line["response"]) for line in lines(journal_path)]
    assert got == [
        ("HcnOpenNetwork", NET_UPPER, None, None),
        ("HcnModifyNetwork", NET_UPPER, {"ResourceType": "Policy"}, None),
        ("HcnQueryNetworkProperties", NET_UPPER, None, "not json"),
        ("HcnCloseNetwork", NET_UPPER, None, None),
        ("HcnDeleteNetwork", NET_UPPER, None, None),
    ]


def test_create_with_guid_null_learns_the_id_from_the_query(
    journal: JournalBackend, inner: Recorder, journal_path: Path
) -> None:
    network = journal.hcn_open("Network", NET)
    endpoint = journal.hcn_create("Endpoint", None, '{"Name":"ep"}', network)
    assert inner.calls[-1] == ("hcn_create", ("Endpoint", None, '{"Name":"ep"}', network))
    journal.hcn_query("Endpoint", endpoint, "")
    journal.hcn_close("Endpoint", endpoint)
    ops = [(line["op"], line["id"]) for line in lines(journal_path)]
    assert ops[1:] == [("HcnCreateEndpoint", None), ("HcnQueryEndpointProperties", None), ("HcnCloseEndpoint", EP)]


def test_failure_is_journaled_then_reraised(journal: JournalBackend, inner: Recorder, journal_path: Path) -> None:
    inner.fail = errors.from_hresult("HcnCreateEndpoint", 0x803B000D)
    with pytest.raises(errors.InvalidPolicy):
        journal.hcn_create("Network", NET, '{"Policies":[{"Type":"Bogus"}]}')
    (line,) = lines(journal_path)
    assert line["hresult"] == "0x803B000D" and line["response"] is None
    assert line["id"] == NET_UPPER and line["request"] == {"Policies": [{"Type": "Bogus"}]}
    assert "HCN_E_INVALID_POLICY" in line["error"]


def test_non_hns_failure_is_journaled_without_hresult(
    journal: JournalBackend, inner: Recorder, journal_path: Path
) -> None:
    inner.fail = OSError("computenetwork.dll missing")  # type: ignore[assignment]
    with pytest.raises(OSError):
        journal.hcn_delete("Endpoint", NET)
    (line,) = lines(journal_path)
    assert line["hresult"] is None and "computenetwork.dll" in line["error"]


def test_hns_call_line(journal: JournalBackend, journal_path: Path) -> None:
    journal.hns_call("GET", "/globals/version", "")
    journal.hns_call("POST", f"/endpoints/{EP.lower()}/attach", '{"ContainerId":"abc"}')
    first, second = lines(journal_path)
    assert (first["api"], first["op"], first["method"], first["path"]) == ("v1", "HNSCall", "GET", "/globals/version")
    assert first["request"] is None and first["id"] is None
    assert first["response"] == {"Success": True, "Output": {"Major": 13, "Minor": 2}}
    assert second["id"] == EP and second["request"] == {"ContainerId": "abc"}


def test_hcs_lines(journal: JournalBackend, journal_path: Path) -> None:
    handle = journal.hcs_open_compute_system("c0ffee")
    journal.hcs_modify_compute_system(handle, '{"RequestType":"Add"}')
    journal.hcs_close_compute_system(handle)
    got = [(line["api"], line["op"], line["id"]) for line in lines(journal_path)]
    assert got == [
        ("v1", "HcsOpenComputeSystem", "c0ffee"),
        ("v1", "HcsModifyComputeSystem", "c0ffee"),
        ("v1", "HcsCloseComputeSystem", "c0ffee"),
    ]


def test_unwritable_journal_does_not_fail_the_call(
    inner: Recorder, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    journal = JournalBackend(inner, tmp_path / "missing-dir" / "hns.jsonl")
    assert journal.hns_call("GET", "/globals/version", "").startswith('{"Success":true')
    assert "cannot append to HNS journal" in caplog.text


def test_nothing_is_written_to_stdout(journal: JournalBackend, capsys: pytest.CaptureFixture[str]) -> None:
    journal.hns_call("GET", "/globals/version", "")
    journal.hcn_enumerate("Endpoint", "")
    assert capsys.readouterr().out == ""


def _append_many(path: str, worker: int) -> None:
    journal = JournalBackend(Recorder(), path)
    big = json.dumps({"Name": f"w{worker}", "Pad": "x" * 6000})
    for _ in range(50):
        journal.hcn_create("Network", None, big)


def test_concurrent_processes_write_whole_lines(journal_path: Path) -> None:
    ctx = multiprocessing.get_context("spawn" if sys.platform == "win32" else "fork")
    procs = [ctx.Process(target=_append_many, args=(str(journal_path), n)) for n in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    got = lines(journal_path)  # every line parses: no interleaving
    assert len(got) == 200
    assert {line["request"]["Name"] for line in got} == {"w0", "w1", "w2", "w3"}


# --- open_backend ---------------------------------------------------------------------------------
class FakeSimulator:
    def __init__(self, env: Any) -> None:
        self.env = env

    @classmethod
    def from_env(cls, env: Any) -> FakeSimulator:
        return cls(env)


@pytest.fixture
def fake_sim(monkeypatch: pytest.MonkeyPatch) -> type[FakeSimulator]:
    module = types.ModuleType("libhns.sim")
    module.Simulator = FakeSimulator  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "libhns.sim", module)
    return FakeSimulator


def test_backend_hcn_is_lazy_ctypes() -> None:
    assert isinstance(open_backend({"LIBHNS_BACKEND": "hcn"}), CtypesBackend)


def test_backend_sim_gets_the_env(fake_sim: type[FakeSimulator]) -> None:
    env = {"LIBHNS_BACKEND": "sim", "LIBHNS_SIM_DIR": "/x"}
    backend = open_backend(env)
    assert isinstance(backend, fake_sim) and backend.env is env


def test_backend_default_depends_on_platform(fake_sim: type[FakeSimulator], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "platform", "linux")
    assert isinstance(open_backend({}), fake_sim)
    monkeypatch.setattr(sys, "platform", "win32")
    assert isinstance(open_backend({}), CtypesBackend)


def test_backend_unknown_value_names_variable_and_choices() -> None:
    with pytest.raises(ValueError) as caught:
        open_backend({"LIBHNS_BACKEND": "docker"})
    assert "LIBHNS_BACKEND" in str(caught.value) and "'docker'" in str(caught.value)
    assert "hcn" in str(caught.value) and "sim" in str(caught.value)


def test_backend_journal_wraps(fake_sim: type[FakeSimulator], tmp_path: Path) -> None:
    backend = open_backend({"LIBHNS_BACKEND": "sim", "LIBHNS_JOURNAL": str(tmp_path / "j")})
    assert isinstance(backend, JournalBackend) and isinstance(backend.inner, fake_sim)
    assert isinstance(open_backend({"LIBHNS_BACKEND": "hcn", "LIBHNS_JOURNAL": ""}), CtypesBackend)
