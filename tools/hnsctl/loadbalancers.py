"""``hnsctl loadbalancer``: kube-proxy's Services as HCN shows them; create only on the simulator."""

from __future__ import annotations

import argparse
from typing import Any

from basics.cli import Manual, Parser, ip_address
from libhns.objects import LB_DSR, PORT_MAPPING_LOCAL_ROUTED_VIP
from tools.hnsctl import output, tables
from tools.hnsctl.options import EXITS, add_output, port, show_and_delete

MANUAL = Manual(
    does="List, show and delete HNS load balancers (kube-proxy's Services); create one as kube-proxy "
    "would, on the simulator only.",
    elevated=True,
    exits=EXITS,
    examples=(
        "hnsctl loadbalancer list -o json",
        "hnsctl loadbalancer show 3f2a0e1c-0000-4000-8000-000000000001",
        "hnsctl loadbalancer create --endpoint test-ep --vip 10.96.0.10 --port 53 --protocol udp",
        "hnsctl loadbalancer delete 3f2a0e1c-0000-4000-8000-000000000001",
    ),
)


def add_parser(sub: Any) -> None:
    lb = sub.add_parser("loadbalancer", help="load balancers (kube-proxy's Services)").add_subparsers(
        dest="action", required=True, parser_class=Parser
    )
    add_output(lb.add_parser("list", help="list every load balancer"))
    show_and_delete(lb, "loadbalancer", "ID")
    p = lb.add_parser("create", help="create a load balancer as kube-proxy would (only on the simulator)")
    p.add_argument("--endpoint", action="append", default=[], required=True, help="a backend's name or ID (repeat)")
    p.add_argument("--vip", type=ip_address, action="append", default=[], help="a frontend VIP (repeat)")
    p.add_argument("--source-vip", type=ip_address, help="the source VIP (overlay)")
    p.add_argument("--protocol", choices=tuple(tables.PROTOCOLS), default="tcp", help="tcp (default) or udp")
    p.add_argument("--port", type=port, required=True, help="the frontend (external) port")
    p.add_argument("--target-port", type=port, help="the backends' port (default: --port)")
    p.add_argument("--dsr", action="store_true", help="direct server return (load balancer Flags 1, WinDSR)")
    p.add_argument(
        "--local-routed-vip",
        action="store_true",
        help="a NodePort Service's mapping (port mapping Flags 2), usually without --vip",
    )
    add_output(p)


def _list(args: argparse.Namespace, ctx: Any) -> None:
    output.listing(ctx.out, args, ctx.hcn.list_load_balancers(), tables.LB_HEADERS, tables.load_balancer_rows)


def _show(args: argparse.Namespace, ctx: Any) -> None:
    lb = ctx.hcn.get_load_balancer(args.loadbalancer)
    output.show(ctx.out, args, ctx.found("load balancer", args.loadbalancer, lb))


def _delete(args: argparse.Namespace, ctx: Any) -> None:
    ctx.delete_each(args.loadbalancer, ctx.hcn.delete_load_balancer, "load balancer")


def _create(args: argparse.Namespace, ctx: Any) -> None:
    """The document kube-proxy (winkernel) sends for one Service port; simulator only, so no
    operator makes a Service's load balancer behind kube-proxy's back."""
    ctx.simulator()
    backends = [ctx.endpoint(args, ref).id for ref in args.endpoint]
    doc: dict[str, Any] = {
        "HostComputeEndpoints": backends,
        "FrontendVIPs": list(args.vip),
        "PortMappings": [
            {
                "Protocol": tables.PROTOCOLS[args.protocol],
                "InternalPort": args.target_port or args.port,
                "ExternalPort": args.port,
                "Flags": PORT_MAPPING_LOCAL_ROUTED_VIP if args.local_routed_vip else 0,
            }
        ],
    }
    if args.source_vip:
        doc["SourceVIP"] = args.source_vip
    if args.dsr:
        doc["Flags"] = LB_DSR
    output.show(ctx.out, args, ctx.hcn.create_load_balancer(doc))


ACTIONS = {"list": _list, "show": _show, "delete": _delete, "create": _create}


def run(args: argparse.Namespace, ctx: Any) -> None:
    ACTIONS[args.action](args, ctx)
