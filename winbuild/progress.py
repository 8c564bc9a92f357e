"""What a long build says while it runs: one line a step with its time, and of a tool's chatter
only the warnings a person can act on, the rest kept in a log file named at the end.

PyInstaller warns about every optional import it cannot find (modules of other platforms, what
the spec excludes on purpose), runtime hooks defined twice and icons it ignores off Windows; those
say nothing about the bundle. Under Wine it also cannot resolve the DLLs every Windows has (the
``api-ms-win-*`` API sets, bcryptprimitives.dll), which Windows provides at run time. What is kept,
once each: a hidden import or a data file it could not collect, any other missing binary
dependency, and every error.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

# A PyInstaller log line: "<ms> <LEVEL>: <message>".
_LEVEL = re.compile(r"^\d+ (WARNING|ERROR|CRITICAL): (.*)$")
# Warnings that name something the bundle lacks.
ACTIONABLE = re.compile(
    r"Hidden import .* not found|Library not found|could not find|Unable to find|failed to collect|"
    r"Failed to collect|Cannot find|not found: .*\.(dll|so|pyd)",
)


# DLLs of Windows itself, which a bundle never carries.
WINDOWS_DLLS = re.compile(r"could not resolve '(api-ms-win-[^']+|bcryptprimitives\.dll)'", re.I)


def actionable(log: str) -> list[str]:
    """The messages of a PyInstaller log a person must read, once each: errors, and the warnings
    ACTIONABLE names that are not about Windows' own DLLs."""
    kept: dict[str, None] = {}
    for line in log.splitlines():
        m = _LEVEL.match(line.strip())
        if not m:
            continue
        level, message = m.groups()
        if level != "WARNING" or (ACTIONABLE.search(message) and not WINDOWS_DLLS.search(message)):
            kept.setdefault(f"{level}: {message}")
    return list(kept)


@contextmanager
def step(what: str, out: TextIO = sys.stdout, clock: Callable[[], float] = time.monotonic) -> Iterator[None]:
    """``what ...`` now, ``done in N s`` (or ``failed after N s``) on the same line when it ends."""
    out.write(f"{what} ...")
    out.flush()
    began = clock()
    try:
        yield
    except BaseException:
        out.write(f" failed after {clock() - began:.0f} s\n")
        raise
    out.write(f" {clock() - began:.0f} s\n")
    out.flush()


def logged(argv: list[str], log: Path, **kwargs) -> subprocess.CompletedProcess:
    """Run ``argv`` with its output appended to ``log`` (and returned); on failure the output is
    shown, since then it is what a person reads first."""
    proc = subprocess.run(argv, capture_output=True, text=True, **kwargs)
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("a") as f:
        f.write(f"$ {' '.join(map(str, argv))}\n{proc.stdout}{proc.stderr}")
    if proc.returncode:
        sys.stderr.write(proc.stdout + proc.stderr)
        raise subprocess.CalledProcessError(proc.returncode, argv)
    return proc
