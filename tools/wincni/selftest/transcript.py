"""A scenario's transcript: every raw HNS call it made, in order, with what HNS answered.

The form (one JSON file per scenario, ``<scenario>.json``, in ``tests/data/parity``'s style):

    {"scenario": "network-overlay", "backend": "hcn", "hns": {"Major": 13, "Minor": 3},
     "adapter": "Ethernet", "checks": [{"check": "...", "ok": true}], "calls": [CALL, ...]}

and each CALL is the journal's line for it (``libhns/journal.py``, ``LIBHNS_JOURNAL``) without
its time stamp and duration: ``api`` (``v1``/``v2``), ``op`` (the DLL export), ``method`` and
``path`` (HNSCall), ``id`` (the object, where known), ``request`` and ``response`` (documents,
parsed when JSON), ``hresult`` (``0x…``, ``0x00000000`` for success; None when the call raised
before HNS answered) and, for a failed call, ``error`` (the message). A V1 refusal is a success
whose ``response`` holds ``{"Success": false, ...}``, as HNSCall answers it.
"""

from __future__ import annotations

from typing import Any

from libhns.journal import JournalBackend
from libhns.raw import RawHns

#: The journal's keys that differ every run and say nothing about HNS's answer.
_UNRECORDED = ("ts", "ms")


class TranscriptRecorder(JournalBackend):
    """The journal's wrapper, its lines kept in ``calls`` instead of a file."""

    def __init__(self, inner: RawHns) -> None:
        super().__init__(inner, "")
        self.calls: list[dict[str, Any]] = []

    def _write(self, entry: dict[str, Any]) -> None:
        self.calls.append({k: v for k, v in entry.items() if k not in _UNRECORDED and v is not None})


def document(
    scenario: str, backend: str, hns: dict[str, int], adapter: str | None, checks: list[dict], calls: list[dict]
) -> dict:
    """One scenario's transcript file (``adapter``: the host adapter its networks were bound to)."""
    return {"scenario": scenario, "backend": backend, "hns": hns, "adapter": adapter, "checks": checks, "calls": calls}
