"""What a self-test run is asked to do (``SelftestOptions``) and what it answers
(``SelftestOutcome`` and its exit statuses).

``wincni selftest`` (``command.py``) builds the options from its flags once; nothing below it
reads argparse or ``os.environ``: the environment, the platform and the streams come in through
the command line's one ``Context`` (``tools.wincni.cli.context``), the node's own facts, a RawHns
to use instead of opening the backend and a scratch folder as ``run``'s keywords (tests: fakes).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: The backends a run may be asked for: the in-process simulator; ctypes over the Wine lane's
#: fake DLLs (a dry run: proves the marshalling, not HNS); ctypes over the node's real HNS.
BACKENDS = ("sim", "fake", "hcn")
#: Every name this suite gives an HNS object starts with it: what it creates is told apart from
#: everything else on the node by it, and the leftover check looks for it.
PREFIX = "wincni-parity-"

OK = 0
#: A scenario's check failed, or the backend answered otherwise than the simulator.
DIFFERENT = 1
#: The run did not start: the backend asked for is not here (refused, one line saying why).
REFUSED = 2
#: Objects this run created (or an earlier run left) are still in HNS after the cleanup.
LEFTOVERS = 3


@dataclass(frozen=True)
class SelftestOptions:
    """``backend``: one of ``BACKENDS``. ``out``: the folder the report and the transcripts are
    written to (created admin-only; None: nothing written). ``adapter``: the host adapter the
    scenarios that bind a network to one (L2Bridge, Overlay) may use; without one they are not
    run on real HNS. ``allow_connected_adapter``: that adapter may be the one carrying the
    machine's own connection (a vSwitch on it blips it). ``scenarios``: names to run (empty: all).
    ``output``: the command's ``-o`` (table: the report's text; json: ``report.document``)."""

    backend: str = "sim"
    out: str | None = None
    adapter: str | None = None
    allow_connected_adapter: bool = False
    scenarios: tuple[str, ...] = ()
    output: str = "table"


@dataclass(frozen=True)
class SelftestOutcome:
    """The report (``report.Report``, or None when the run was refused), its text, the status."""

    report: Any
    text: str
    status: int
