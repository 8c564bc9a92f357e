"""Pick the raw HNS backend from the environment: real HNS on Windows, the simulator elsewhere.

Only this module reads ``LIBHNS_BACKEND``/``LIBHNS_JOURNAL``; the environment is passed in so
plugins (whose ``main`` receives ``env``) and tests choose without touching ``os.environ``.
"""
from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from libhns.raw import RawHns

BACKENDS = ("hcn", "sim")


def default_backend() -> str:
    """``hcn`` on Windows, ``sim`` everywhere else."""
    return "hcn" if sys.platform == "win32" else "sim"


def open_backend(env: Mapping[str, str] | None = None) -> RawHns:
    """The RawHns that ``LIBHNS_BACKEND`` names, journaled when ``LIBHNS_JOURNAL`` is set."""
    env = os.environ if env is None else env
    name = (env.get("LIBHNS_BACKEND") or "").strip().lower() or default_backend()
    backend: RawHns
    if name == "hcn":
        from libhns.ctypes_backend import CtypesBackend

        backend = CtypesBackend()
    elif name == "sim":
        from libhns.sim import Simulator

        backend = Simulator.from_env(env)
    else:
        from libhns.errors import EnvError

        raise EnvError(f"LIBHNS_BACKEND={env.get('LIBHNS_BACKEND')!r} is not one of: "
                         + ", ".join(BACKENDS))
    journal = env.get("LIBHNS_JOURNAL")
    if journal:
        from libhns.journal import JournalBackend

        backend = JournalBackend(backend, journal)
    return backend
