"""The parity suite's options from the environment (tests/parity/conftest.py says which variables)."""

from __future__ import annotations

import os

from tools.wincni.selftest import SelftestOptions


def parity_options() -> SelftestOptions:
    return SelftestOptions(
        backend=(os.environ.get("LIBHNS_BACKEND") or "sim").strip().lower(),
        out=os.environ.get("WINCNI_PARITY_OUT") or None,
        adapter=os.environ.get("WINCNI_PARITY_ADAPTER") or None,
        allow_connected_adapter=os.environ.get("WINCNI_PARITY_ALLOW_CONNECTED_ADAPTER") == "1",
    )
