"""The parity suite (tools/wincni/selftest) on the backend ``LIBHNS_BACKEND`` names (``make test``:
the simulator; ``make test-realhns``: the node's real HNS), its safety rules (nothing left
behind, nothing touched that it did not make, an earlier run's leftovers stop it), the parity
report, and the transcripts of tests/data/parity replayed on the simulator."""

from __future__ import annotations

import json
import os
import platform
import sys
from pathlib import Path

import pytest

from libhns.errors import HnsError
from libhns.sim import Simulator
from paritybackend import context, parity_options
from testdata import PARITY
from tools.wincni.selftest import SelftestOptions, SelftestOutcome, replay, run
from tools.wincni.selftest.options import DIFFERENT, LEFTOVERS, OK, PREFIX, REFUSED
from tools.wincni.selftest.scenarios import BY_NAME, SCENARIOS


class Node:
    """The node's own facts, as a test decides them."""

    def __init__(self, connection: str | None = "Ethernet", runtimes: tuple[str, ...] = ()) -> None:
        self.connection, self._runtimes = connection, list(runtimes)

    def os(self) -> dict:
        return {"system": "TestOS", "CurrentBuild": "20348", "UBR": 2849}

    def connection_adapter(self) -> str | None:
        return self.connection

    def runtimes(self) -> list[str]:
        return self._runtimes


def _run(options: SelftestOptions, tmp_path: Path, raw=None, **kw) -> SelftestOutcome:
    """``run`` with a test's node facts, backend and scratch folder."""
    return run(options, context(), node=Node(**kw), raw=raw, scratch=str(tmp_path / "scratch"))


def test_the_suite_passes_on_the_backend(tmp_path: Path, summary: list[str]) -> None:
    options = parity_options()
    outcome = run(options, context(), scratch=str(tmp_path))
    report = outcome.report
    summary.append(
        f"parity ({options.backend}): {len(report.scenarios)} scenarios ({report.count('passed')} passed, "
        f"{report.count('not run')} not run), {report.calls} HNS calls, "
        f"{len(report.differing)} answering otherwise than the simulator"
    )
    fixtures = os.environ.get("WINCNI_PARITY_FIXTURES")
    if fixtures:  # tests/data/parity's README: how a run's transcripts become the fixtures
        for r in report.scenarios:
            if r.transcript is not None:
                (Path(fixtures) / f"{r.name}.json").write_text(json.dumps(r.transcript, indent=1) + "\n")
    assert outcome.status == OK, outcome.text
    assert report.leftovers == [] and report.count("failed") == 0, outcome.text
    if options.backend == "sim":
        assert [r.name for r in report.scenarios if r.status == "passed"] == [s.name for s in SCENARIOS]
        assert all(t["status"] == "not run" for t in report.traffic), report.traffic


def test_the_report_and_every_transcript_are_written(tmp_path: Path) -> None:
    out = tmp_path / "out"
    outcome = _run(SelftestOptions(out=str(out)), tmp_path)
    assert outcome.status == OK
    assert (out / "report.txt").read_text() == outcome.text
    doc = json.loads((out / "report.json").read_text())
    assert [s["name"] for s in doc["scenarios"]] == [s.name for s in SCENARIOS]
    for scenario in SCENARIOS:
        for folder in ("transcripts", "simulator"):
            transcript = json.loads((out / folder / f"{scenario.name}.json").read_text())
            assert transcript["scenario"] == scenario.name and transcript["calls"], (folder, scenario.name)
            assert all("hresult" in call and "op" in call for call in transcript["calls"])
    assert "traffic checks:" in outcome.text and "passed: a flow" not in outcome.text


def test_what_hns_may_refuse_is_asked_and_recorded(tmp_path: Path) -> None:
    outcome = _run(SelftestOptions(scenarios=("refusals",)), tmp_path)
    calls = outcome.report.scenarios[0].transcript["calls"]
    creates = [(c["op"], c["hresult"]) for c in calls if c["op"].startswith("HcnCreate")]
    assert creates == [
        ("HcnCreateNetwork", "0x00000000"),
        ("HcnCreateEndpoint", "0x803B000D"),  # ACL Action "allow": HNS's enums are case-sensitive
        ("HcnCreateEndpoint", "0x00000000"),  # "Any" as an address: the simulator takes it (real HNS?)
        ("HcnCreateEndpoint", "0x803B002F"),  # an address outside the network's subnet
        ("HcnCreateNetwork", "0x803B0010"),  # a name already taken
    ]
    assert outcome.status == OK and outcome.report.leftovers == []


class _Stopping(Simulator):
    """HNS failing the second load balancer a scenario makes."""

    def __init__(self, folder: Path) -> None:
        super().__init__(folder, faults="HcnCreateLoadBalancer#2=0x80070005")


