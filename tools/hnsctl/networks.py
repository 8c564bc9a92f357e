"""``hnsctl network``: list, show, create (the documents flanneld / start.ps1 send), delete."""

from __future__ import annotations

import argparse
import ipaddress
from typing import Any

from basics.cli import Manual, Parser, UsageError, ip_address
from tools.hnsctl import output, tables
from tools.hnsctl.options import EXITS, add_output, show_and_delete_one

NETWORK_TYPES = ("L2Bridge", "Overlay", "NAT", "L2Tunnel", "Transparent", "ICS", "Private", "Internal")


MANUAL = Manual(
    does="List, show, create and delete HNS networks (create sends the documents flanneld and start.ps1 send).",
    elevated=True,
    exits=EXITS,
    examples=(
        "hnsctl network list",
        "hnsctl network show cbr0",
        "hnsctl network create vxlan0 --type Overlay --subnet 10.244.1.0/24 --vsid 4096",
        "hnsctl network delete vxlan0",
    ),
)


def add_parser(sub: Any) -> None:
    net = sub.add_parser("network", help="networks").add_subparsers(dest="action", required=True, parser_class=Parser)
    add_output(net.add_parser("list", help="list every network"))
    show_and_delete_one(net, "network", "name or ID")
    p = net.add_parser("create", help="create a network as flanneld/start.ps1 would")
    p.add_argument("name")
    p.add_argument(
        "--type", default="L2Bridge", type=_network_type, help="L2Bridge (default), Overlay, NAT, L2Tunnel, …"
    )
    p.add_argument(
        "--subnet",
        type=_cidr,
        action="append",
        default=[],
        help="address prefix, e.g. 10.244.1.0/24; repeat it for dual stack (one IPv4 and one IPv6 prefix)",
    )
    p.add_argument(
        "--gateway",
        type=ip_address,
        action="append",
        default=[],
        help="default gateway of the subnet of its family (default: first address)",
    )
    p.add_argument("--vsid", type=int, help="overlay VSID / VNI (default 4096 on Overlay)")
    p.add_argument("--adapter", help="host network adapter, e.g. Ethernet")
    p.add_argument(
        "--management-ip",
        type=ip_address,
        help="ProviderAddress to report (honoured by the simulator; real HNS takes it from the adapter)",
    )
    p.add_argument("--vxlan-port", type=int, help="VxlanPort network policy (HNS >= 10.3)")
    add_output(p)


def _network_type(text: str) -> str:
    for t in NETWORK_TYPES:
        if t.casefold() == text.casefold():
            return t
    raise argparse.ArgumentTypeError(f"unknown network type {text!r} (one of {', '.join(NETWORK_TYPES)})")


def _cidr(text: str) -> str:
    try:
        return str(ipaddress.ip_network(text, strict=False))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a CIDR prefix: {text!r}") from None


def network_document(args: argparse.Namespace) -> dict[str, Any]:
    """The V2 network flanneld (vxlan) / start.ps1 would send for these arguments."""
    from libhns import networks

    families = [ipaddress.ip_network(s).version for s in args.subnet]
    if len(set(families)) != len(families):
        raise UsageError("hnsctl: at most one --subnet per IP family (one IPv4, one IPv6)")
    gateways = {ipaddress.ip_address(g).version: g for g in args.gateway}
    if len(gateways) != len(args.gateway) or not set(gateways) <= set(families):
        raise UsageError("hnsctl: each --gateway needs a --subnet of its IP family")
    if args.vsid is not None and not args.subnet:
        raise UsageError("hnsctl: --vsid needs --subnet")
    vsid = args.vsid if args.vsid is not None else (4096 if args.type == "Overlay" else None)
    try:
        subnets = [networks.NewSubnet(s, gateways.get(v, ""), vsid) for s, v in zip(args.subnet, families)]
    except ValueError as err:
        raise UsageError(f"hnsctl: {err}") from None
    return networks.network_document(
        args.name,
        args.type,
        subnets,
        adapter=args.adapter or "",
        management_ip=args.management_ip or "",
        vxlan_port=args.vxlan_port,
        flags=networks.NON_PERSISTENT if args.type == "Overlay" else 0,
    )


def _list(args: argparse.Namespace, ctx: Any) -> None:
    output.listing(ctx.out, args, ctx.view(args).networks(), tables.NETWORK_HEADERS, tables.network_rows)


def _show(args: argparse.Namespace, ctx: Any) -> None:
    output.show(ctx.out, args, ctx.network(args, args.network))


def _create(args: argparse.Namespace, ctx: Any) -> None:
    output.show(ctx.out, args, ctx.view(args).create_network(network_document(args)))


def _delete(args: argparse.Namespace, ctx: Any) -> None:
    """HNS deletes the network's endpoints with it: the output says how many went."""
    net = ctx.network(args, args.network)
    view = ctx.view(args)
    gone = len(view.endpoints(net.id))
    view.delete_network(net.id)
    ctx.out.write(f"deleted network {net.name} ({net.id})" + (f" and its {gone} endpoint(s)" if gone else "") + "\n")


ACTIONS = {"list": _list, "show": _show, "create": _create, "delete": _delete}


def run(args: argparse.Namespace, ctx: Any) -> None:
    ACTIONS[args.action](args, ctx)
