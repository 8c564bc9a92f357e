"""``hnsctl container``: the simulator's running containers, for V1 hot attach (simulator only)."""

from __future__ import annotations

import argparse
from typing import Any

from basics.cli import Manual, Parser
from tools.hnsctl import output
from tools.hnsctl.options import EXITS, add_output

MANUAL = Manual(
    does="List, start and stop the simulator's containers, which V1 hot attach needs (simulator only).",
    elevated=False,
    exits=EXITS,
    examples=(
        "hnsctl container list",
        "hnsctl container create pause-1",
        "hnsctl container delete pause-1",
    ),
)


def add_parser(sub: Any) -> None:
    ct = sub.add_parser(
        "container", help="running containers for V1 hot attach (only on the simulator)"
    ).add_subparsers(dest="action", required=True, parser_class=Parser)
    add_output(ct.add_parser("list", help="list every simulated container"))
    for action, what in (
        ("create", "start a simulated container (a pause container)"),
        ("delete", "stop a simulated container"),
    ):
        p = ct.add_parser(action, help=what)
        p.add_argument("container", help="container ID")
        add_output(p)


def _list(args: argparse.Namespace, ctx: Any) -> None:
    output.listing(
        ctx.out,
        args,
        ctx.simulator().containers(),
        ["ID", "STATE", "ENDPOINTS"],
        lambda conts: [[c["Id"], c.get("State"), ",".join(c.get("Endpoints") or ())] for c in conts],
    )


def _create(args: argparse.Namespace, ctx: Any) -> None:
    ctx.simulator().register_container(args.container)
    ctx.out.write(f"created container {args.container}\n")


def _delete(args: argparse.Namespace, ctx: Any) -> None:
    ctx.simulator().remove_container(args.container)
    ctx.out.write(f"deleted container {args.container}\n")


ACTIONS = {"list": _list, "create": _create, "delete": _delete}


def run(args: argparse.Namespace, ctx: Any) -> None:
    ACTIONS[args.action](args, ctx)
