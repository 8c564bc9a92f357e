"""Pick the raw HNS backend from the environment: real HNS on Windows, the simulator elsewhere.

Only this module reads ``LIBHNS_BACKEND``/``LIBHNS_JOURNAL``; the environment is passed in so
plugins (whose ``main`` receives ``env``) and tests choose without touching ``os.environ``.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Mapping

from libhns.raw import RawHns

BACKENDS = ("hcn", "sim")


#: On Windows the simulator also needs this set to 1: it ships in the package, and one variable
#: alone must not turn a real node into a simulated one.
ALLOW_SIMULATOR = "WINCNI_ALLOW_SIMULATOR"


def default_backend(platform: str | None = None) -> str:
    """``hcn`` on Windows, ``sim`` everywhere else."""
    return "hcn" if (platform or sys.platform) == "win32" else "sim"


def backend_name(env: Mapping[str, str], platform: str | None = None) -> str:
    """The backend ``env`` selects (as ``open_backend`` would, unchecked): for logs and the doctor."""
    return (env.get("LIBHNS_BACKEND") or "").strip().lower() or default_backend(platform)


def simulated_on_windows(env: Mapping[str, str], platform: str | None = None) -> bool:
    """Whether plugins run with ``env`` would use the simulator on a Windows node."""
    return (platform or sys.platform) == "win32" and backend_name(env, platform) == "sim"


def open_backend(env: Mapping[str, str] | None = None, platform: str | None = None, stderr: Any = None) -> RawHns:
    """The RawHns that ``LIBHNS_BACKEND`` names, journaled when ``LIBHNS_JOURNAL`` is set.

    On Windows, ``sim`` is refused unless ``WINCNI_ALLOW_SIMULATOR=1``, and then every run says
    on ``stderr`` (the runtime's log) that no real network is being made."""
    env = os.environ if env is None else env
    name = backend_name(env, platform)
    backend: RawHns
    if simulated_on_windows(env, platform):
        from libhns.errors import EnvError

        if env.get(ALLOW_SIMULATOR) != "1":
            raise EnvError(
                f"LIBHNS_BACKEND=sim selects the HNS simulator on a Windows node: set {ALLOW_SIMULATOR}=1 "
                "as well to really mean it (test nodes only), or unset LIBHNS_BACKEND for real HNS"
            )
        (stderr or sys.stderr).write(
            "wincni: warning: LIBHNS_BACKEND=sim: the HNS simulator runs instead of HNS; "
            "no real network or endpoint is made on this node\n"
        )
    if name == "hcn":
        from libhns.ctypes_backend import CtypesBackend

        backend = CtypesBackend()
    elif name == "sim":
        from libhns.sim import Simulator

        backend = Simulator.from_env(env)
    else:
        from libhns.errors import EnvError

        raise EnvError(f"LIBHNS_BACKEND={env.get('LIBHNS_BACKEND')!r} is not one of: " + ", ".join(BACKENDS))
    journal = env.get("LIBHNS_JOURNAL")
    if journal:
        from libhns.journal import JournalBackend

        backend = JournalBackend(backend, journal)
    return backend
