"""``hnsctl probe FROM TO:PORT/PROTO``: whether a packet passes this node's endpoint ACLs, and the
rule that decided it (simulator only: ``libhns.sim.aclwalk`` is the walk).

A real node cannot be asked: HNS has no call that judges a packet (hcsshim's hcn and HNSCall read
and write policies only); the verdict is VFP's, seen there with ``vfpctrl /port <port>
/layer ACL_ENDPOINT_LAYER /list-rule`` or by sending the packet."""

from __future__ import annotations

import argparse
import json
from typing import Any

from basics.cli import Manual, UsageError
from tools.hnsctl import output
from tools.hnsctl.options import EXITS, add_output

_PROTOCOLS = {"tcp": 6, "udp": 17, "icmp": 1, "icmpv4": 1, "icmpv6": 58}
#: The source port of a probe whose FROM names none: the first of Windows' dynamic range.
DEFAULT_SOURCE_PORT = 49152
CANNOT = (
    "hnsctl probe: works only on the simulator (LIBHNS_BACKEND=sim): HNS has no call that says "
    "whether a packet passes; on a node VFP decides (vfpctrl /port <port> /layer "
    "ACL_ENDPOINT_LAYER /list-rule lists the rules it walks)"
)


MANUAL = Manual(
    does="Walk a packet through the source endpoint's Out rules and the destination's In rules (those of "
    "this node) and print whether it passes and the rule that decided; what passes is remembered as a "
    "flow for 240 s, so its reply passes (simulator only: on a node VFP decides).",
    elevated=False,
    exits=EXITS,
    examples=("hnsctl probe 10.244.1.5 10.244.1.6:80/tcp",),
)


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "probe",
        help="whether a packet passes the node's endpoint ACLs, and the rule that decided (only on the simulator)",
    )
    p.add_argument("source", metavar="FROM", type=_source, help="ADDRESS or ADDRESS:PORT ([v6]:PORT)")
    p.add_argument("destination", metavar="TO:PORT/PROTO", type=_destination, help="e.g. 10.244.1.5:80/tcp")
    add_output(p)


def _split_port(text: str) -> tuple[str, str]:
    if text.startswith("["):
        address, _, rest = text[1:].partition("]")
        return address, rest.removeprefix(":")
    address, colon, port = text.rpartition(":")
    return (address, port) if colon and address.count(":") == 0 else (text, "")


def _address(text: str) -> str:
    from basics import ipaddr

    try:
        return str(ipaddr.ip_address(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an address: {text!r}") from None


def _port(text: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise argparse.ArgumentTypeError(f"not a port: {text!r}")
    return int(text)


def _source(text: str) -> tuple[str, int]:
    address, port = _split_port(text)
    return _address(address), _port(port) if port else DEFAULT_SOURCE_PORT


def _destination(text: str) -> tuple[str, int, int]:
    where, _, proto = text.partition("/")
    address, port = _split_port(where)
    if not port:
        raise argparse.ArgumentTypeError(f"{text!r}: give the port, as 10.244.1.5:80/tcp")
    name = proto.casefold() or "tcp"
    number = _PROTOCOLS.get(name, int(name) if name.isdigit() and int(name) < 256 else None)
    if number is None:
        raise argparse.ArgumentTypeError(f"{text!r}: {proto!r} is not tcp, udp, icmp or a protocol number")
    return _address(address), _port(port), number


def run(args: argparse.Namespace, ctx: Any) -> None:
    from libhns.backend import backend_name

    if backend_name(ctx.env) != "sim":
        raise UsageError(CANNOT)
    address, port, protocol = args.destination
    steps, allowed, rule = ctx.simulator().probe(args.source, (address, port), protocol)
    if args.output == "json":
        output.write_json(ctx.out, {"allowed": allowed, "decided_by": rule})
        return
    src, dst = args.source, args.destination
    ctx.out.write(f"{'allowed' if allowed else 'denied'}: {src[0]}:{src[1]} -> {dst[0]}:{dst[1]} protocol {protocol}\n")
    if not steps:
        ctx.out.write("  neither address is an endpoint of this node: no ACL applies\n")
    for step in steps:
        d = step.decision
        ctx.out.write(f"  endpoint {step.endpoint} {step.direction}: {'allows' if d.allowed else 'denies'} ({d.why})")
        ctx.out.write(f": {json.dumps(d.rule)}\n" if d.rule is not None else "\n")
