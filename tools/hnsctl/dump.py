"""``hnsctl dump``: every network, endpoint, namespace and load balancer (V1: policy list) at once."""

from __future__ import annotations

import argparse
from typing import Any

from basics.cli import Manual
from tools.hnsctl import output, tables
from tools.hnsctl.options import EXITS, add_output

MANUAL = Manual(
    does="Print every network, endpoint, namespace and load balancer HNS holds (--v1: as HNSCall shows "
    "them, load balancers as policy lists), as tables or JSON documents.",
    elevated=True,
    exits=EXITS,
    examples=("hnsctl dump -o json",),
)


def add_parser(sub: Any) -> None:
    add_output(sub.add_parser("dump", help="every network, endpoint, namespace and load balancer (V1: policy list)"))


def run(args: argparse.Namespace, ctx: Any) -> None:
    view = ctx.view(args)
    nets, eps, nss, lbs = view.networks(), view.endpoints(), view.namespaces(), view.load_balancers()
    out = ctx.out
    if args.output == "json":
        output.write_json(
            out,
            {
                "networks": [output.document(n) for n in nets],
                "endpoints": [output.document(e) for e in eps],
                "namespaces": [output.document(n) for n in nss],
                **({view.BALANCERS: [output.document(lb) for lb in lbs]} if lbs is not None else {}),
            },
        )
        return
    out.write("NETWORKS\n")
    output.table(out, tables.NETWORK_HEADERS, tables.network_rows(nets))
    out.write("\nENDPOINTS\n")
    output.table(out, tables.ENDPOINT_HEADERS, tables.endpoint_rows(eps, nets))
    out.write("\nNAMESPACES\n")
    output.table(out, tables.NAMESPACE_HEADERS, tables.namespace_rows(nss))
    if lbs is not None:
        out.write(f"\n{view.BALANCERS.upper()}\n")
        output.table(out, view.BALANCER_HEADERS, view.balancer_rows(lbs))
