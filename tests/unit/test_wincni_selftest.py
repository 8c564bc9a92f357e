"""``wincni selftest``: the parity suite (tests/parity holds the suite itself) as a command: its
flags, its help, the report on stdout (``-o json`` through the one writer), a refusal on stderr,
and the suite's exit statuses."""

from __future__ import annotations

import io
import json
import os
import stat

import pytest

from tools.wincni.cli.main import main
from tools.wincni.selftest.options import OK, REFUSED, SelftestOptions


def _wincni(*argv: str, platform: str = "linux") -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = main(list(argv), out, err, {}, platform=platform, cwd="/")
    return status, out.getvalue(), err.getvalue()


def test_help_says_what_it_does_that_it_needs_an_elevated_shell_its_statuses_and_an_example(capsys) -> None:
    status, _, _ = _wincni("selftest", "--help")
    out = capsys.readouterr().out  # argparse's own print
    assert status == 0
    body = out.split("\n\n", 1)[1]  # after the usage
    assert body.startswith("Run the HNS parity self-test")
    assert "elevated shell" in out
    for line in (
        "0  HNS answered as the simulator does",
        "1  differences, or a failed check",
        "2  refused",
        "3  leftovers",
    ):
        assert line in out, line
    assert r"wincni selftest --backend hcn --adapter" in out
    for flag in (
        "--backend {sim,fake,hcn}",
        "--out DIR",
        "--adapter NAME",
        "--allow-connected-adapter",
        "--scenario NAME",
    ):
        assert flag in out, flag


def test_the_flags_make_the_suites_options() -> None:
    from basics.cli import parse
    from tools.wincni.cli.main import build_parser
    from tools.wincni.selftest import command

    argv = ["selftest", "--out", "C:/st", "--adapter", "Ethernet 2", "--allow-connected-adapter"]
    args = parse(build_parser("win32", "selftest"), [*argv, "--scenario", "acl-v1", "--scenario", "acl-v2"])
    assert command.options(args, None) == SelftestOptions(
        backend="hcn", out="C:/st", adapter="Ethernet 2", allow_connected_adapter=True, scenarios=("acl-v1", "acl-v2")
    )


def test_the_sim_backend_reports_on_stdout_and_passes() -> None:
    status, out, err = _wincni("selftest", "--backend", "sim", "--scenario", "namespace", "--scenario", "hns-version")
    assert status == OK, out + err
    assert out.startswith("wincni self-test on the sim backend: ")
    assert "2 scenarios: 2 passed, 0 failed, 0 not run; " in out
    assert err == "wincni selftest: namespace\nwincni selftest: hns-version\n"  # progress only


def test_json_is_the_report_document() -> None:
    status, out, _ = _wincni("selftest", "--backend", "sim", "--scenario", "namespace", "-o", "json")
    assert status == OK
    doc = json.loads(out)
    assert doc["backend"] == "sim" and [s["name"] for s in doc["scenarios"]] == ["namespace"]
    assert "transcript" not in doc["scenarios"][0]


def test_the_default_backend_is_real_hns_and_off_windows_it_refuses_on_stderr() -> None:
    status, out, err = _wincni("selftest")
    assert (status, out) == (REFUSED, "")
    assert err.startswith("wincni selftest: the hcn backend calls computenetwork.dll, which exists only on Windows")
    assert len(err.splitlines()) == 1


def test_an_unknown_scenario_is_refused_on_stderr() -> None:
    status, out, err = _wincni("selftest", "--backend", "sim", "--scenario", "nope")
    assert (status, out) == (REFUSED, "") and err.startswith("wincni selftest: no scenario 'nope'")


@pytest.mark.parametrize("mode", [0o1777, 0o2775, 0o777])
def test_a_shared_out_folder_is_refused_and_left_as_it_is(tmp_path, mode: int) -> None:
    """``--out /tmp`` must not make /tmp admin-only: the run stops before HNS, the folder's mode
    untouched, and the refusal says to name a new or an admin-only folder."""
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, mode)
    os.chown(shared, 0, 100)
    status, out, err = _wincni("selftest", "--backend", "sim", "--scenario", "namespace", "--out", str(shared))
    assert (status, out) == (REFUSED, ""), err
    assert "may be written by" in err and "name a new or an admin-only folder" in err, err
    assert stat.S_IMODE(os.stat(shared).st_mode) == mode and os.listdir(shared) == []


def test_a_new_out_folder_is_made_admin_only_and_holds_the_report(tmp_path) -> None:
    made = tmp_path / "report"
    status, out, err = _wincni("selftest", "--backend", "sim", "--scenario", "namespace", "--out", str(made))
    assert status == OK, out + err
    assert stat.S_IMODE(os.stat(made).st_mode) & 0o022 == 0 and (made / "report.json").is_file()
