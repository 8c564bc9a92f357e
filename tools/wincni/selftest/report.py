"""The parity report: per scenario what the simulator answered and what the backend answered,
field by field, the simulator's known limits, the traffic checks, and what is left in HNS.

``Report`` is plain data (the run fills it); ``text`` renders it for a person, ``document`` for
a machine (``report.json``); ``write`` lays the report and every transcript into the folder the
operator named, admin-only, each file by rename.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from typing import Any

from .compare import Difference

#: What the simulator does not do, so a run on it (or on the fake DLLs) cannot show it; a real
#: run's report lists them beside its differences.
KNOWN_LIMITS = (
    "no packets: ACLs, load balancers, routes and NAT are stored and shown, never enforced "
    "(the traffic checks are the only evidence of what HNS does with them)",
    "no vSwitch: a network bound to an adapter does not interrupt its connection, and an "
    "adapter's address is what LIBHNS_SIM_ADAPTERS says",
    "fields HNS adds for its own use (Health, Resources, ActivityId, time stamps, State beyond "
    "created/attached) are absent or simplified",
    "V1 hot attach needs a compute system the simulator registers by hand (HCS), not a running container",
    "the ACL default posture (Windows-Containers #616), rule tie-breaks and whether ACLs see "
    "Service traffic before or after DNAT are not modelled",
    "error messages are the HRESULT tables' sentences, not HNS's own wording",
)
#: The traffic checks a node with a container runtime would run between two containers on
#: endpoints this suite made.
TRAFFIC_CHECKS = (
    "a flow an ACL allows gets through",
    "a flow an ACL blocks does not",
    "the reply of an allowed flow comes back",
    "a node address reaches a pod",
    "a Service VIP reaches a selected pod",
)


@dataclass
class ScenarioResult:
    """``status``: passed, failed, or not run (``why`` says why)."""

    name: str
    what: str
    status: str
    why: str = ""
    checks: list[dict[str, Any]] = field(default_factory=list)
    calls: int = 0
    differences: list[Difference] = field(default_factory=list)
    transcript: dict[str, Any] | None = None
    simulator: dict[str, Any] | None = None


@dataclass
class Report:
    backend: str
    proves: str
    hns: dict[str, int]
    features: list[str]
    node: dict[str, Any]
    scenarios: list[ScenarioResult]
    leftovers: list[str]
    traffic: list[dict[str, str]]
    known_limits: tuple[str, ...] = KNOWN_LIMITS

    @property
    def calls(self) -> int:
        return sum(r.calls for r in self.scenarios)

    def count(self, status: str) -> int:
        return sum(1 for r in self.scenarios if r.status == status)

    @property
    def differing(self) -> list[ScenarioResult]:
        return [r for r in self.scenarios if r.differences]


def traffic_checks(backend: str, runtimes: list[str]) -> list[dict[str, str]]:
    """Each traffic check, not run, saying why: never reported as passed without having run."""
    if backend != "hcn":
        why = f"the {backend} backend makes no real endpoints to send traffic between"
    elif runtimes:
        why = f"a container runtime is here ({', '.join(runtimes)}), but this version has no traffic checks yet"
    else:
        why = "no container runtime on this node (containerd or Docker)"
    return [{"check": check, "status": "not run", "why": why} for check in TRAFFIC_CHECKS]


def text(report: Report) -> str:
    hns = f"{report.hns.get('Major')}.{report.hns.get('Minor')}"
    lines = [
        f"wincni self-test on the {report.backend} backend: {report.proves}",
        f"HNS {hns}; features: {', '.join(report.features) or 'none'}",
        "node: " + ", ".join(f"{k} {v}" for k, v in report.node.items()),
        f"{len(report.scenarios)} scenarios: {report.count('passed')} passed, {report.count('failed')} failed, "
        f"{report.count('not run')} not run; {report.calls} HNS calls; "
        f"{len(report.differing)} answered otherwise than the simulator",
        "",
    ]
    for r in report.scenarios:
        head = f"{r.status:8} {r.name}: {r.what}"
        lines.append(head + (f" ({r.why})" if r.why else f" ({r.calls} calls)"))
        for c in r.checks:
            if not c["ok"]:
                lines.append(f"           check failed: {c['check']}")
        for d in r.differences:
            lines.append(
                f"           call {d.call} {d.op}: {d.field}: simulator {d.simulator!r}, {report.backend} {d.backend!r}"
            )
    lines += ["", "traffic checks:"]
    lines += [f"  {t['status']}: {t['check']} ({t['why']})" for t in report.traffic]
    lines.append("left in HNS after the run: " + ("; ".join(report.leftovers) if report.leftovers else "nothing"))
    lines += ["", "what the simulator does not model (a difference there is expected until it does):"]
    lines += [f"  - {limit}" for limit in report.known_limits]
    return "\n".join(lines) + "\n"


def document(report: Report) -> dict[str, Any]:
    """``report.json``: the report without the transcripts (they are files of their own)."""
    doc = asdict(report)
    for r in doc["scenarios"]:
        r.pop("transcript")
        r.pop("simulator")
    return doc


def prepare(out: str) -> None:
    """Make ``out`` an admin-only folder (created when missing; an existing one must be one an
    administrator owns, reached without a link): before the run, so a folder the report may not
    go to stops it before HNS is touched. A folder others may write (a shared ``/tmp``, a group's
    folder, one whose ACL lets users add files) is refused, never taken: its mode and ACL stay."""
    from basics.errors import UnsafePath
    from basics.safefs import writable_by_others
    from tools.wincni.node.disk import Disk

    try:
        os.lstat(out)
    except FileNotFoundError:
        who = None  # made admin-only below
    else:
        who = writable_by_others(out)
    if who:
        raise UnsafePath(out, f"may be written by {who}", "a shared folder is never made admin-only")
    disk = Disk()
    try:
        disk.secure(out)
    finally:
        disk.close()


def write(report: Report, out: str) -> list[str]:
    """``out/report.txt``, ``out/report.json``, ``out/transcripts/<scenario>.json`` (the
    backend's) and ``out/simulator/<scenario>.json`` (the reference's): the folders made
    admin-only (``Disk.secure``), each file written beside and renamed over. The paths written."""
    from tools.wincni.node.disk import Disk

    files = {"report.txt": text(report).encode(), "report.json": _json(document(report))}
    for r in report.scenarios:
        for folder, doc in (("transcripts", r.transcript), ("simulator", r.simulator)):
            if doc is not None:
                files[f"{folder}/{r.name}.json"] = _json(doc)
    disk = Disk()
    written = []
    try:
        for folder in sorted({os.path.dirname(name) for name in files}):
            disk.secure(os.path.join(out, folder) if folder else out)
        for name, data in files.items():
            path = os.path.join(out, *name.split("/"))
            disk.write_atomic(path, data)
            written.append(path)
    finally:
        disk.close()
    return written


def _json(doc: Any) -> bytes:
    import json

    return (json.dumps(doc, indent=1, sort_keys=False, default=str) + "\n").encode()
