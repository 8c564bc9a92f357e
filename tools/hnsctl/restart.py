"""``hnsctl restart``: HNS restarted as ``Restart-Service hns`` would (simulator only)."""

from __future__ import annotations

import argparse
from typing import Any

from tools.hnsctl import output
from tools.hnsctl.options import add_output


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
