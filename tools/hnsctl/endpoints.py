"""``hnsctl endpoint``: list, show, create (as a plugin, flanneld or kube-proxy would), delete, and
set an endpoint's ACLs (as the NetworkPolicy agent does)."""

from __future__ import annotations

import argparse
from typing import Any

from basics.cli import FILE, Manual, Parser, UsageError, ip_address
from libhns import errors
from tools.hnsctl import output, tables
from tools.hnsctl.options import EXITS, add_output, show_and_delete

MANUAL = Manual(
    does="List, show, create and delete HNS endpoints, and set an endpoint's ACLs from a file.",
    elevated=True,
    exits=EXITS,
    examples=(
        "hnsctl endpoint list --network cbr0",
        "hnsctl endpoint show cbr0_ep",
        "hnsctl endpoint create test-ep --network cbr0 --ip 10.244.1.50",
        "hnsctl endpoint acls test-ep acls.json",
        "hnsctl endpoint delete test-ep",
    ),
)


def add_parser(sub: Any) -> None:
    ep = sub.add_parser("endpoint", help="endpoints").add_subparsers(dest="action", required=True, parser_class=Parser)
    p = ep.add_parser("list", help="list every endpoint, or one network's")
    p.add_argument("--network", help="only this network's (name or ID)")
    add_output(p)
    show_and_delete(ep, "endpoint", "name or ID", " (several: the doctor's stale-endpoints fix)")
    p = ep.add_parser("create", help="create an endpoint (as a plugin or flanneld would)")
    p.add_argument("name")
    p.add_argument("--network", required=True, help="name or ID")
    p.add_argument("--ip", type=ip_address, help="IP address (default: HNS assigns one)")
    p.add_argument("--mac", help="MAC address (default: HNS assigns one)")
    p.add_argument(
        "--host", action="store_true", help="attach to the host compartment (1), as flanneld does for cbr0_ep"
    )
    p.add_argument(
        "--remote",
        action="store_true",
        help="another node's pod or a Service VIP, as kube-proxy makes them for its load balancers "
        "(IsRemoteEndpoint; its --ip may lie outside the network's subnets)",
    )
    p.add_argument(
        "--provider-address",
        type=ip_address,
        help="with --remote: the other node's address (a ProviderAddress policy, as kube-proxy sets on Overlay)",
    )
    add_output(p)
    p = ep.add_parser(
        "acls",
        help="set the endpoint's ACLs from a file",
        description="Make a JSON file's list of ACL policies (either API's form) the endpoint's whole ACL "
        "list, its other policies kept, as the NetworkPolicy agent sets them ([] removes every ACL).",
    )
    p.add_argument("endpoint", help="name or ID")
    p.add_argument("file", type=FILE, help="the JSON list")
    add_output(p)


#: The largest ACL list file read (about 10,000 rules).
MAX_ACL_FILE = 4 << 20


def _list(args: argparse.Namespace, ctx: Any) -> None:
    view = ctx.view(args)
    net = ctx.network(args, args.network) if args.network else None
    eps = view.endpoints(net.id if net else None)
    nets = ([net] if net else view.networks()) if args.output == "table" else []
    output.listing(ctx.out, args, eps, tables.ENDPOINT_HEADERS, lambda eps: tables.endpoint_rows(eps, nets))


def _show(args: argparse.Namespace, ctx: Any) -> None:
    output.show(ctx.out, args, ctx.endpoint(args, args.endpoint))


def _create(args: argparse.Namespace, ctx: Any) -> None:
    view = ctx.view(args)
    if args.provider_address and not args.remote:
        raise UsageError("hnsctl: --provider-address is for a remote endpoint: add --remote")
    network = ctx.network(args, args.network)
    ep = view.create_endpoint(args.name, network, args.ip, args.mac, args.remote, args.provider_address)
    if args.host:
        try:
            ctx.hnscall.host_attach(ep.id, 1)
        except errors.HnsError:
            view.delete_endpoint(ep.id)
            raise
        ep = view.endpoint(ep.id)
    output.show(ctx.out, args, ep)


def _delete(args: argparse.Namespace, ctx: Any) -> None:
    """Each in turn; the first that fails stops the rest (those before it stay deleted)."""
    for ref in args.endpoint:
        ep = ctx.endpoint(args, ref)
        ctx.view(args).delete_endpoint(ep.id)
        ctx.out.write(f"deleted endpoint {ep.name} ({ep.id})\n")


def _acls(args: argparse.Namespace, ctx: Any) -> None:
    """One HcnModifyEndpoint (or, with --v1, one ``POST /endpoints/<id>``) through the same
    adapter method the agent uses."""
    from basics import inputfile, jsontext
    from libhns.policies import policy_type
    from plugins.winnet.hnsapi import HcnApi, HnsV1Api

    found = inputfile.read(args.file, MAX_ACL_FILE)
    if found is None:
        raise UsageError(f"hnsctl: {args.file} does not exist")
    try:
        acls = jsontext.loads(found.data)
    except ValueError:
        acls = None
    if not isinstance(acls, list) or not all(isinstance(a, dict) and policy_type(a) == "ACL" for a in acls):
        raise UsageError(f'hnsctl: {args.file} must hold a JSON list of ACL policies ({{"Type": "ACL", ...}})')
    ep = ctx.endpoint(args, args.endpoint)
    adapter = (HnsV1Api if args.v1 else HcnApi)(hcn=ctx.hcn, hnscall=ctx.hnscall, container_id="", netns="")
    adapter.set_acls(ep, [adapter.policy_form.fit(a) for a in acls])
    output.show(ctx.out, args, ctx.endpoint(args, ep.id))


ACTIONS = {"list": _list, "show": _show, "create": _create, "delete": _delete, "acls": _acls}


def run(args: argparse.Namespace, ctx: Any) -> None:
    ACTIONS[args.action](args, ctx)
