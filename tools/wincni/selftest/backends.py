"""The backend a run is asked for, opened only where it really is what it says, and the
reference simulators the parity report compares it with.

- ``sim``: the simulator, in a fresh folder of the run's own (never the node's simulator state).
- ``fake``: ctypes over a stand-in computenetwork.dll that says so (the Wine lane's fake DLLs
  export ``WincniFakeHns``): a dry run of the operator's version; proves the marshalling only.
- ``hcn``: ctypes over the real DLLs, on Windows only, and refused when the DLL answers the
  stand-in's marker: the fake is told apart by asking it, never by guessing.

Every refusal is one line saying why and what to do (``Refused``).
"""

from __future__ import annotations

import os
from typing import Callable

from libhns.errors import HnsError
from libhns.raw import RawHns
from tools.wincni.cli.context import Context

#: What each backend's run proves, for the report's first lines.
PROVES = {
    "sim": "the simulator against itself: the suite and its transcripts work (no HNS involved)",
    "fake": "the ctypes path (marshalling, handles, CoTaskMem strings) through the fake DLLs to the "
    "simulator: this proves the marshalling, not HNS",
    "hcn": "real HNS against the simulator, call by call",
}
#: The simulator's variables a ``sim`` run keeps from the environment (its HNS version and the
#: node's adapters); its folder is always its own, and faults are never taken.
_SIM_VARIABLES = ("LIBHNS_SIM_VERSION", "LIBHNS_SIM_ADAPTERS")


class Refused(Exception):
    """The backend asked for is not here; the message says why and what to do instead."""


def refusal(backend: str, platform: str, marker: str | None) -> str | None:
    """Why ``backend`` may not run on ``platform`` whose computenetwork.dll answered ``marker``
    (None: no stand-in); None when it may."""
    if backend in ("fake", "hcn") and platform != "win32":
        return f"the {backend} backend calls computenetwork.dll, which exists only on Windows (this is {platform}); use the sim backend here"
    if backend == "hcn" and marker is not None:
        return f"computenetwork.dll here is not HNS but a stand-in ({marker}); refusing to call it real HNS (the fake backend is its dry run)"
    if backend == "fake" and marker is None:
        return "computenetwork.dll here answers no stand-in marker: it is real HNS; the fake backend is only for the Wine lane's fake DLLs (use hcn on a spare node)"
    return None


def open_backend(backend: str, ctx: Context, scratch: str, raw: Callable[[], RawHns] | None = None) -> RawHns:
    """The RawHns of ``backend``, checked: ``Refused`` when it is not here or does not answer.
    ``raw``: what to open instead of the simulator or the DLLs (tests: a stand-in)."""
    from .options import BACKENDS

    if backend not in BACKENDS:
        raise Refused(f"no backend {backend!r}: choose from {', '.join(BACKENDS)}")
    if backend == "sim" and raw is not None:
        return raw()
    if backend == "sim":
        from libhns.sim import Simulator

        env = {k: ctx.env[k] for k in _SIM_VARIABLES if ctx.env.get(k)}
        return Simulator.from_env({**env, "LIBHNS_SIM_DIR": os.path.join(scratch, "backend")})
    why = refusal(backend, ctx.platform, None) if ctx.platform != "win32" else None
    if why:
        raise Refused(why)
    opened = raw() if raw is not None else _ctypes_backend()
    try:
        marker = opened.stand_in()
    except OSError as e:
        raise Refused(
            f"computenetwork.dll cannot be loaded ({e}): HNS is not on this node (the Containers feature?)"
        ) from None
    why = refusal(backend, ctx.platform, marker)
    if why:
        raise Refused(why)
    try:
        opened.hns_call("GET", "/globals/version", "")
    except HnsError as e:
        raise Refused(f"HNS does not answer ({e}): run as administrator, with the HNS service running") from None
    return opened


def _ctypes_backend() -> RawHns:
    from libhns.ctypes_backend import CtypesBackend

    return CtypesBackend()


def reference(version: tuple[int, int], folder: str) -> RawHns:
    """A fresh simulator at the backend's HNS version: what the simulator answers the same calls."""
    from libhns.sim import Simulator

    return Simulator(folder, version=version)
