"""An operator's careless inputs and odd words, one test each."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from hnsnode import Node
from plugins.cni import config
from plugins.cni.errors import INVALID_CONFIG, CniError
from test_wincni_install import install_node, package_folder
from tools import hnsctl
from tools.wincni.cli.main import main as wincni


def run_hnsctl(node: Node, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    rc = hnsctl.main(list(argv), out, err, node.env)
    return rc, out.getvalue(), err.getvalue()


def test_hnsctl_names_itself_once(tmp_path: Path) -> None:
    rc, _, err = run_hnsctl(Node(tmp_path), "endpoint", "show", "nope")
    assert rc == 1 and err == "hnsctl: endpoint 'nope': not found\n"


@pytest.mark.parametrize(
    "group, actions",
    [
        ("network", ("list", "show", "delete", "create")),
        ("endpoint", ("list", "show", "delete", "create", "acls")),
        ("namespace", ("list", "create", "show", "delete", "attach", "detach")),
        ("container", ("list", "create", "delete")),
    ],
)
def test_hnsctl_group_help_describes_every_action(capsys, group: str, actions: tuple) -> None:
    with pytest.raises(SystemExit):
        hnsctl.build_parser().parse_args([group, "--help"])
    lines = capsys.readouterr().out.split("exit status:")[0].splitlines()
    described = {line.split()[0] for line in lines if line.startswith("    ") and len(line.split()) > 1}
    assert described == set(actions), lines


@pytest.mark.parametrize(
    "argv, usage",
    [
        (["hnsctl", "network", "create"], "usage: hnsctl network create"),
        (["hnsctl", "endpoint", "list", "--bogus"], "usage: hnsctl"),
        (["wincni", "doctor", "-o", "yaml"], "usage: wincni doctor"),
        (["wincni", "doctor", "--reach", "notanip"], "usage: wincni doctor"),
        (["wincni", "install", "--bogus"], "usage: wincni install"),
        (["wincni", "reclaim", "--min-age", "-5"], "usage: wincni reclaim"),
        (["wincni", "sourcevip", "--timeout", "nan"], "usage: wincni sourcevip"),
    ],
)
def test_argument_errors_say_what_and_show_the_usage(tmp_path: Path, argv: list[str], usage: str) -> None:
    out, err = io.StringIO(), io.StringIO()
    main = hnsctl.main if argv[0] == "hnsctl" else wincni
    assert main(argv[1:], out, err, {}) == 2 and out.getvalue() == ""
    first, *rest = err.getvalue().splitlines()
    assert first.startswith(argv[0]) and rest and rest[0].startswith(usage), err.getvalue()


def test_reclaim_refuses_a_negative_age() -> None:
    err = io.StringIO()
    assert wincni(["reclaim", "--min-age", "-5"], io.StringIO(), err, {}) == 2
    assert "'-5' is not a number of seconds (0 or more)" in err.getvalue()


def test_reclaim_below_the_in_flight_age_needs_force_and_says_what_it_risks(tmp_path: Path) -> None:
    node = Node(tmp_path).bridge()
    conf_path = tmp_path / "10-bridge.conf"
    conf_path.write_text(json.dumps(node.conf()))
    argv = ["reclaim", "--cni-conf", str(conf_path), "--min-age", "0"]
    out, err = io.StringIO(), io.StringIO()
    assert wincni(argv, out, err, node.env, platform="linux", cwd=str(tmp_path)) == 2 and out.getvalue() == ""
    first, usage = err.getvalue().splitlines()[:2]
    assert first.startswith("wincni reclaim: --min-age 0 is below the in-flight age (300 s) and needs --force: ")
    assert "ADDs in flight may lose their address" in first and usage.startswith("usage: wincni reclaim")
    out, err = io.StringIO(), io.StringIO()
    assert wincni([*argv, "--force"], out, err, node.env, platform="linux", cwd=str(tmp_path)) == 0
    assert err.getvalue().startswith(
        "wincni reclaim: warning: --min-age 0 with --force: ADDs in flight may lose their address ("
    )
    err = io.StringIO()
    assert wincni(argv[:-2], io.StringIO(), err, node.env, platform="linux", cwd=str(tmp_path)) == 0
    assert err.getvalue() == ""  # the default is the in-flight age: nothing to warn of


def test_reclaim_speaks_json(tmp_path: Path) -> None:
    node = Node(tmp_path).bridge()
    conf_path = tmp_path / "10-bridge.conf"
    conf_path.write_text(json.dumps(node.conf()))
    store = node.ipam_dir / "cbr0"
    store.mkdir(parents=True)
    (store / "10.244.4.50").write_bytes(b"gone\r\neth0")
    out = io.StringIO()
    assert (
        wincni(
            [
                "reclaim",
                "--cni-conf",
                str(conf_path),
                "--min-age",
                "0",
                "--force",
                "--runtime-endpoint",
                "none",
                "-o",
                "json",
            ],
            out,
            io.StringIO(),
            node.env,
            platform="linux",
            cwd=str(tmp_path),
        )
        == 0
    )
    assert json.loads(out.getvalue()) == {
        "network": "cbr0",
        "store": str(store),
        "dryRun": False,
        "released": [{"ip": "10.244.4.50", "containerID": "gone"}],
        "removed": [],
        "deferred": 0,
        "runtime": "runtime not asked (--runtime-endpoint none): the ownership rule alone",
    }
    assert not (store / "10.244.4.50").exists()


def test_install_from_a_folder_that_does_not_exist(tmp_path: Path) -> None:
    node = install_node(tmp_path)
    done = node.install("--from", str(tmp_path / "nope"), expect=1)
    assert done["error"].startswith(f"--from {tmp_path / 'nope'} does not exist"), done


def test_install_failed_follows_its_steps_without_a_blank_line(tmp_path: Path) -> None:
    node = install_node(tmp_path)
    table = node.install("--from", str(tmp_path / "nope"), expect=1, output="table")
    assert table.startswith("FAILED: --from ") and "\n\n" not in table, table


def test_a_second_uninstall_says_no_build_is_installed(tmp_path: Path) -> None:
    node = install_node(tmp_path)
    node.install("--from", str(package_folder(tmp_path, "0.1.0-aaa-1")))
    node.install("--uninstall")
    table = node.install("--uninstall", output="table")
    assert table.rstrip().endswith("no build installed: uninstalled: 0 item(s), 1 warning(s)"), table


def test_a_rollback_calls_the_build_it_leaves_newer(tmp_path: Path) -> None:
    node = install_node(tmp_path)
    node.install("--from", str(package_folder(tmp_path, "0.1.0-bbb-2")))
    done = node.install("--from", str(package_folder(tmp_path, "0.1.0-aaa-1")))
    [step] = [s for s in done["steps"] if s["path"].endswith("_wincni-0.1.0-bbb-2")]
    assert (step["action"], step["detail"]) == ("remove", "a newer build, no longer used"), done["steps"]
    done = node.install("--from", str(package_folder(tmp_path, "0.1.0-bbb-2")))
    [step] = [s for s in done["steps"] if s["path"].endswith("_wincni-0.1.0-aaa-1")]
    assert step["detail"] == "an older build, no longer used", done["steps"]


def test_uninstall_calls_the_build_it_removes_by_its_name(tmp_path: Path) -> None:
    node = install_node(tmp_path)
    node.install("--from", str(package_folder(tmp_path, "0.1.0-aaa-1")))
    dry = node.install("--uninstall", "--dry-run")
    done = node.install("--uninstall")
    for result in (dry, done):
        [step] = [s for s in result["steps"] if s["path"].endswith("_wincni-0.1.0-aaa-1")]
        assert step["detail"] == "the uninstalled build", result


@pytest.mark.parametrize("value", [1.0, 1, True, ["1.0.0"]])
def test_a_cni_version_that_is_not_a_string_is_a_type_error(value) -> None:
    with pytest.raises(CniError) as exc:
        config.cni_version({"cniVersion": value})
    assert exc.value.code == INVALID_CONFIG and "is not a string" in exc.value.msg
    assert '"cniVersion": "1.1.0"' in exc.value.details


def test_api_version_allows_1_or_2_and_reads_go_s_zero_as_unset() -> None:
    from plugins.win_bridge.flavor import FLAVOR
    from plugins.winnet.config import load

    base = {
        "cniVersion": "1.0.0",
        "name": "cbr0",
        "type": "win-bridge",
        "ipam": {"type": "host-local", "subnet": "10.244.4.0/24"},
    }
    with pytest.raises(CniError) as exc:
        load({**base, "apiVersion": 3}, "ADD", FLAVOR.schema())
    assert "[1, 2]" in exc.value.msg and "0" not in exc.value.msg.split("is not one of")[1], exc.value.msg
    assert load({**base, "apiVersion": 0}, "ADD", FLAVOR.schema())[1].api_version is None


@pytest.mark.parametrize(
    "exc, platform, gone",
    [
        (BrokenPipeError(32, "Broken pipe"), "linux", True),
        (BrokenPipeError(32, "Broken pipe"), "win32", True),
        (OSError(22, "Invalid argument"), "win32", True),  # how Windows reports a write to a closed pipe
        (OSError(22, "Invalid argument"), "linux", False),
        (OSError(5, "I/O error"), "win32", False),
    ],
)
def test_which_write_failures_mean_the_reader_went_away(exc: OSError, platform: str, gone: bool) -> None:
    from basics.closedpipe import reader_gone

    assert reader_gone(exc, platform) is gone


def test_only_stdout_s_own_failure_is_stdout_closed() -> None:
    """A command's own I/O errors stay OSError (its except clauses handle them); the guarded stream's
    closed pipe is StdoutClosed, which none of them catches."""
    from basics.closedpipe import GuardedStdout, StdoutClosed

    class Closed(io.StringIO):
        def write(self, text: str) -> int:
            raise BrokenPipeError(32, "Broken pipe")

    with pytest.raises(StdoutClosed):
        GuardedStdout(Closed()).write("x")
    assert not issubclass(StdoutClosed, OSError)
    out = GuardedStdout(io.StringIO())
    out.write("kept")
    assert out.getvalue() == "kept"


def _subcommands(parser) -> dict:
    """Every command's own parser, by its prog ("hnsctl network list")."""
    import argparse

    found = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):
                found.update(_subcommands(sub) if sub._subparsers else {sub.prog: sub})
    return found


