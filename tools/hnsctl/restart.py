"""``hnsctl restart``: HNS restarted as ``Restart-Service hns`` would (simulator only)."""

from __future__ import annotations

import argparse
from typing import Any

from basics.cli import Manual
from tools.hnsctl import output
from tools.hnsctl.options import EXITS, add_output

MANUAL = Manual(
    does="Restart HNS as Restart-Service hns would: non-persistent networks and their endpoints are lost "
    "(simulator only; on a node run Restart-Service hns).",
    elevated=False,
    exits=EXITS,
    examples=("hnsctl restart",),
)


def add_parser(sub: Any) -> None:
    add_output(
        sub.add_parser(
            "restart",
            help="restart HNS as Restart-Service hns would: non-persistent "
            "networks and their endpoints are lost (only on the simulator)",
        )
    )


def run(args: argparse.Namespace, ctx: Any) -> None:
    dropped = ctx.simulator().restart()
    if args.output == "json":
        output.write_json(ctx.out, {"droppedNetworks": dropped})
    else:
        ctx.out.write(f"HNS restarted; non-persistent networks dropped: {', '.join(dropped) or 'none'}\n")
