"""``hnsctl policylist``: HNSCall's ``/policylists/``, the load balancers as V1 shows them."""

from __future__ import annotations

import argparse
from typing import Any

from basics.cli import Manual, Parser
from tools.hnsctl import output, tables
from tools.hnsctl.options import EXITS, add_output, show_and_delete

MANUAL = Manual(
    does="List, show and delete V1 policy lists (HNSCall's /policylists/: the load balancers as HNSCall shows them).",
    elevated=True,
    exits=EXITS,
    examples=(
        "hnsctl policylist list",
        "hnsctl policylist show 3f2a0e1c-0000-4000-8000-000000000001",
        "hnsctl policylist delete 3f2a0e1c-0000-4000-8000-000000000001",
    ),
)


def add_parser(sub: Any) -> None:
    pl = sub.add_parser(
        "policylist", help="V1 policy lists (HNSCall /policylists/: the load balancers as HNSCall shows them)"
    ).add_subparsers(dest="action", required=True, parser_class=Parser)
    add_output(pl.add_parser("list", help="list every policy list"))
    show_and_delete(pl, "policylist", "ID")


def _list(args: argparse.Namespace, ctx: Any) -> None:
    lists = ctx.hnscall.list_policy_lists()
    output.listing(ctx.out, args, lists, tables.POLICY_LIST_HEADERS, tables.policy_list_rows)


def _show(args: argparse.Namespace, ctx: Any) -> None:
    found = ctx.hnscall.get_policy_list(args.policylist)
    output.show(ctx.out, args, ctx.found("policy list", args.policylist, found))


def _delete(args: argparse.Namespace, ctx: Any) -> None:
    ctx.delete_each(args.policylist, ctx.hnscall.delete_policy_list, "policy list")


ACTIONS = {"list": _list, "show": _show, "delete": _delete}


def run(args: argparse.Namespace, ctx: Any) -> None:
    ACTIONS[args.action](args, ctx)
