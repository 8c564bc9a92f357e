"""``LIBHNS_SIM_FAULTS``: which simulated calls fail, and with which HRESULT.

Syntax: a comma-separated list of ``TARGET=HRESULT`` or ``TARGET#N=HRESULT``.
TARGET is a DLL export name (``HcnCreateEndpoint``, ``HcnModifyNamespace``,
``HcsOpenComputeSystem`` …) or ``HNSCall:METHOD PATH`` where PATH is an fnmatch pattern
(``HNSCall:POST /endpoints/``, ``HNSCall:POST /endpoints/*/attach``); bare ``HNSCall`` matches
every HNSCall. ``#N`` fails only the N-th matching call, counted across processes in the store
directory; without it every matching call fails. HRESULT is hex (``0x803B000D``) or decimal.
"""
from __future__ import annotations

import fnmatch
from dataclasses import dataclass

from libhns.errors import EnvError


@dataclass(frozen=True)
class Fault:
    target: str          # export name, or "HNSCall:METHOD PATTERN"
    hresult: int
    nth: int | None      # None: every call

    def matches(self, function: str, method: str | None = None, path: str | None = None) -> bool:
        if not self.target.startswith("HNSCall:"):
            return self.target == function
        if function != "HNSCall":
            return False
        want_method, _, pattern = self.target[len("HNSCall:"):].partition(" ")
        return (want_method.upper() == (method or "").upper()
                and fnmatch.fnmatchcase(path or "", pattern.strip() or "*"))


def parse_faults(spec: str) -> tuple[Fault, ...]:
    """Parse the env value; raises EnvError naming the bad entry."""
    faults = []
    for entry in (e.strip() for e in (spec or "").split(",")):
        if not entry:
            continue
        target, sep, code = entry.rpartition("=")
        if not sep or not target.strip():
            raise EnvError(f"LIBHNS_SIM_FAULTS: expected TARGET=HRESULT, got {entry!r}")
        target, _, nth_text = target.strip().partition("#")
        try:
            hresult = int(code.strip(), 0) & 0xFFFFFFFF
            nth = int(nth_text) if nth_text else None
        except ValueError:
            raise EnvError(f"LIBHNS_SIM_FAULTS: bad number in {entry!r}") from None
        if nth is not None and nth < 1:
            raise EnvError(f"LIBHNS_SIM_FAULTS: call numbers start at 1 in {entry!r}")
        faults.append(Fault(target.strip(), hresult, nth))
    return tuple(faults)
