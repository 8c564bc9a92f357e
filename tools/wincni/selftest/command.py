"""``wincni selftest``: the HNS parity suite (this package's ``run``) as a command: its flags into
``SelftestOptions``, the report to stdout (``-o json``: ``report.document`` through
``output.json_doc``), a refusal to stderr, and the run's exit status."""

from __future__ import annotations

import argparse

from basics.cli import Manual
from tools.wincni.cli.context import Context

from .options import SelftestOptions

MANUAL = Manual(
    does="Run the HNS parity self-test: each scenario (what wincni, flanneld and kube-proxy ask of HNS) "
    "runs on the backend asked for and on the simulator, and the report shows every answer that differs, "
    "field by field. Everything it makes is named wincni-parity-* and removed again. On a real node "
    "(--backend hcn) choose a node that can spare it: the scenarios that bind a network to an adapter run "
    "only on the one --adapter names.",
    elevated=True,
    exits=(
        (0, "HNS answered as the simulator does"),
        (1, "differences, or a failed check"),
        (2, "refused or a usage error: the run did not start (one line on stderr says why)"),
        (3, "leftovers: wincni-parity-* objects are still in HNS"),
    ),
    examples=('wincni selftest --backend hcn --adapter "Ethernet 2" --out C:\\selftest',),
)


def add_arguments(p: argparse.ArgumentParser, platform: str) -> None:
    from basics.cli import add_output

    from .options import BACKENDS

    p.add_argument(
        "--backend",
        choices=BACKENDS,
        default="hcn",
        help="hcn: the node's real HNS (default); fake: the Wine lane's fake DLLs (a dry run of the "
        "marshalling); sim: the simulator against itself",
    )
    p.add_argument("--out", metavar="DIR", help="write report.txt, report.json and the transcripts here (admin-only)")
    p.add_argument(
        "--adapter", metavar="NAME", help="the host adapter the binding scenarios may use (not run without one on hcn)"
    )
    p.add_argument(
        "--allow-connected-adapter",
        action="store_true",
        help="the adapter may be the one carrying this machine's connection (a vSwitch on it blips it)",
    )
    p.add_argument(
        "--scenario",
        action="append",
        default=[],
        metavar="NAME",
        dest="scenarios",
        help="run only this scenario (repeatable; default: all)",
    )
    add_output(p, "the report without the transcripts (report.json)")


def options(args: argparse.Namespace, ctx: Context) -> SelftestOptions:
    return SelftestOptions(
        backend=args.backend,
        out=args.out,
        adapter=args.adapter,
        allow_connected_adapter=args.allow_connected_adapter,
        scenarios=tuple(args.scenarios),
        output=args.output,
    )


def run(options: SelftestOptions, ctx: Context) -> int:
    from tools.wincni.cli.output import json_doc

    from . import report
    from . import run as selftest

    outcome = selftest(options, ctx)
    if outcome.report is None:
        ctx.stderr.write(outcome.text)
    elif options.output == "json":
        json_doc(ctx.stdout, report.document(outcome.report))
        ctx.stderr.write(outcome.text[len(report.text(outcome.report)) :])  # a report it could not write
    else:
        ctx.stdout.write(outcome.text)
    return outcome.status