def test_a_scenario_that_stops_midway_removes_what_it_made(tmp_path: Path) -> None:
    sim = _Stopping(tmp_path / "hns")
    outcome = _run(SelftestOptions(scenarios=("loadbalancer",)), tmp_path, raw=lambda: sim)
    result = outcome.report.scenarios[0]
    assert result.status == "failed" and outcome.status == DIFFERENT
    assert any("refused what the scenario needs" in c["check"] and not c["ok"] for c in result.checks)
    assert outcome.report.leftovers == []
    assert json.loads(sim.hns_call("GET", "/networks/", ""))["Output"] == []
    assert json.loads(sim.hns_call("GET", "/endpoints/", ""))["Output"] == []
    assert json.loads(sim.hns_call("GET", "/policylists/", ""))["Output"] == []


class _Sticky(Simulator):
    """An HNS that answers a network delete but keeps the network."""

    def hcn_delete(self, kind: str, id: str) -> None:
        if kind != "Network":
            super().hcn_delete(kind, id)


def test_what_could_not_be_removed_is_reported_as_left_behind(tmp_path: Path) -> None:
    sim = _Sticky(tmp_path / "hns")
    outcome = _run(SelftestOptions(scenarios=("network-l2bridge",)), tmp_path, raw=lambda: sim)
    assert outcome.status == LEFTOVERS
    assert [line.split(" (")[0] for line in outcome.report.leftovers] == [f"network {PREFIX}l2bridge"]
    assert f"left in HNS after the run: network {PREFIX}l2bridge" in outcome.text


def test_an_earlier_run_s_leftovers_stop_the_run_and_are_not_touched(tmp_path: Path) -> None:
    sim = Simulator(tmp_path / "hns")
    sim.hns_call("POST", "/networks/", json.dumps({"Name": f"{PREFIX}l2bridge", "Type": "L2Bridge"}))
    outcome = _run(SelftestOptions(), tmp_path, raw=lambda: sim)
    assert outcome.status == LEFTOVERS and outcome.report is None
    assert outcome.text.startswith(f"wincni selftest: HNS already holds objects named {PREFIX}*")
    assert len(outcome.text.splitlines()) == 1
    names = [n["Name"] for n in json.loads(sim.hns_call("GET", "/networks/", ""))["Output"]]
    assert names == [f"{PREFIX}l2bridge"]


def test_a_network_someone_else_made_is_never_touched(tmp_path: Path) -> None:
    sim = Simulator(tmp_path / "hns")
    theirs = json.loads(sim.hns_call("POST", "/networks/", json.dumps({"Name": "cbr0", "Type": "L2Bridge"})))["Output"]
    outcome = _run(SelftestOptions(), tmp_path, raw=lambda: sim)
    assert outcome.status == OK
    assert [n["ID"] for n in json.loads(sim.hns_call("GET", "/networks/", ""))["Output"]] == [theirs["ID"]]


class _Lowercasing(Simulator):
    """HNS answering an L2Bridge network's type in lower case through HCN."""

    def hcn_query(self, kind: str, handle, query: str) -> str:
        return super().hcn_query(kind, handle, query).replace('"Type":"L2Bridge"', '"Type":"l2bridge"')


def test_an_answer_that_differs_is_reported_field_by_field(tmp_path: Path) -> None:
    sim = _Lowercasing(tmp_path / "hns")
    outcome = _run(SelftestOptions(scenarios=("network-l2bridge",)), tmp_path, raw=lambda: sim)
    assert outcome.status == DIFFERENT
    (diff, *_) = outcome.report.scenarios[0].differences
    assert (diff.op, diff.field, diff.simulator, diff.backend) == (
        "HcnQueryNetworkProperties",
        "response.Type",
        "L2Bridge",
        "l2bridge",
    )
    assert "call 2 HcnQueryNetworkProperties: response.Type: simulator 'L2Bridge', sim 'l2bridge'" in outcome.text


@pytest.mark.parametrize(
    "options,node,why",
    [
        (SelftestOptions(backend="hcn"), Node(), "binds a network to a host adapter: name one the node can spare"),
        (SelftestOptions(backend="hcn", adapter="ethernet"), Node(), "Ethernet carries this machine's connection"),
        (SelftestOptions(backend="hcn", adapter="Spare"), Node(connection=None), "which adapter carries"),
    ],
)
def test_on_real_hns_a_network_is_bound_only_to_an_adapter_the_operator_named(options, node, why) -> None:
    from tools.wincni.selftest import _adapter

    adapter, said = _adapter(options, node)
    assert adapter is None and why in said.replace("ethernet", "Ethernet")


