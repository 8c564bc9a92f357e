"""The parity suite's backend, from the environment as ``make test`` and ``make test-realhns`` set
it: ``LIBHNS_BACKEND`` (``sim``, the default here; ``hcn``: the node's real HNS, which refuses to
start anywhere else, before any test runs), ``WINCNI_PARITY_ADAPTER`` (the host adapter the
binding scenarios may use on real HNS), ``WINCNI_PARITY_ALLOW_CONNECTED_ADAPTER=1`` (that adapter
may carry the machine's connection) and ``WINCNI_PARITY_OUT`` (where the report and the
transcripts are written)."""

from __future__ import annotations

import os
import tempfile

import pytest

from paritybackend import context, parity_options
from tools.wincni.selftest.backends import Refused, open_backend

_SUMMARY: list[str] = []


def pytest_sessionstart(session: pytest.Session) -> None:
    """Real HNS is asked for only where it is: anywhere else the run stops here, saying why."""
    options = parity_options()
    if options.backend == "sim":
        return
    with tempfile.TemporaryDirectory() as scratch:
        try:
            open_backend(options.backend, context(dict(os.environ)), scratch)
        except Refused as r:
            pytest.exit(f"test-realhns: {r}", returncode=2)


@pytest.fixture(scope="session")
def summary() -> list[str]:
    """Lines printed at the end of the run (the scenarios and calls each backend ran)."""
    return _SUMMARY


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    for line in _SUMMARY:
        terminalreporter.write_line(line)
