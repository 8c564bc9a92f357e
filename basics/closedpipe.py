"""A closed stdout (``wincni doctor -o json | head -1``): every command ends quietly, as ``yes | head``
does: no traceback, no message, and the status a shell reports for a writer whose reader went away
(128 + SIGPIPE = 141; Python ignores SIGPIPE, so the write fails with EPIPE instead of killing us).
On Windows the same write fails with EINVAL (WriteFile's ERROR_NO_DATA as the C runtime maps it;
the Windows lane sees it under Wine), so there that counts too.

Only a failed write *to stdout* means that: ``GuardedStdout`` turns it into ``StdoutClosed``, which
no ``except OSError`` of a command mistakes for its own I/O failure; any other failure to write
stdout (a full disk) is ``StdoutFailed``: one line on stderr, status 1. ``hnsctl`` and ``wincni`` run
their ``main`` through ``exit_with``; a plugin's ``skel`` raises ``StdoutClosed`` itself and its
``console_entry`` calls ``end_closed``. This module is on every plugin's start-up path: it imports
nothing beyond what the interpreter has loaded.
"""

import os
import sys

EXIT_CLOSED = 141  # 128 + SIGPIPE (13)


class StdoutClosed(Exception):
    """A write to stdout failed because its reader went away: nothing more can reach it."""


class StdoutFailed(Exception):
    """A write to stdout failed for another reason (``> /dev/full``: a full disk): a real error,
    said in one line on stderr with status 1, never mistaken for a closed pipe nor a traceback."""

    def __init__(self, exc: OSError) -> None:
        super().__init__(f"cannot write to stdout: {exc.strerror or exc}")


def reader_gone(exc: BaseException, platform: str = sys.platform) -> bool:
    """Whether a failed write to stdout means its reader went away."""
    import errno

    return isinstance(exc, BrokenPipeError) or (
        platform == "win32" and isinstance(exc, OSError) and exc.errno == errno.EINVAL
    )


class GuardedStdout:
    """A text stream whose ``write`` and ``flush`` raise ``StdoutClosed`` when the reader went away."""

    def __init__(self, stream) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except OSError as exc:
            raise failed(exc) from None

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as exc:
            raise failed(exc) from None

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


def failed(exc: OSError) -> Exception:
    """What a failed write to stdout is: ``StdoutClosed`` or ``StdoutFailed``."""
    return StdoutClosed() if reader_gone(exc) else StdoutFailed(exc)


def exit_with(main) -> None:
    """``sys.exit(main(stdout))`` with a guarded stdout, flushed inside; a closed one ends the
    process quietly, one that fails otherwise with its error in one line."""
    out = GuardedStdout(sys.stdout)
    try:
        status = main(out)
        out.flush()
    except StdoutClosed:
        end_closed()
    except StdoutFailed as exc:
        end_failed(exc)
    sys.exit(status)


def end_closed() -> None:
    """Leave now with ``EXIT_CLOSED``: ``os._exit`` skips the interpreter's final flush of stdout,
    which would fail again and print "Exception ignored ... BrokenPipeError"."""
    _leave(EXIT_CLOSED)


def end_failed(exc: StdoutFailed) -> None:
    """Say why on stderr (named as the program) and leave with 1, past the final flush too."""
    try:
        sys.stderr.write(f"{os.path.basename(sys.argv[0]) or 'wincni'}: {exc}\n")
    except (OSError, ValueError):
        pass
    _leave(1)


def _leave(status: int) -> None:
    try:
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    os._exit(status)
