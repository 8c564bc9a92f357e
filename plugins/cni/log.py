"""Logging that never touches stdout: warnings to stderr, optional JSON-lines debug file.

The debug log is on when ``WINCNI_LOG_FILE`` (env) or ``logFile`` (the runtime's config, never a
saved or delegated one) names a file. It is opened without following links, refused when another
user owns it, and created owner-only (``basics.safefs``): a refusal is one warning on stderr, and
the command goes on without the log.
Deliberately not the ``logging`` package: a plugin lives for one command, and start-up matters.
"""

from __future__ import annotations

import os
import sys
import time

from basics import jsontext

TYPE_CHECKING = False  # neither typing nor contextlib is worth its import time here
if TYPE_CHECKING:
    from typing import Any, TextIO

_state: dict[str, Any] = {"stderr": sys.stderr, "file": None, "fields": {}, "plugin": "wincni"}


def configure(plugin: str, stderr: TextIO | None = None, log_file: str | None = None, **fields: Any) -> None:
    _state["plugin"] = plugin
    if stderr is not None:
        _state["stderr"] = stderr
    if log_file:
        _state["file"] = log_file
    _state["fields"].update({k: v for k, v in fields.items() if v})


def enabled() -> bool:
    return bool(_state["file"])


def warning(msg: str, **fields: Any) -> None:
    """A line an operator should see in the kubelet/containerd log (runtimes capture our stderr)."""
    try:
        _state["stderr"].write(f"{_state['plugin']}: warning: {msg}\n")
        _state["stderr"].flush()
    except (OSError, ValueError):
        pass
    event("warning", msg=msg, **fields)


def forward(text: str) -> None:
    """Pass a child plugin's stderr through to ours, unchanged."""
    try:
        _state["stderr"].write(text if text.endswith("\n") else text + "\n")
        _state["stderr"].flush()
    except (OSError, ValueError):
        pass


def event(kind: str, **fields: Any) -> None:
    """One JSON line in the debug log, if enabled; failures to log never fail the command."""
    path = _state["file"]
    if not path:
        return
    record = {
        "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()) + f".{int(time.time() * 1000) % 1000:03d}Z",
        "plugin": _state["plugin"],
        "pid": os.getpid(),
        "event": kind,
        **_state["fields"],
        **fields,
    }
    from basics.safefs import UnsafePath, open_append

    try:
        line = (jsontext.dumps(record, default=str) + "\n").encode()
        fd = open_append(path)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)
    except UnsafePath as exc:
        _state["file"] = None
        warning(f"debug log disabled: {exc}")
    except OSError:
        pass


def reset() -> None:
    """For in-process tests: forget configuration between runs."""
    _state.update({"stderr": sys.stderr, "file": None, "fields": {}, "plugin": "wincni"})


class scope:
    """``with log.scope():`` a fresh state for one command run in-process (tests, in-process
    delegation); the caller's plugin name, log file and fields come back afterwards instead of
    leaking either way."""

    __slots__ = ("saved",)

    def __enter__(self) -> None:
        self.saved = {**_state, "fields": dict(_state["fields"])}
        reset()

    def __exit__(self, *exc: object) -> None:
        _state.update(self.saved)
