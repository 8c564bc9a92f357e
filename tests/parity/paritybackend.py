"""The parity suite's options from the environment (tests/parity/conftest.py says which variables)."""

from __future__ import annotations

import io
import os
import sys
from typing import Mapping

from tools.wincni.cli.context import Context
from tools.wincni.selftest import SelftestOptions


def context(env: Mapping[str, str] | None = None, platform: str = sys.platform) -> Context:
    """The command line's ``Context`` a run gets: its progress lines kept in a ``StringIO``."""
    return Context(io.StringIO(), io.StringIO(), {} if env is None else env, platform, os.getcwd())


def parity_options() -> SelftestOptions:
    return SelftestOptions(
        backend=(os.environ.get("LIBHNS_BACKEND") or "sim").strip().lower(),
        out=os.environ.get("WINCNI_PARITY_OUT") or None,
        adapter=os.environ.get("WINCNI_PARITY_ADAPTER") or None,
        allow_connected_adapter=os.environ.get("WINCNI_PARITY_ALLOW_CONNECTED_ADAPTER") == "1",
    )
