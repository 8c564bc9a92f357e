"""The options several hnsctl commands share, declared once."""

from __future__ import annotations

import argparse
from typing import Any

#: Every command's exit statuses (``cli.main`` sets them).
EXITS = (
    (0, "done"),
    (1, "HNS refused or failed, or a file could not be read: one line on stderr says why"),
    (2, "a usage error, or a simulator-only command on real HNS"),
)


def add_output(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """``-o table|json`` and ``--v1``, which every command takes."""
    p.add_argument(
        "-o", "--output", choices=("table", "json"), default="table", help="table (default) or json documents"
    )
    p.add_argument("--v1", action="store_true", help="the V1 (HNSCall) view")
    return p


def show_and_delete(group: Any, kind: str, ref: str, several: str = "") -> None:
    """``show`` (one object's document) and ``delete`` (one or more) of a ``kind``."""
    what = {"loadbalancer": "load balancer", "policylist": "policy list"}.get(kind, kind)
    p = group.add_parser("show", help=f"print one {what}'s document")
    p.add_argument(kind, help=ref)
    add_output(p)
    p = group.add_parser("delete", help=f"delete {what}s")
    p.add_argument(kind, nargs="+", help=ref + several)
    add_output(p)


def show_and_delete_one(group: Any, kind: str, ref: str) -> None:
    """``show`` and ``delete`` of one ``kind`` at a time (a network, a namespace)."""
    for action, what in (("show", f"print one {kind}'s document"), ("delete", f"delete a {kind}")):
        p = group.add_parser(action, help=what)
        p.add_argument(kind, help=ref)
        add_output(p)


def port(text: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise argparse.ArgumentTypeError(f"not a port: {text!r}")
    return int(text)
