"""A closed stdout (``wincni doctor -o json | head -1``): every command ends quietly, as ``yes | head``
does: no traceback, no message, and the status a shell reports for a writer whose reader went away
(128 + SIGPIPE = 141; Python ignores SIGPIPE, so the write fails with EPIPE instead of killing us).
On Windows the same write fails with EINVAL (WriteFile's ERROR_NO_DATA as the C runtime maps it;
the Windows lane sees it under Wine), so there that counts too.

Only a failed write *to stdout* means that: ``GuardedStdout`` turns it into ``StdoutClosed``, which
no ``except OSError`` of a command mistakes for its own I/O failure. ``hnsctl`` and ``wincni`` run
their ``main`` through ``exit_with``; a plugin's ``skel`` raises ``StdoutClosed`` itself and its
``console_entry`` calls ``end_closed``. This module is on every plugin's start-up path: it imports
nothing beyond what the interpreter has loaded.
"""
import os
import sys

EXIT_CLOSED = 141  # 128 + SIGPIPE (13)


class StdoutClosed(Exception):
    """A write to stdout failed because its reader went away: nothing more can reach it."""


def reader_gone(exc: BaseException, platform: str = sys.platform) -> bool:
    """Whether a failed write to stdout means its reader went away."""
    import errno
    return isinstance(exc, BrokenPipeError) or (
        platform == "win32" and isinstance(exc, OSError) and exc.errno == errno.EINVAL)


class GuardedStdout:
    """A text stream whose ``write`` and ``flush`` raise ``StdoutClosed`` when the reader went away."""

    def __init__(self, stream) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except OSError as exc:
            if reader_gone(exc):
                raise StdoutClosed() from None
            raise

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as exc:
            if reader_gone(exc):
                raise StdoutClosed() from None
            raise

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


def exit_with(main) -> None:
    """``sys.exit(main(stdout))`` with a guarded stdout, flushed inside; a closed one ends the
    process quietly."""
    out = GuardedStdout(sys.stdout)
    try:
        status = main(out)
        out.flush()
    except StdoutClosed:
        end_closed()
    sys.exit(status)


def end_closed() -> None:
    """Leave now with ``EXIT_CLOSED``: ``os._exit`` skips the interpreter's final flush of stdout,
    which would fail again and print "Exception ignored ... BrokenPipeError"."""
    try:
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    os._exit(EXIT_CLOSED)
