"""What hnsctl prints: the one module that writes JSON (``-o json``) or a table to stdout, so every
command's output has one shape and one place to change it."""

from __future__ import annotations

import argparse
import json
from typing import Any, Mapping, Sequence, TextIO

from libhns.objects import HnsObject


def document(obj: HnsObject | Mapping[str, Any]) -> Any:
    """An HNS object as the JSON document HNS showed (a V1 policy list or container is one already)."""
    return obj.to_json() if isinstance(obj, HnsObject) else obj


def write_json(out: TextIO, value: Any) -> None:
    out.write(json.dumps(value, indent=2) + "\n")


def table(out: TextIO, headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """Columns padded to their widest cell, two spaces apart; None prints as nothing."""
    cells = [[str(h) for h in headers]] + [["" if c is None else str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    for r in cells:
        out.write("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() + "\n")


def show(out: TextIO, args: argparse.Namespace, obj: HnsObject | Mapping[str, Any]) -> None:
    """One object: its document (``-o json``) or one ``key: value`` line per top-level key."""
    doc = document(obj)
    if args.output == "json":
        write_json(out, doc)
        return
    for k, v in doc.items():
        out.write(f"{k}: {v if isinstance(v, (str, int, float)) else json.dumps(v)}\n")


def listing(out: TextIO, args: argparse.Namespace, objs: Sequence[Any], headers: Sequence[str], rows: Any) -> None:
    """Many objects: their documents (``-o json``), or a table of ``rows(objs)`` under ``headers``."""
    if args.output == "json":
        write_json(out, [document(o) for o in objs])
    else:
        table(out, headers, rows(objs))
