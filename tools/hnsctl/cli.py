"""hnsctl's one list of commands, its parser and ``main``: parse, hand the command its arguments
and a ``HnsctlContext``, turn every failure into one line on stderr and an exit status."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any, Mapping, Sequence, TextIO

from basics.cli import Parser, UsageError, overview, parse, subcommands, version_flag
from libhns import errors
from tools.hnsctl.context import HnsctlContext

#: Every command, in ``hnsctl --help``'s order: its name and the module of ``tools.hnsctl`` that
#: declares its parser (``add_parser(sub)``) and carries it out (``run(args, ctx)``).
COMMANDS = (
    ("version", "version"),
    ("dump", "dump"),
    ("network", "networks"),
    ("endpoint", "endpoints"),
    ("loadbalancer", "loadbalancers"),
    ("policylist", "policylists"),
    ("namespace", "namespaces"),
    ("container", "containers"),
    ("restart", "restart"),
    ("probe", "probe"),
)


def command(name: str) -> Any:
    """The module of the command ``name``."""
    import importlib

    return importlib.import_module(f"tools.hnsctl.{dict(COMMANDS)[name]}")


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="hnsctl",
        description="Inspect and manage HNS networks, endpoints, "
        "namespaces and load balancers (real HNS or the simulator, per LIBHNS_BACKEND).",
    )
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    for name, _ in COMMANDS:
        command(name).add_parser(sub)
    for name, _, group in subcommands(parser):
        manual = command(name).MANUAL
        manual.apply(group, prog=f"hnsctl {name}")
        for action, line, leaf in subcommands(group):
            manual.apply(
                leaf, does=leaf.description or line[:1].upper() + line[1:] + ".", prog=f"hnsctl {name} {action}"
            )
    version_flag(parser, command("version").HELP)
    return parser


def main(argv: Sequence[str], stdout: TextIO, stderr: TextIO, env: Mapping[str, str]) -> int:
    """Run one command; 0 on success, 1 for an HNS failure, 2 for bad arguments. No arguments:
    the version and the commands."""
    if not argv:
        from plugins.cni.buildinfo import about

        stdout.write(overview(build_parser(), about("hnsctl").splitlines()[0]))
        return 0
    try:
        args = parse(build_parser(), list(argv))
    except UsageError as exc:
        stderr.write(f"{exc}\n")
        return 2
    except SystemExit as exc:  # --help
        return int(exc.code or 0)
    try:
        command(args.command).run(args, HnsctlContext(stdout, env))
    except UsageError as exc:
        stderr.write(f"{exc}\n")
        return 2
    except (errors.HnsError, ValueError, OSError) as exc:
        stderr.write(f"hnsctl: {exc}\n")
        return 1
    return 0


def entry() -> None:
    """Console script ``hnsctl``."""
    from basics.closedpipe import exit_with

    exit_with(lambda stdout: main(sys.argv[1:], stdout, sys.stderr, os.environ))
