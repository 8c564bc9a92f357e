"""``hnsctl version`` (and ``--version``): hnsctl's build beside HNS's version and features."""

from __future__ import annotations

import argparse
from typing import Any

from basics.cli import Manual
from libhns import errors
from tools.hnsctl import output
from tools.hnsctl.options import EXITS, add_output

HELP = "hnsctl's build, Python and platform, and HNS's version and features"


MANUAL = Manual(
    does=HELP[0].upper() + HELP[1:] + ". HNS not answering is said, not failed on.",
    elevated=False,
    exits=EXITS,
    examples=("hnsctl version",),
)


def add_parser(sub: Any) -> None:
    add_output(sub.add_parser("version", help=HELP))


def run(args: argparse.Namespace, ctx: Any) -> None:
    """HNS not answering is said, not failed on: the build is what an operator most often asks."""
    from plugins.cni import buildinfo

    try:
        hnscall = ctx.hnscall
        (major, minor), feats = hnscall.version(), hnscall.features().as_dict()
    except (errors.HnsError, errors.EnvError, OSError) as exc:
        unreachable = f"HNS not reachable: {exc}"
        if args.output == "json":
            output.write_json(ctx.out, {**buildinfo.document(), "HnsError": unreachable})
        else:
            ctx.out.write(buildinfo.about("hnsctl", unreachable))
        return
    if args.output == "json":
        output.write_json(ctx.out, {**buildinfo.document(), "Major": major, "Minor": minor, "Features": feats})
    else:
        ctx.out.write(buildinfo.about("hnsctl", f"HNS {major}.{minor}"))
        output.table(ctx.out, ["FEATURE", "SUPPORTED"], [[k, "yes" if v else "no"] for k, v in feats.items()])
