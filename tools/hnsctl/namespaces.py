"""``hnsctl namespace``: list, create (as containerd does for a pod), show, delete, attach, detach."""

from __future__ import annotations

import argparse
from typing import Any

from basics.cli import Manual, Parser
from tools.hnsctl import output, tables
from tools.hnsctl.options import EXITS, add_output, show_and_delete_one

MANUAL = Manual(
    does="List, show, create and delete HNS namespaces (a pod's network compartment) and attach or detach endpoints.",
    elevated=True,
    exits=EXITS,
    examples=(
        "hnsctl namespace list",
        "hnsctl namespace create",
        "hnsctl namespace show 3f2a0e1c-0000-4000-8000-000000000002",
        "hnsctl namespace attach 3f2a0e1c-0000-4000-8000-000000000002 test-ep",
        "hnsctl namespace detach 3f2a0e1c-0000-4000-8000-000000000002 test-ep",
        "hnsctl namespace delete 3f2a0e1c-0000-4000-8000-000000000002",
    ),
)


def add_parser(sub: Any) -> None:
    ns = sub.add_parser("namespace", help="namespaces").add_subparsers(
        dest="action", required=True, parser_class=Parser
    )
    for action, what in (
        ("list", "list every namespace"),
        ("create", "create a namespace (as containerd does for a pod)"),
    ):
        add_output(ns.add_parser(action, help=what))
    show_and_delete_one(ns, "namespace", "ID")
    for action in ("attach", "detach"):
        p = ns.add_parser(action, help=f"{action} an endpoint")
        p.add_argument("namespace", help="ID")
        p.add_argument("endpoint", help="name or ID")
        add_output(p)


def _list(args: argparse.Namespace, ctx: Any) -> None:
    output.listing(ctx.out, args, ctx.view(args).namespaces(), tables.NAMESPACE_HEADERS, tables.namespace_rows)


def _show(args: argparse.Namespace, ctx: Any) -> None:
    output.show(ctx.out, args, ctx.found("namespace", args.namespace, ctx.view(args).namespace(args.namespace)))


def _create(args: argparse.Namespace, ctx: Any) -> None:
    ns = ctx.hcn.create_namespace()
    if args.output == "json":
        output.write_json(ctx.out, ns.to_json())
    else:
        ctx.out.write(f"{ns.id}\n")


def _delete(args: argparse.Namespace, ctx: Any) -> None:
    ctx.hcn.delete_namespace(args.namespace)
    ctx.out.write(f"deleted namespace {args.namespace}\n")


def _attach(args: argparse.Namespace, ctx: Any) -> None:
    ep = ctx.endpoint(args, args.endpoint)
    ctx.hcn.namespace_add_endpoint(args.namespace, ep.id)
    ctx.out.write(f"attached endpoint {ep.name} to namespace {args.namespace}\n")


def _detach(args: argparse.Namespace, ctx: Any) -> None:
    ep = ctx.endpoint(args, args.endpoint)
    ctx.hcn.namespace_remove_endpoint(args.namespace, ep.id)
    ctx.out.write(f"detached endpoint {ep.name} from namespace {args.namespace}\n")


ACTIONS = {"list": _list, "show": _show, "create": _create, "delete": _delete, "attach": _attach, "detach": _detach}


def run(args: argparse.Namespace, ctx: Any) -> None:
    ACTIONS[args.action](args, ctx)
