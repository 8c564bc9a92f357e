"""``wincni version`` (and ``--version``): this wincni's build, Python and platform."""

from __future__ import annotations

import argparse

from basics.cli import Manual
from tools.wincni.cli.context import Context

MANUAL = Manual(
    does="Print this wincni's version, the commit and build it was made from, its Python and the platform.",
    elevated=False,
    exits=((0, "always"), (2, "a usage error")),
    examples=("wincni version -o json",),
)


def add_arguments(p: argparse.ArgumentParser, platform: str) -> None:
    from basics.cli import add_output

    add_output(p, "version, commit, build, python, platform")


def options(args: argparse.Namespace, ctx: Context) -> str:
    return args.output


def run(options: str, ctx: Context) -> int:
    """``options``: the output format."""
    from plugins.cni import buildinfo
    from tools.wincni.cli.output import json_doc

    if options == "json":
        json_doc(ctx.stdout, buildinfo.document())
    else:
        ctx.stdout.write(buildinfo.about("wincni"))
    return 0