def test_the_connected_adapter_is_used_when_the_operator_says_so() -> None:
    from tools.wincni.selftest import _adapter

    options = SelftestOptions(backend="hcn", adapter="Ethernet", allow_connected_adapter=True)
    assert _adapter(options, Node()) == ("Ethernet", "")
    assert _adapter(SelftestOptions(backend="hcn", adapter="Spare"), Node()) == ("Spare", "")


@pytest.mark.parametrize("backend", ["hcn", "fake"])
def test_off_windows_the_dll_backends_refuse_in_one_line(tmp_path: Path, backend: str) -> None:
    outcome = run(SelftestOptions(backend=backend), context(platform="linux"))
    assert outcome.status == REFUSED and outcome.report is None
    assert outcome.text == (
        f"wincni selftest: the {backend} backend calls computenetwork.dll, which exists only on Windows "
        "(this is linux); use the sim backend here\n"
    )


def test_an_unknown_scenario_or_backend_or_an_odd_adapter_name_is_refused(tmp_path: Path) -> None:
    assert _run(SelftestOptions(scenarios=("nope",)), tmp_path).status == REFUSED
    for adapter in ("", "x" * 257, "Ethernet\n2"):
        outcome = _run(SelftestOptions(adapter=adapter), tmp_path)
        assert outcome.status == REFUSED and len(outcome.text.splitlines()) == 1, adapter
    outcome = _run(SelftestOptions(backend="real"), tmp_path)
    assert (outcome.status, outcome.text) == (
        REFUSED,
        "wincni selftest: no backend 'real': choose from sim, fake, hcn\n",
    )


def test_traffic_checks_are_not_run_and_say_why() -> None:
    from tools.wincni.selftest.report import TRAFFIC_CHECKS, traffic_checks

    for backend, runtimes, why in [
        ("sim", [], "the sim backend makes no real endpoints"),
        ("hcn", [], "no container runtime on this node"),
        ("hcn", ["containerd"], "a container runtime is here (containerd)"),
    ]:
        checks = traffic_checks(backend, runtimes)
        assert [c["check"] for c in checks] == list(TRAFFIC_CHECKS)
        assert all(c["status"] == "not run" and c["why"].startswith(why) for c in checks)


FIXTURES = sorted(PARITY.glob("*.json"))


def test_every_scenario_has_a_transcript_to_replay() -> None:
    assert sorted(p.stem for p in FIXTURES) == sorted(BY_NAME)


@pytest.mark.parametrize("path", FIXTURES, ids=[p.stem for p in FIXTURES])
def test_a_recorded_transcript_replays_on_the_simulator(tmp_path: Path, path: Path) -> None:
    """The simulator answers each recorded call as the transcript says HNS did (tests/data/parity's
    README says whose transcripts these are)."""
    transcript = json.loads(path.read_text())
    assert all(c["ok"] for c in transcript["checks"]), transcript["checks"]
    assert replay(transcript, str(tmp_path)) == []


def test_replay_finds_an_answer_the_simulator_gives_otherwise(tmp_path: Path) -> None:
    transcript = json.loads((PARITY / "refusals.json").read_text())
    outside = next(c for c in transcript["calls"] if c.get("hresult") == "0x803B002F")
    outside["hresult"] = "0x00000000"  # as if HNS had taken an address outside the subnet
    (diff,) = [d for d in replay(transcript, str(tmp_path)) if d.field == "hresult"]
    assert (diff.simulator, diff.backend) == ("0x803B002F", "0x00000000")


def test_refusals_are_hns_errors_not_tracebacks(tmp_path: Path) -> None:
    """A scenario's refusal reaches the transcript as HNS answered it (the suite's own Session)."""
    from tools.wincni.selftest.session import Session
    from tools.wincni.selftest.transcript import TranscriptRecorder

    recorder = TranscriptRecorder(Simulator(tmp_path / "hns"))
    session = Session(recorder, PREFIX, "Ethernet")
    error = session.attempt(lambda: session.create("Network", {"Name": "", "Type": "L2Bridge"}))
    assert isinstance(error, HnsError) and recorder.calls[-1]["hresult"] == "0x803B000A"


@pytest.mark.skipif(
    parity_options().backend != "sim" or sys.platform == "win32",
    reason="off Windows only: on Windows this command is the real-HNS run itself",
)
def test_the_real_hns_entry_refuses_off_windows_before_any_test() -> None:
    """``make test-realhns``'s command, here: one line saying why, exit status 2, no test run."""
    import subprocess

    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "LIBHNS_BACKEND": "hcn"}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "tests/parity", "-q", "-p", "no:cacheprovider"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert (
        f"test-realhns: the hcn backend calls computenetwork.dll, which exists only on Windows (this is {sys.platform})"
        in proc.stdout + proc.stderr
    )
    assert " passed" not in proc.stdout


