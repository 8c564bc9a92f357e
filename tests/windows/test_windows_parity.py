"""The parity suite under Wine: the operator's self-test as shipped, the frozen ``wincni.exe
selftest`` of the package, through ``ctypes.WinDLL`` and the fake DLLs to the simulator.

That reaches the same simulator the reference run does, so this run proves the marshalling (GUIDs
by pointer, handles, CoTaskMem strings, the ErrorRecord), not HNS, and its report says so. It is
the operator's dry run (the ``fake`` backend): a report and the transcripts in an admin-only
folder, and nothing else left behind, in HNS or on the disk. The real-HNS backend refuses here,
told by the marker the fake DLLs answer.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from tools.wincni.selftest.options import OK, PREFIX, REFUSED
from tools.wincni.selftest.scenarios import SCENARIOS
from winenode import WineNode

OUT = r"C:\selftest"
#: The self-test as the operator runs it: the package's own ``wincni.exe``, as shipped (with
#: ``--out OUT`` for the dry run: ``wincni.exe selftest --backend fake --out C:\selftest``).
DRIVER = ("selftest", "--backend")


def _selftest(node: WineNode, backend: str, out: str | None) -> tuple[int, str, str, float]:
    start = time.perf_counter()
    proc = node.wine(node.exe("wincni"), *DRIVER, backend, *(("--out", out) if out else ()))
    return proc.returncode, proc.stdout.decode(), proc.stderr.decode(), time.perf_counter() - start


def _hns(node: WineNode) -> dict:
    """What HNS holds, every kind that holds anything (the simulator's counters left out: they
    only count; no state yet is nothing held)."""
    path = Path(node.env["LIBHNS_SIM_DIR"]) / "state.json"
    state = json.loads(path.read_text()) if path.exists() else {}
    return {kind: objects for kind, objects in state.items() if kind != "seq" and objects}


def _disk(node: WineNode) -> set[str]:
    """Every file and folder of drive C: but Wine's own (``windows``) and the report's folder."""
    found = set()
    for folder, dirs, files in os.walk(node.drive_c):
        rel = os.path.relpath(folder, node.drive_c)
        dirs[:] = [d for d in dirs if rel != "." or d not in ("windows", "selftest")]
        found |= {os.path.join(rel, name) for name in dirs + files}
    return found


@pytest.fixture(scope="module")
def dry_run(node: WineNode, timings: dict) -> dict:
    before = (_hns(node), _disk(node))
    status, out, err, seconds = _selftest(node, "fake", OUT)
    timings.setdefault("budget_lines", []).append(f"Wine: the self-test's dry run (fake DLLs) took {seconds:.1f} s")
    out = out.replace("\r\n", "\n")  # a Windows process's text stdout
    return {"status": status, "out": out, "err": err, "before": before, "after": (_hns(node), _disk(node))}


def test_the_dry_run_passes_every_scenario_as_the_simulator_answers(dry_run: dict, timings: dict) -> None:
    assert dry_run["status"] == OK, dry_run["out"] + dry_run["err"]
    text = dry_run["out"]
    assert text.startswith("wincni self-test on the fake backend: the ctypes path")
    assert "this proves the marshalling, not HNS" in text.splitlines()[0]
    counts = next(line for line in text.splitlines() if " scenarios: " in line)
    assert counts.startswith(f"{len(SCENARIOS)} scenarios: {len(SCENARIOS)} passed, 0 failed, 0 not run; ")
    assert counts.endswith("; 0 answered otherwise than the simulator"), counts
    timings.setdefault("budget_lines", []).append(f"Wine: parity through the fake DLLs: {counts}")


def test_the_dry_run_writes_a_report_and_the_transcripts(node: WineNode, dry_run: dict) -> None:
    out = node.path(OUT)
    assert (out / "report.txt").read_text(encoding="utf-8") == dry_run["out"]
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert report["backend"] == "fake" and report["node"]["system"] == "Windows"
    for scenario in SCENARIOS:
        transcript = json.loads((out / "transcripts" / f"{scenario.name}.json").read_text(encoding="utf-8"))
        assert transcript["backend"] == "fake" and transcript["calls"], scenario.name
        assert all(c["hresult"].startswith("0x") for c in transcript["calls"])


def test_the_dry_run_leaves_nothing_behind(node: WineNode, dry_run: dict) -> None:
    (hns_before, disk_before), (hns_after, disk_after) = dry_run["before"], dry_run["after"]
    assert hns_after == hns_before
    assert disk_after == disk_before, sorted(disk_after ^ disk_before)
    assert PREFIX not in json.dumps(hns_after)


def test_the_real_hns_backend_refuses_the_fake_dlls(node: WineNode) -> None:
    status, out, err, _ = _selftest(node, "hcn", None)
    assert status == REFUSED, out + err
    said = [line for line in err.splitlines() if line.startswith("wincni selftest: ")]  # a refusal is stderr's
    assert out == "" and len(said) == 1, out + err
    assert said[0].startswith("wincni selftest: computenetwork.dll here is not HNS but a stand-in (wincni fake HNS ")


def test_a_shared_out_folder_is_refused_before_hns_and_keeps_its_access(node: WineNode) -> None:
    """``--out`` naming a folder everyone may write (a DACL granting Everyone write, as Wine shows
    0777) is refused in one line, exit status 2, before HNS is touched; the folder is not made
    admin-only (``safefs.writable_by_others`` through ``winhandle.writers`` under Windows)."""
    shared = node.path(r"C:\selftest-shared")
    shared.mkdir()
    os.chmod(shared, 0o777)
    status, out, err, _ = _selftest(node, "fake", r"C:\selftest-shared")
    assert (status, out) == (REFUSED, ""), out + err
    assert "may be written by Everyone" in err and "Traceback" not in err, err
    assert os.stat(shared).st_mode & 0o777 == 0o777 and os.listdir(shared) == []
