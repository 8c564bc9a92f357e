"""``wincni metrics --textfile DIR``: the doctor's findings and HNS's counts as Prometheus gauges,
in the file windows_exporter's textfile collector reads (``DIR/wincni.prom``).

``gauges`` is pure (facts and checks in, samples out) and ``exposition`` writes the text format
(version 0.0.4: HELP and TYPE before each family's samples, label values escaped); ``run`` gathers,
writes the file new and renames it into the folder, which is left as it is (``basics.outputfile``:
the collector never reads half a file, and its temp name does not end in ``.prom``), and with ``--every`` does it
again on that interval. A count that could not be read is left out, never written as 0: a missing
series is "unknown", a 0 is a fact. A not-checked check is kept apart from ok/warn/fail
(``wincni_check_not_checked``), so it never reads as a pass.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import TextIO

from basics.cli import Manual
from tools.wincni.cli.context import Context
from tools.wincni.doctor.metrics.gauges import exposition, gauges
from tools.wincni.doctor.options import NodeFiles

MANUAL = Manual(
    does="Write the doctor's findings and HNS's counts as Prometheus gauges into wincni.prom in "
    "windows_exporter's textfile folder; --every: again on that interval (the DaemonSet's metrics "
    "container). A count that could not be read is left out, never written as 0.",
    elevated=True,
    exits=(
        (0, "written (--every: stopped)"),
        (1, "the file could not be written, or a flag's file was refused"),
        (2, "a usage error"),
    ),
    examples=('wincni metrics --textfile "C:\\Program Files\\windows_exporter\\textfile_inputs" --every 300',),
)


FILE = "wincni.prom"


@dataclass(frozen=True)
class MetricsOptions:
    files: NodeFiles
    textfile: str  # the collector's folder
    every: float = 0  # seconds between writes; 0: once


def add_arguments(p: argparse.ArgumentParser, platform: str) -> None:
    from basics.cli import DIR
    from tools.wincni.cli.flags import seconds
    from tools.wincni.doctor.options import add_node_files

    add_node_files(p, platform)
    p.add_argument(
        "--textfile",
        type=DIR,
        required=True,
        metavar="DIR",
        help=f"windows_exporter's --collector.textfile.directories folder: {FILE} is written there",
    )
    p.add_argument(
        "--every",
        type=seconds,
        default=0,
        metavar="SECONDS",
        help="write it again every SECONDS until stopped (default 0: once)",
    )


def options(args: argparse.Namespace, ctx: Context) -> MetricsOptions:
    """FlagFileError: --containerd-config given and refused."""
    from tools.wincni.doctor.options import node_files
    from tools.wincni.node.dirs import where

    found = where(args.containerd_config, ctx.platform, ctx.env, strict=True)
    return MetricsOptions(node_files(args, found, ctx.platform, ctx.env), args.textfile, args.every)


def run(options: MetricsOptions, ctx: Context, rounds: int | None = None) -> int:
    """Write the file once, or (``--every``) every so often, ``rounds`` times when given (tests);
    1 when the last round could not write it or a file a flag names was refused (said on stderr;
    the gauges say what that cost)."""
    import os

    from tools.wincni.doctor.archive.recorder import Recorder
    from tools.wincni.doctor.checks import registry as checks
    from tools.wincni.doctor.gather import gather

    path = os.path.join(options.textfile, FILE)
    status, done = 0, 0
    while True:
        recorder = Recorder()  # to say which of the flags' files were refused
        found = gather(options.files, ctx.env, ctx.platform, ctx.cwd, recorder)
        status = write(path, exposition(gauges(found, checks.run(found))), ctx.stderr)
        for why in recorder.refused():
            ctx.stderr.write(f"wincni metrics: refused {why}\n")
            status = 1
        done += 1
        if not options.every or (rounds is not None and done >= rounds):
            break
        ctx.sleep(options.every)
    if status == 0:
        ctx.stdout.write(f"{path}\n")
    return status


def write(path: str, text: str, stderr: TextIO) -> int:
    """``text`` into ``path`` atomically, an admin-only file of ours; the folder is left as it is."""
    from basics import outputfile

    try:
        outputfile.write(path, text.encode())
    except OSError as exc:
        stderr.write(f"wincni metrics: cannot write {path}: {exc}\n")
        return 1
    return 0
