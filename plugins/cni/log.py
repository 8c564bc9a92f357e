"""Logging that never touches stdout: warnings to stderr, optional JSON-lines debug file.

The debug log is on when ``WINCNI_LOG_FILE`` (env) or ``logFile`` (the runtime's config, never a
saved or delegated one) names a file. It is opened without following links, refused when another
user owns it, and created owner-only, its folder admin-only when missing (``basics.safefs``): a
refusal is one warning on stderr, and the command goes on without the log. It is bounded: past
``MAX_BYTES`` (``WINCNI_LOG_MAX_BYTES``) it is renamed to ``<file>.1`` (the older one replaced),
so at most two such files exist however many pods start.
Deliberately not the ``logging`` package: a plugin lives for one command, and start-up matters.
"""

from __future__ import annotations

import os
import sys
import time

from basics import jsontext

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TextIO

#: How long a writer over the limit waits for another's rotation before appending anyway.
ROTATE_WAIT = 2.0
#: The size past which the debug log is rotated: a day of a busy node's pod commands.
MAX_BYTES = 10 << 20

_state: dict[str, Any] = {"stderr": sys.stderr, "file": None, "fields": {}, "plugin": "wincni", "max": MAX_BYTES}


def configure(
    plugin: str, stderr: TextIO | None = None, log_file: str | None = None, max_bytes: str | None = None, **fields: Any
) -> None:
    """``max_bytes``: ``WINCNI_LOG_MAX_BYTES`` as given (a positive whole number; else the default)."""
    _state["plugin"] = plugin
    if stderr is not None:
        _state["stderr"] = stderr
    if log_file:
        _state["file"] = log_file
    if max_bytes and max_bytes.isdigit() and int(max_bytes) > 0:
        _state["max"] = int(max_bytes)
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
    from basics.safefs import UnsafePath

    try:
        line = (jsontext.dumps(record, default=str) + "\n").encode()
        fd = _open(path)
        if os.fstat(fd).st_size + len(line) > _state["max"]:
            os.close(fd)
            _rotate(path, _state["max"])
            fd = _open(path)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)
    except UnsafePath as exc:
        _state["file"] = None
        warning(f"debug log disabled: {exc}")
    except OSError:
        pass


def _open(path: str) -> int:
    """The log for appending (one ``write`` a line: whole lines however many commands append at
    once); a missing folder is made admin-only first (``safefs.secure_dir``)."""
    from basics.safefs import open_append, secure_dir

    try:
        return open_append(path)
    except FileNotFoundError:
        secure_dir(os.path.dirname(os.path.abspath(path)))
        return open_append(path)


def _rotate(path: str, limit: int) -> None:
    """``path`` renamed to ``<path>.1`` (the older one replaced) by one writer at a time, under
    ``<path>.lock``, and only while the file is still over ``limit`` (the writer before may have
    just rotated it). A writer over the limit waits for that lock (a rename holds it for
    microseconds) rather than append past the bound while another rotates; one that opened the old
    file before the rename finishes its line in ``.1``: nothing is split. Past ``ROTATE_WAIT``
    seconds (a stalled rotator) the line is appended anyway: a log line is never worth a pod."""
    from .errors import CniError
    from .lock import FileLock

    try:
        with FileLock(path + ".lock", timeout=ROTATE_WAIT):
            if os.stat(path).st_size >= limit:
                os.replace(path, path + ".1")
    except (CniError, OSError):  # the rotator stalled, or the log cannot be rotated now: the next line tries again
        pass


def reset() -> None:
    """For in-process tests: forget configuration between runs."""
    _state.update({"stderr": sys.stderr, "file": None, "fields": {}, "plugin": "wincni", "max": MAX_BYTES})


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
