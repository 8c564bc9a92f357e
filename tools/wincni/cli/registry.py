"""The one list of ``wincni``'s commands: name, help line, and the module that runs it.

A command's module is imported only when that command runs (or its ``--help`` is asked), as
pip's ``commands`` do: ``wincni dirs`` never pays for the doctor's imports. Each module has
``add_arguments(parser, platform)``, ``options(args, ctx)`` (the typed options: nothing below
reads argparse) and ``run(options, ctx) -> exit status``; one that refuses a flag's file in its
own words has ``refused(ctx, output, message)``. README's command list, deploy/'s command lines
and ARCHITECTURE's tool map are held to this list (``tests/unit/test_wincni_cli.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Command:
    name: str
    help: str
    module: str


COMMANDS = (
    Command("version", "this wincni's build, Python and platform", "tools.wincni.cli.version"),
    Command("doctor", "check this node's pod networking, with a fix for each problem", "tools.wincni.doctor.command"),
    Command(
        "bundle",
        "one bounded file of this node's CNI and HNS state, for an issue (no secrets)",
        "tools.wincni.doctor.archive.command",
    ),
    Command(
        "metrics",
        "the doctor's findings and HNS's counts as gauges for windows_exporter's textfile collector",
        "tools.wincni.doctor.metrics.command",
    ),
    Command(
        "install",
        "lay the plugins and the CNI config into containerd's CNI directories (upgrades under load)",
        "tools.wincni.install.command",
    ),
    Command(
        "sourcevip",
        "reserve kube-proxy's source VIP (overlay) in the pods' host-local store; print its flags",
        "tools.wincni.sourcevip.command",
    ),
    Command(
        "reclaim",
        "free what no pod holds: endpoints, reservations, saved configs (what CNI GC would do); "
        "--every: the node's sweep",
        "tools.wincni.reclaim.command",
    ),
    Command(
        "dirs",
        "where the runtime's CNI bin and conf folders are on this node, and why (what the other commands default to)",
        "tools.wincni.dirs.command",
    ),
    Command(
        "selftest",
        "run the HNS parity suite here: HNS's answers against the simulator's",
        "tools.wincni.selftest.command",
    ),
    Command(
        "netpol",
        "the NetworkPolicy node agent: keep this node's pod endpoint ACLs equal to the policies (runs until stopped)",
        "tools.wincni.netpol.command",
    ),
)
BY_NAME = {c.name: c for c in COMMANDS}


def load(name: str) -> Any:
    """The module of the command ``name``."""
    import importlib

    return importlib.import_module(BY_NAME[name].module)
