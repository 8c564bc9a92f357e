"""winbuild/progress.py: one line a step with its time; of PyInstaller's log, only what a person
must act on."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

from winbuild import progress

# What `make dist` printed (24 warnings: these two kinds, several times each), and what would matter.
NOISE = """971 WARNING: Runtime hooks for inspect have already been defined. Skipping the runtime hooks for inspect that are defined in /x/PyInstaller/hooks/rthooks.
8592 WARNING: Ignoring icon; supported only on Windows and macOS!
38865 WARNING: Library not found: could not resolve 'api-ms-win-crt-heap-l1-1-0.dll', dependency of 'Z:\\python313.dll'.
38886 WARNING: Library not found: could not resolve 'bcryptprimitives.dll', dependency of 'Z:\\rpds.pyd'.
59 INFO: PyInstaller: 6.22.3, contrib hooks: 2026.10
"""
MATTERS = [
    "1200 WARNING: Hidden import 'plugins.win_bridge.handlers' not found",
    "3000 WARNING: Library not found: could not resolve 'libffi-8.dll'",
    "4000 ERROR: Unable to find '/x/plugins/winnet/schema.json' when adding binary and data files.",
]


def test_only_actionable_lines_are_kept_once_each() -> None:
    assert progress.actionable(NOISE) == []
    kept = [line.split(" ", 1)[1] for line in MATTERS]
    assert progress.actionable(NOISE + "\n".join(MATTERS + MATTERS)) == kept


def test_a_step_is_one_line_with_its_time() -> None:
    out, ticks = io.StringIO(), iter([10.0, 22.4])
    with progress.step("PyInstaller", out, clock=lambda: next(ticks)):
        pass
    assert out.getvalue() == "PyInstaller ... 12 s\n"


def test_a_failed_step_says_so() -> None:
    out, ticks = io.StringIO(), iter([0.0, 3.0])
    with pytest.raises(ValueError), progress.step("apt", out, clock=lambda: next(ticks)):
        raise ValueError("no")
    assert out.getvalue() == "apt ... failed after 3 s\n"


def test_a_logged_run_keeps_its_output_in_the_log_and_shows_it_only_on_failure(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    log = tmp_path / "build" / "tool.log"
    progress.logged([sys.executable, "-c", "print('chatter')"], log)
    assert "chatter" in log.read_text() and capsys.readouterr().err == ""
    with pytest.raises(subprocess.CalledProcessError):
        progress.logged([sys.executable, "-c", "import sys; print('why'); sys.exit(3)"], log)
    assert "why" in capsys.readouterr().err and log.read_text().count("$ ") == 2
