"""``LIBHNS_SIM_FAULTS``: which simulated calls misbehave, and how.

Syntax: a comma-separated list of ``TARGET=WHAT``, ``TARGET#N=WHAT`` or ``TARGET#N-M=WHAT``.
TARGET is a DLL export name (``HcnCreateEndpoint``, ``HcnModifyNamespace``,
``HcsOpenComputeSystem`` …) or ``HNSCall:METHOD PATH`` where PATH is an fnmatch pattern
(``HNSCall:POST /endpoints/``, ``HNSCall:POST /endpoints/*/attach``); bare ``HNSCall`` matches
every HNSCall. ``#N`` picks only the N-th matching call and ``#N-M`` the N-th to the M-th (``#1-3``:
the first three, as while HNS restarts), counted across processes in the store directory; without
it every matching call misbehaves. WHAT is one of:

- an HRESULT, hex (``0x800706BA``) or decimal: the call fails with it and changes nothing;
- ``hang:S``: the call blocks S seconds (a decimal number), then answers as usual;
- ``stale-ip`` / ``live-ip`` (endpoint creation: ``HcnCreateEndpoint``, ``HNSCall:POST
  /endpoints/``): just before the call, an endpoint named ``previous-<n>_<network>`` appears on
  the address the request asks for, left by a sandbox that is gone (attached to nothing) or, with
  ``live-ip``, attached to a namespace that still exists. The call then meets it as HNS would.
"""

from __future__ import annotations

from libhns.errors import EnvError

#: WHAT words that plant an endpoint on the requested address.
PLANTS = ("stale-ip", "live-ip")


class Fault:
    """One ``TARGET=WHAT`` entry: which calls it picks and what it does to them."""

    __slots__ = ("target", "hresult", "nth", "last", "hang", "plant")

    def __init__(
        self,
        target: str,
        hresult: int | None,
        nth: int | None,
        last: int | None = None,
        hang: float = 0.0,
        plant: str = "",
    ) -> None:
        self.target = target  # export name, or "HNSCall:METHOD PATTERN"
        self.hresult = hresult  # None: not a failure (hang or plant)
        self.nth = nth  # None: every call; else the first call number picked
        self.last = last  # the last call number picked (== nth for "#N")
        self.hang = hang  # seconds to block before answering
        self.plant = plant  # one of PLANTS

    def _key(self) -> tuple:
        return (self.target, self.hresult, self.nth, self.last, self.hang, self.plant)

    def __eq__(self, other: object) -> bool:
        return type(other) is Fault and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return "Fault" + repr(self._key())

    def matches(self, function: str, method: str | None = None, path: str | None = None) -> bool:
        if not self.target.startswith("HNSCall:"):
            return self.target == function
        if function != "HNSCall":
            return False
        import fnmatch  # only a run with HNSCall faults pays for it

        want_method, _, pattern = self.target[len("HNSCall:") :].partition(" ")
        return want_method.upper() == (method or "").upper() and fnmatch.fnmatchcase(path or "", pattern.strip() or "*")

    def picks(self, count: int) -> bool:
        """Whether the ``count``-th matching call is one this fault applies to."""
        return self.nth is None or self.nth <= count <= (self.last or self.nth)


def _what(entry: str, text: str) -> dict:
    text = text.strip()
    if text in PLANTS:
        return {"hresult": None, "plant": text}
    if text.startswith("hang:"):
        try:
            seconds = float(text[len("hang:") :])
        except ValueError:
            seconds = -1.0
        if not 0 <= seconds <= 3600:
            raise EnvError(f"LIBHNS_SIM_FAULTS: hang takes seconds (0-3600) in {entry!r}")
        return {"hresult": None, "hang": seconds}
    try:
        return {"hresult": int(text, 0) & 0xFFFFFFFF}
    except ValueError:
        raise EnvError(
            f"LIBHNS_SIM_FAULTS: expected an HRESULT, hang:SECONDS, {' or '.join(PLANTS)} in {entry!r}"
        ) from None


def parse_faults(text: str) -> tuple[Fault, ...]:
    """Parse the env value; raises EnvError naming the bad entry."""
    faults = []
    for entry in (e.strip() for e in (text or "").split(",")):
        if not entry:
            continue
        target, sep, what = entry.rpartition("=")
        if not sep or not target.strip():
            raise EnvError(f"LIBHNS_SIM_FAULTS: expected TARGET=HRESULT, got {entry!r}")
        target, _, nth_text = target.strip().partition("#")
        first, _, last_text = nth_text.partition("-")
        try:
            nth = int(first) if first else None
            last = int(last_text) if last_text else nth
        except ValueError:
            raise EnvError(f"LIBHNS_SIM_FAULTS: bad number in {entry!r}") from None
        if nth is not None and (nth < 1 or last is None or last < nth):
            raise EnvError(f"LIBHNS_SIM_FAULTS: call numbers start at 1 (#N or #N-M, N <= M) in {entry!r}")
        faults.append(Fault(target.strip(), nth=nth, last=last, **_what(entry, what)))
    return tuple(faults)
