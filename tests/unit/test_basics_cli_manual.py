"""Every command's ``--help`` an operator can act on: what it does first, whether it needs an
elevated shell, what each exit status means, and examples its own parser takes; with no
arguments, ``wincni`` and ``hnsctl`` print their version and their commands."""

from __future__ import annotations

import io
import shlex

import pytest

from basics.cli import ANY_SHELL, ELEVATED, UsageError, parse, subcommands
from tools.hnsctl import cli as hnsctl_cli
from tools.wincni.cli import main as wincni_main
from tools.wincni.cli import registry


def _helps() -> list[tuple[str, object]]:
    """(the command line, its parser) for every wincni command and every hnsctl command and subcommand."""
    found: list[tuple[str, object]] = []
    wincni = wincni_main.build_parser("win32")
    found += [(f"wincni {name}", parser) for name, _, parser in subcommands(wincni)]
    for name, _, group in subcommands(hnsctl_cli.build_parser()):
        found.append((f"hnsctl {name}", group))
        found += [(f"hnsctl {name} {action}", leaf) for action, _, leaf in subcommands(group)]
    return found


HELPS = _helps()


def test_every_command_is_walked() -> None:
    names = {line for line, _ in HELPS}
    assert {f"wincni {c.name}" for c in registry.COMMANDS} <= names
    assert {f"hnsctl {name}" for name, _ in hnsctl_cli.COMMANDS} <= names
    assert "hnsctl endpoint acls" in names and len(names) > 40


@pytest.mark.parametrize("line,parser", HELPS, ids=[line for line, _ in HELPS])
def test_help_says_what_where_how_it_ends_and_shows_how(line: str, parser) -> None:
    text = parser.format_help()
    usage, _, rest = text.partition("\n\n")
    does, _, rest = rest.partition("\n\n")
    assert usage.startswith(f"usage: {line}") and len(does.split()) >= 2, text
    shell, _, rest = rest.partition("\n\n")
    assert shell.replace("\n", " ") in (ELEVATED, ANY_SHELL), text
    exits = text.split("exit status:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    codes = [int(row.split()[0]) for row in exits if not row.startswith("     ")]
    assert codes[0] == 0 and 2 in codes and codes == sorted(set(codes)), text
    examples = text.split("example:\n", 1)[1].strip().splitlines()
    assert examples and all(e.strip().startswith(line) for e in examples), text


@pytest.mark.parametrize("line,parser", HELPS, ids=[line for line, _ in HELPS])
def test_examples_are_command_lines_the_command_takes(line: str, parser) -> None:
    program = wincni_main.build_parser("win32") if line.startswith("wincni") else hnsctl_cli.build_parser()
    for example in parser.epilog.split("example:\n", 1)[1].strip().splitlines():
        argv = shlex.split(example.strip().replace("\\", "\\\\"))[1:]
        try:
            parse(program, argv)
        except UsageError as exc:  # pragma: no cover - the failure message is the point
            pytest.fail(f"{example!r}: {exc}")


def test_a_broken_example_is_caught() -> None:
    """The check above fails on an example the parser refuses (it can fail)."""
    with pytest.raises(UsageError):
        parse(wincni_main.build_parser("win32"), ["doctor", "--cure"])


@pytest.mark.parametrize(
    "main,program,commands",
    [
        (wincni_main.main, "wincni", [c.name for c in registry.COMMANDS]),
        (hnsctl_cli.main, "hnsctl", [name for name, _ in hnsctl_cli.COMMANDS]),
    ],
)
def test_no_arguments_prints_the_version_and_the_commands(main, program: str, commands: list[str]) -> None:
    out, err = io.StringIO(), io.StringIO()
    assert main([], out, err, {}) == 0
    lines = out.getvalue().splitlines()
    assert lines[0].startswith(f"{program} ") and err.getvalue() == ""
    listed = [row.split()[0] for row in lines[lines.index("commands:") + 1 :] if row.startswith("  ")]
    assert listed == commands
    assert lines[-1].startswith(f"{program} COMMAND --help")


@pytest.mark.parametrize(
    "main,argv,said",
    [
        (hnsctl_cli.main, ["network"], "hnsctl network: name a command: list, show, delete, create\n"),
        (wincni_main.main, ["-x"], "wincni: name a command: version, doctor, "),
    ],
)
def test_a_missing_command_is_named_in_the_operators_words(main, argv: list[str], said: str) -> None:
    """Not argparse's "the following arguments are required: group" (an internal word)."""
    out, err = io.StringIO(), io.StringIO()
    assert main(argv, out, err, {}) == 2
    assert err.getvalue().startswith(said) and "required" not in err.getvalue()
