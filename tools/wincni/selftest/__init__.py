"""``wincni selftest``: the parity suite, run on a node by its operator (or by CI).

Every scenario (``scenarios/``: networks, endpoints, policies, load balancers) runs twice: on
the backend asked for (``backends.py``: the simulator, the Wine lane's fake DLLs, or the node's
real HNS) and on a fresh reference simulator at the HNS version the backend reports; each run's
calls are its transcript (``transcript.py``) and the two are compared field by field
(``compare.py``) into the parity report (``report.py``).
What the suite makes is named with ``options.PREFIX`` and removed again (``session.py``); HNS is
read for that prefix before the run (an earlier run's leftovers stop it) and after.

``run(options, ctx)`` is the whole of it for the command (``command.py``): typed options and the
command line's ``Context`` in, a ``SelftestOutcome`` (the report, its text, the exit status) out.
"""

from __future__ import annotations

import shutil
import tempfile
from typing import Any, Callable

from tools.wincni.cli.context import Context

from .options import DIFFERENT, LEFTOVERS, OK, PREFIX, REFUSED, SelftestOptions, SelftestOutcome
from .session import leftovers

__all__ = ["SelftestOptions", "SelftestOutcome", "replay", "run"]

#: The adapter name the simulator and the fake DLLs bind networks to when none is named: nothing
#: real is bound there.
SIMULATED_ADAPTER = "Ethernet"
#: The longest adapter name taken: a Windows interface alias (NDIS_IF_MAX_STRING_SIZE).
MAX_ADAPTER = 256


def run(
    options: SelftestOptions,
    ctx: Context,
    *,
    node: Any = None,
    raw: Callable[[], Any] | None = None,
    scratch: str | None = None,
) -> SelftestOutcome:
    """The run: ``ctx.stderr`` gets a progress line per scenario, ``ctx.env`` the simulator's
    variables for ``sim``. ``node``: the node's own facts (default ``hostfacts.LiveHost``, or a
    fake); ``raw``: a RawHns to use instead of opening the backend (tests: the fake DLLs' stand-in);
    ``scratch``: a folder for the reference simulators (default: a temporary folder removed at the
    end)."""
    from basics.errors import UnsafePath
    from libhns.errors import HnsError

    from . import backends, report, scenarios
    from .backends import Refused

    unknown = [name for name in options.scenarios if name not in scenarios.BY_NAME]
    if unknown:
        return _refused(f"no scenario {unknown[0]!r}: choose from {', '.join(scenarios.BY_NAME)}")
    if options.adapter is not None and not (0 < len(options.adapter) <= MAX_ADAPTER and options.adapter.isprintable()):
        return _refused(f"an adapter name is 1 to {MAX_ADAPTER} printable characters (a Windows interface alias)")
    if options.out:
        try:
            report.prepare(options.out)  # before HNS is touched: a folder it may not write stops it
        except (OSError, UnsafePath) as e:
            return _refused(f"cannot write the report to {options.out}: {e}; name a new or an admin-only folder")
    own_scratch = scratch is None
    scratch = scratch or tempfile.mkdtemp(prefix="wincni-selftest-")
    started = False
    try:
        hns = backends.open_backend(options.backend, ctx, scratch, raw)
        version = _version(hns)
        before = leftovers(hns, PREFIX, [])
        if before:
            return _refused(
                f"HNS already holds objects named {PREFIX}* (an earlier run's?): {'; '.join(before)}; "
                "remove them (hnsctl network delete / endpoint delete) and run again",
                LEFTOVERS,
            )
        started = True
        return _scenarios(options, ctx, node, hns, version, scratch)
    except Refused as r:
        return _refused(str(r))
    except HnsError as e:  # outside a scenario: the version, the leftover checks
        if started:
            return _refused(f"HNS failed after the scenarios ran, so what they left is unknown: {e}", LEFTOVERS)
        return _refused(f"HNS failed before any scenario ran: {e}")
    finally:
        if own_scratch:
            shutil.rmtree(scratch, ignore_errors=True)


