"""Argument parsing shared by the operator commands (``hnsctl``, ``wincni``): a usage error is
raised, not ``sys.exit``-ed, so ``main(argv, ...)`` stays callable from tests and prints one line."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Iterator, NoReturn


class UsageError(Exception):
    """Bad arguments: reported on stderr (what is wrong, then the usage line), exit status 2."""


class VersionAsked(Exception):
    """``--version`` was given: ``parse`` reads the command line as the ``version`` command."""


class _Version(argparse.Action):
    def __init__(self, option_strings: list[str], dest: str, help: str | None = None) -> None:
        super().__init__(option_strings, dest, nargs=0, help=help)

    def __call__(self, *args: object, **kwargs: object) -> NoReturn:
        raise VersionAsked


def add_version(parser: argparse.ArgumentParser, sub: argparse._SubParsersAction, help: str) -> argparse.ArgumentParser:
    """``--version`` on ``parser`` and the ``version`` command (returned, for its options) in ``sub``:
    the same answer both ways, as operators try either."""
    version_flag(parser, help)
    return sub.add_parser("version", help=help)


def version_flag(parser: argparse.ArgumentParser, help: str) -> None:
    """``--version`` on ``parser``, which ``parse`` reads as the ``version`` command."""
    parser.add_argument("--version", action=_Version, help=f"{help} (as the version command)")


def ip_address(text: str) -> str:
    """An option's ``type=`` for one IP address, printed as ``ipaddress`` does."""
    import ipaddress

    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an IP address: {text!r}") from None


def add_output(parser: argparse.ArgumentParser, json_is: str = "the same as one JSON document") -> None:
    """``-o table|json``, every command's: ``json_is`` says what the JSON holds."""
    parser.add_argument(
        "-o", "--output", choices=("table", "json"), default="table", help=f"table (default), or json: {json_is}"
    )


def parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """``parser``'s reading of ``argv``, with ``--version`` read as the ``version`` command."""
    try:
        return parser.parse_args(argv)
    except VersionAsked:
        return parser.parse_args(["version"])


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        if self._subparsers is not None and message.startswith("the following arguments are required"):
            message = f"name a command: {', '.join(name for name, _, _ in subcommands(self))}"
        raise UsageError(f"{self.prog}: {message}\n{self.format_usage().rstrip()}")

    def parse_known_args(self, args=None, namespace=None):
        """A command's own parser (one without subcommands) refuses what it does not know itself,
        so the error shows that command's usage, not the program's."""
        namespace, extras = super().parse_known_args(args, namespace)
        if extras and self._subparsers is None:
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return namespace, extras


class PathArg:
    """An option's ``type=`` saying what its path names: ``FILE``, ``DIR`` or ``FILE_OR_DIR``. The
    value stays the string given; the kind is what a reader (``basics.inputfile`` for a file) and
    a test walking every parser go by, so a new file flag is known for one without a list."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.__name__ = kind  # argparse's "invalid <name> value"

    def __call__(self, text: str) -> str:
        return text

    def __repr__(self) -> str:
        return f"PathArg({self.kind!r})"


FILE, DIR, FILE_OR_DIR = PathArg("file"), PathArg("folder"), PathArg("file or folder")


ELEVATED = "Run it from an elevated shell (as Administrator; deploy/'s HostProcess containers run as SYSTEM)."
ANY_SHELL = "Any shell will do: it needs no elevation."


@dataclass(frozen=True)
class Manual:
    """What a command's ``--help`` tells an operator before its options: what it does, whether it
    needs an elevated shell, what each exit status means, and examples (each one a command line
    the command's own parser takes: a test parses them, so they cannot rot)."""

    does: str
    elevated: bool
    exits: tuple[tuple[int, str], ...]
    examples: tuple[str, ...]

    def apply(self, parser: argparse.ArgumentParser, does: str = "", prog: str = "") -> None:
        """``parser``'s description and epilog from this manual. ``does``: a subcommand's own
        sentence instead of the manual's; ``prog``: only the examples that start with it."""
        shown = [e for e in self.examples if not prog or e == prog or e.startswith(prog + " ")] or list(self.examples)
        import textwrap

        said = (does or self.does, ELEVATED if self.elevated else ANY_SHELL)
        parser.description = "\n\n".join(textwrap.fill(text, 79) for text in said)
        parser.epilog = (
            "exit status:\n"
            + "".join(
                textwrap.fill(why, 79, initial_indent=f"  {code}  ", subsequent_indent="     ") + "\n"
                for code, why in self.exits
            )
            + "\nexample:\n"
            + "".join(f"  {line}\n" for line in shown)
        )
        parser.formatter_class = argparse.RawDescriptionHelpFormatter


def subcommands(parser: argparse.ArgumentParser) -> Iterator[tuple[str, str, argparse.ArgumentParser]]:
    """``parser``'s subcommands: name, help line and parser (argparse keeps them unexposed)."""
    if parser._subparsers is None:
        return
    for action in parser._subparsers._group_actions:
        helps = {a.dest: a.help or "" for a in getattr(action, "_choices_actions", ())}
        for name, sub in getattr(action, "choices", {}).items():
            yield name, helps.get(name, ""), sub


def overview(parser: argparse.ArgumentParser, version: str) -> str:
    """What a program run with no arguments prints: its version and its commands, each with its
    help line, and where to read more (not a usage error: an operator trying it learns the tool)."""
    listed = [(name, line) for name, line, _ in subcommands(parser)]
    width = max((len(name) for name, _ in listed), default=0)
    lines = [version.rstrip("\n"), "", "commands:"]
    lines += [f"  {name:<{width}}  {line}" for name, line in listed]
    lines += [
        "",
        f"{parser.prog} COMMAND --help: what it does, whether it needs an elevated shell, its exit statuses, an example",
    ]
    return "\n".join(lines) + "\n"
