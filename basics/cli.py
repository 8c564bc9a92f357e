"""Argument parsing shared by the operator commands (``hnsctl``, ``wincni``): a usage error is
raised, not ``sys.exit``-ed, so ``main(argv, ...)`` stays callable from tests and prints one line."""

from __future__ import annotations

import argparse
from typing import NoReturn


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