def _scenarios(
    options: SelftestOptions, ctx: Context, node: Any, raw, version: dict[str, int], scratch: str
) -> SelftestOutcome:
    """Each scenario on the backend and on its own reference simulator, then the report."""
    from basics.errors import UnsafePath
    from libhns.client import Features

    from . import backends, report, scenarios
    from .hostfacts import LiveHost

    node = node or LiveHost(ctx.env, ctx.platform)
    adapter, adapter_why = _adapter(options, node)
    chosen = [scenarios.BY_NAME[n] for n in options.scenarios] or list(scenarios.SCENARIOS)
    results, made = [], []
    for number, scenario in enumerate(chosen):
        if scenario.adapter and adapter is None:
            results.append(report.ScenarioResult(scenario.name, scenario.what, "not run", adapter_why))
            continue
        ctx.stderr.write(f"wincni selftest: {scenario.name}\n")
        mine, owned = _transcript(scenario, raw, adapter, options.backend, version)
        ref_raw = backends.reference((version["Major"], version["Minor"]), f"{scratch}/reference-{number}")
        theirs, _ = _transcript(scenario, ref_raw, adapter, "sim", version)
        made += owned
        results.append(_result(scenario, mine, theirs))
    left = leftovers(raw, PREFIX, made)
    features = Features.for_version((version["Major"], version["Minor"])).as_dict()
    rep = report.Report(
        backend=options.backend,
        proves=backends.PROVES[options.backend],
        hns=version,
        features=[name for name, on in features.items() if on],
        node=node.os(),
        scenarios=results,
        leftovers=left,
        traffic=report.traffic_checks(options.backend, node.runtimes()),
    )
    failed = any(r.status == "failed" or r.differences for r in results)
    status = LEFTOVERS if left else DIFFERENT if failed else OK
    text = report.text(rep)
    if options.out:
        try:
            report.write(rep, options.out)
        except (OSError, UnsafePath) as e:
            text += f"wincni selftest: cannot write the report to {options.out}: {e}\n"
            status = status or DIFFERENT
    return SelftestOutcome(rep, text, status)


def replay(transcript: dict, folder: str) -> list:
    """The transcript's scenario run again on a fresh simulator at the transcript's HNS version and
    adapter: every field where the simulator now answers otherwise (``compare.Difference``). A
    real run's transcripts kept as fixtures hold the simulator to what HNS answered."""
    from . import backends, scenarios
    from .compare import differences

    hns = transcript["hns"]
    scenario = scenarios.BY_NAME[transcript["scenario"]]
    raw = backends.reference((hns["Major"], hns["Minor"]), folder)
    again, _ = _transcript(scenario, raw, transcript.get("adapter"), "sim", hns)
    return differences(again["calls"], transcript["calls"])


def _refused(why: str, status: int = REFUSED) -> SelftestOutcome:
    return SelftestOutcome(None, f"wincni selftest: {why}\n", status)


def _version(raw) -> dict[str, int]:
    from basics import jsontext

    out = jsontext.loads(raw.hns_call("GET", "/globals/version", "")).get("Output") or {}
    return {"Major": int(out.get("Major", 0)), "Minor": int(out.get("Minor", 0))}


def _adapter(options: SelftestOptions, node) -> tuple[str | None, str]:
    """The adapter the binding scenarios may use, or None and why they are not run. On the
    simulator and the fake DLLs nothing real is bound; on real HNS only an adapter the operator
    named, and not the one carrying the machine's connection unless told so."""
    if options.backend != "hcn":
        return options.adapter or SIMULATED_ADAPTER, ""
    if not options.adapter:
        return None, "binds a network to a host adapter: name one the node can spare"
    connection = node.connection_adapter()
    if not options.allow_connected_adapter and (
        connection is None or connection.casefold() == options.adapter.casefold()
    ):
        seen = (
            f"{options.adapter} carries this machine's connection"
            if connection
            else "which adapter carries this machine's connection is unknown"
        )
        return None, f"{seen}: name another adapter, or allow the connected one"
    return options.adapter, ""


def _transcript(scenario, raw, adapter: str | None, backend: str, version: dict[str, int]) -> tuple[dict, list]:
    """Run one scenario on ``raw``: its transcript and the (kind, id) of what it made. A refusal
    the scenario did not ask for, or a scenario that stops, is a failed check; the cleanup runs
    whatever happened, and what it could not remove is a failed check too."""
    from libhns.errors import HnsError

    from .session import Session
    from .transcript import TranscriptRecorder, document

    recorder = TranscriptRecorder(raw)
    session = Session(recorder, PREFIX, adapter)
    try:
        scenario.run(session)
    except HnsError as e:
        session.check(f"HNS refused what the scenario needs: {e}", False)
    except (KeyError, TypeError, ValueError) as e:  # an answer of a shape the scenario did not expect
        session.check(f"the scenario stopped on an answer it could not read: {type(e).__name__}: {e}", False)
    finally:
        for problem in session.cleanup():
            session.check(f"removed what it made: {problem}", False)
    return document(scenario.name, backend, version, adapter, session.checks, recorder.calls), session.made


def _result(scenario, mine: dict, theirs: dict):
    from .compare import differences
    from .report import ScenarioResult

    failed = not all(c["ok"] for c in mine["checks"])
    return ScenarioResult(
        scenario.name,
        scenario.what,
        "failed" if failed else "passed",
        checks=mine["checks"],
        calls=len(mine["calls"]),
        differences=differences(theirs["calls"], mine["calls"]),
        transcript=mine,
        simulator=theirs,
    )
