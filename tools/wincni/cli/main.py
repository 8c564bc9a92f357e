"""``wincni``: parse, the command's typed options, ``run(options, ctx)``, the exit status.
Usage errors (2) and a flag's file refused before a command could start (1) are said here, once.
The commands themselves are in ``registry.COMMANDS``."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Mapping, Sequence, TextIO

from tools.wincni.cli import registry


def build_parser(platform: str = sys.platform, chosen: str | None = None) -> argparse.ArgumentParser:
    """Every command by name and help line; the arguments of ``chosen`` only (every command's
    when None, none when ""), so a run imports one command's module."""
    from basics.cli import Parser, add_version
    from plugins.cni.buildinfo import describe

    p = Parser(prog="wincni", description=f"Windows CNI operator tools, wincni {describe()}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=Parser)
    for command in registry.COMMANDS:
        if command.name == "version":  # also --version, the same answer
            parser = add_version(p, sub, command.help)
        else:
            parser = sub.add_parser(command.name, help=command.help)
        if chosen in (None, command.name):
            module = registry.load(command.name)
            module.MANUAL.apply(parser, prog=f"wincni {command.name}")
            module.add_arguments(parser, platform)
    return p


def chosen(argv: Sequence[str]) -> str | None:
    """The command ``argv`` names, when it names one of ours."""
    return next((a for a in argv if not a.startswith("-")), None) if argv else None


def main(
    argv: Sequence[str],
    stdout: TextIO,
    stderr: TextIO,
    env: Mapping[str, str],
    platform: str = sys.platform,
    cwd: str | None = None,
    **world: object,
) -> int:
    """The command's exit status; 2: bad usage. ``world``: the rest of the ``Context`` (a test's
    clock and sleep). No arguments: the version and the commands."""
    from basics.cli import UsageError, overview, parse
    from tools.wincni.cli.context import Context
    from tools.wincni.cli.output import refused
    from tools.wincni.node.flagfile import FlagFileError

    if not argv:
        from plugins.cni.buildinfo import about

        stdout.write(overview(build_parser(platform, ""), about("wincni").splitlines()[0]))
        return 0
    ctx = Context(stdout, stderr, env, platform, cwd or os.getcwd(), **world)  # type: ignore[arg-type]
    name = chosen(argv)
    args = argparse.Namespace(command=name)
    try:
        args = parse(build_parser(platform, name if name in registry.BY_NAME else None), list(argv))
        command = registry.load(args.command)
        return command.run(command.options(args, ctx), ctx)
    except UsageError as exc:
        stderr.write(f"{exc}\n")
        return 2
    except SystemExit as exc:  # --help
        return int(exc.code or 0)
    except FlagFileError as exc:
        return refused(ctx, args.command, getattr(args, "output", None), str(exc))


def entry() -> None:
    """Console script ``wincni``."""
    from basics.closedpipe import exit_with

    exit_with(lambda stdout: main(sys.argv[1:], stdout, sys.stderr, os.environ))
