"""A check's verdict, the record ``wincni doctor`` prints and ``wincni install`` refuses or warns
on (``judge``), and the one way their fixes write a command for the node's shell."""

from __future__ import annotations

from dataclasses import dataclass

OK, WARN, FAIL, SKIP = "ok", "warn", "fail", "not-checked"
STATUSES = (OK, WARN, FAIL, SKIP)


#: The fix of a check that could not run because an earlier one failed: the table says it once.
AFTER_FAILURE = "fix the failure above first"


@dataclass(frozen=True)
class Check:
    """``fix`` is prose naming the file and what to set in it (or what else to do); ``run`` is a
    command, whole and alone with the node's paths filled in, that makes this check pass when run
    as printed on this node (tests/unit/test_wincni_doctor_fixes.py runs every one)."""

    id: str
    status: str
    message: str
    fix: str = ""
    run: str = ""


def command_line(windows: bool, tools: str, program: str, *args: str) -> str:
    r"""Our ``program`` (in ``tools``, the folder of the running frozen wincni, else on PATH) and
    ``args``, quoted for the node's shell (PowerShell on Windows, which runs a quoted program,
    ``C:\Program Files\…``, only after its call operator ``&``; unquoted, the line is the same
    for cmd)."""
    import ntpath
    import posixpath

    if tools:
        program = (ntpath if windows else posixpath).join(tools, program + (".exe" if windows else ""))
    if windows:
        from subprocess import list2cmdline

        line = list2cmdline([program, *args])
        return "& " + line if line.startswith('"') else line
    import shlex

    return shlex.join([program, *args])
