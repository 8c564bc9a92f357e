"""``wincni dirs``: ``node.dirs.where``'s answer, which every other command defaults to."""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from basics.cli import Manual
from tools.wincni.cli.context import Context

MANUAL = Manual(
    does="Say where the runtime's CNI bin and conf folders are on this node, and why (containerd's "
    "config.toml or its defaults): what every other command defaults to.",
    elevated=False,
    exits=((0, "found"), (1, "--containerd-config was refused"), (2, "a usage error")),
    examples=("wincni dirs -o json",),
)


@dataclass(frozen=True)
class DirsOptions:
    containerd_config: str | None
    output: str = "table"


def add_arguments(p: argparse.ArgumentParser, platform: str) -> None:
    from basics.cli import add_output
    from tools.wincni.cli import flags

    flags.containerd_config(p, platform)
    add_output(p, "binDir, confDir and from")


def options(args: argparse.Namespace, ctx: Context) -> DirsOptions:
    return DirsOptions(args.containerd_config, args.output)


def run(options: DirsOptions, ctx: Context) -> int:
    from tools.wincni.cli.output import json_doc
    from tools.wincni.node.dirs import where

    found = where(options.containerd_config, ctx.platform, ctx.env)
    if options.output == "json":
        json_doc(ctx.stdout, {"binDir": found.bin_dir, "confDir": found.conf_dir, "from": found.why})
    else:
        ctx.stdout.write(f"bin   {found.bin_dir}\nconf  {found.conf_dir}\nfrom  {found.why}\n")
    return 0
