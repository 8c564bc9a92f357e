"""The doctor's report, live or replayed: the table (status, id, message, and for what is not ok
the command to run and the fix) or one JSON document; exit status 1 when a check failed."""

from __future__ import annotations

from typing import Mapping, TextIO

#: The table's status column: a check that could not run is neither passed nor warned about.
LABELS = {"ok": "OK", "warn": "WARN", "fail": "FAIL", "not-checked": "SKIP"}


def summary(checks: list) -> dict[str, int]:
    """How many checks ended in each status (``verdict.STATUSES``); only ``fail`` sets the exit code."""
    from tools.wincni.judge.verdict import STATUSES

    return {status: sum(c.status == status for c in checks) for status in STATUSES}


def render_table(checks: list, out: TextIO) -> None:
    """A check that waits on an earlier failure (``AFTER_FAILURE``) has no fix line of its own:
    the table says once, before the count, that those wait (off a node, most checks do)."""
    from tools.wincni.judge.verdict import AFTER_FAILURE

    width = max((len(c.id) for c in checks), default=0)
    waiting = 0
    for c in checks:
        out.write(f"{LABELS[c.status]:<4}  {c.id:<{width}}  {c.message}\n")
        if c.status != "ok" and c.run:
            out.write(f"{'':<4}  {'':<{width}}  run: {c.run}\n")
        if c.status == "not-checked" and c.fix == AFTER_FAILURE:
            waiting += 1
        elif c.status != "ok" and c.fix:
            out.write(f"{'':<4}  {'':<{width}}  fix: {c.fix}\n")
    if waiting:
        out.write(f"\n{waiting} checks were not checked because of the failures above: fix those, then run it again.\n")
    n = summary(checks)
    out.write(
        f"\n{len(checks)} checks: {n['ok']} ok, {n['fail']} failed, {n['warn']} warnings, {n['not-checked']} not checked\n"
    )


def report(results: list, looked: Mapping[str, str], chose: bool, output: str, stdout: TextIO) -> int:
    """``chose``: the doctor picked the folders, so the table says where it looked and why."""
    if output == "json":
        from tools.wincni.cli.output import json_doc

        json_doc(
            stdout,
            {
                "cniDirs": looked,
                "summary": summary(results),
                "checks": [
                    {"id": c.id, "status": c.status, "message": c.message, "fix": c.fix, "run": c.run} for c in results
                ],
            },
        )
    else:
        if chose:
            stdout.write(f"CNI config {looked['conf']}, plugins {looked['binDir']}: {looked['from']}\n\n")
        render_table(results, stdout)
    return 1 if any(c.status == "fail" for c in results) else 0