def _options(parser) -> dict:
    return {o: a for a in parser._actions for o in a.option_strings}


def _every_command():
    from tools.wincni.cli.main import build_parser

    return {**_subcommands(hnsctl.build_parser()), **_subcommands(build_parser("linux"))}


def test_every_option_says_what_it_is_beyond_its_default() -> None:
    """-o in every command, --service-cidr and --conf-name: help that says what the value is for."""
    for prog, parser in _every_command().items():
        for option, action in _options(parser).items():
            words = (action.help or "").replace("(default %(default)s)", "").strip(" ,.()")
            assert option == "-h" or len(words.split()) > 2, (prog, option, action.help)


def test_one_flag_one_metavar_wherever_it_takes_the_same_thing() -> None:
    from basics.cli import FILE, FILE_OR_DIR

    seen: dict = {}
    for parser in _every_command().values():
        for option, action in _options(parser).items():
            if hasattr(action.type, "kind"):  # a path: FILE, DIR or both, never the flag's name
                seen.setdefault((option, action.type.kind), set()).add(action.metavar)
    assert all(len(shown) == 1 and None not in shown for shown in seen.values()), seen
    assert seen[("--cni-conf", FILE.kind)] == {"FILE"} and seen[("--cni-conf", FILE_OR_DIR.kind)] == {"FILE|DIR"}