def test_a_stand_in_is_told_apart_by_its_marker_only() -> None:
    from tools.wincni.selftest.backends import refusal

    assert refusal("hcn", "win32", None) is None
    assert refusal("fake", "win32", None).startswith("computenetwork.dll here answers no stand-in marker")
    assert refusal("hcn", "win32", "the stand-in").startswith(
        "computenetwork.dll here is not HNS but a stand-in (the stand-in)"
    )
    assert refusal("fake", "win32", "the stand-in") is None


def test_the_node_s_own_values_are_made_alike_before_comparing() -> None:
    """IDs by order of appearance, the management address by name, HNS-assigned MACs by presence."""
    from tools.wincni.selftest.compare import differences

    def calls(ids: tuple[str, str], management: str, mac: str) -> list[dict]:
        network = {"ID": ids[0], "Policies": [{"Type": "ProviderAddress", "Settings": {"ProviderAddress": management}}]}
        endpoint = {"ID": ids[1], "MacAddress": mac, "Policies": [{"Type": "PA", "PA": management}]}
        return [
            {"op": "HcnQueryNetworkProperties", "id": ids[0], "response": network, "hresult": "0x00000000"},
            {"op": "HNSCall", "method": "GET", "path": f"/endpoints/{ids[1]}", "response": endpoint},
        ]

    sim = calls(
        ("9B219D6E-6847-43FC-8258-81DB4B63C09C", "1C9A8E5A-686F-44C1-90D2-C8BFA7CCD52F"),
        "10.127.130.36",
        "00-15-5D-52-C0-01",
    )
    real = calls(
        ("0b2d5e1f-0000-4000-8000-000000000001", "0B2D5E1F-0000-4000-8000-000000000002"),
        "10.1.2.3",
        "00-15-5D-AA-BB-CC",
    )
    assert differences(sim, real) == []
    real[1]["response"]["Policies"][0]["PA"] = "10.9.9.9"
    (diff,) = differences(sim, real)
    assert (diff.field, diff.simulator, diff.backend) == ("response.Policies[0].PA", "<management-ip>", "10.9.9.9")


@pytest.mark.skipif(
    sys.platform == "win32", reason="a POSIX link; the Windows lane's security tests hold Windows' links"
)
def test_a_report_folder_it_may_not_write_stops_it_before_hns_is_touched(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.mkdir()
    (tmp_path / "link").symlink_to(target)
    sim = Simulator(tmp_path / "hns")
    outcome = _run(SelftestOptions(out=str(tmp_path / "link")), tmp_path, raw=lambda: sim)
    assert outcome.status == REFUSED and outcome.report is None
    assert outcome.text.startswith(f"wincni selftest: cannot write the report to {tmp_path / 'link'}: ")
    assert not (sim.directory / "state.json").exists() and not list(target.iterdir())


def test_the_live_host_off_windows() -> None:
    from tools.wincni.selftest.hostfacts import LiveHost

    host = LiveHost({"PATH": ""}, "linux")
    assert host.os()["system"] == platform.system() and "CurrentBuild" not in host.os()
    assert host.connection_adapter() is None and host.runtimes() == []


def test_an_overlay_whose_provider_address_comes_late_is_waited_for(tmp_path: Path) -> None:
    """HNS sets an Overlay's provider address after the create returns (flanneld polls): the
    scenarios wait past the transcript, so the calls stay aligned and only the early answer differs."""
    sim = Simulator(tmp_path / "hns", mgmt_delay=0.5)
    outcome = _run(SelftestOptions(scenarios=("network-overlay", "endpoint-overlay")), tmp_path, raw=lambda: sim)
    for result in outcome.report.scenarios:
        assert result.status == "passed", result.checks
        assert result.differences, result.name
        assert {(d.op, d.field.split("[")[0]) for d in result.differences} == {
            ("HcnQueryNetworkProperties", "response.Policies")
        }
        assert all(d.call == 2 for d in result.differences), result.differences


def test_where_the_calls_part_ways_one_difference_says_so_and_the_rest_is_not_compared() -> None:
    from tools.wincni.selftest.compare import differences

    sim = [
        {"op": "HcnCreateNetwork", "hresult": "0x00000000"},
        {"op": "HcnQueryNetworkProperties", "response": {"A": 1}},
    ]
    real = [{"op": "HcnCreateNetwork", "hresult": "0x803B0010"}, {"op": "HcnDeleteNetwork"}, {"op": "HcnCloseNetwork"}]
    first, parted = differences(sim, real)
    assert (first.call, first.field, first.simulator, first.backend) == (1, "hresult", "0x00000000", "0x803B0010")
    assert (parted.call, parted.field) == (2, "(the calls part ways here)")
    (longer,) = differences(sim[:1], sim)
    assert (longer.field, longer.simulator, longer.backend) == ("(one made more calls)", "1 calls", "2 calls")
