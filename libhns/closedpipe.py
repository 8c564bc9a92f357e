"""A closed stdout (``wincni doctor -o json | head -1``): every command ends quietly, as ``yes | head``
does: no traceback, no message, and the status a shell reports for a writer whose reader went away
(128 + SIGPIPE = 141; Python ignores SIGPIPE, so the write fails with EPIPE instead of killing us).

``hnsctl`` and ``wincni`` run their ``main`` through ``exit_with``; the plugins' ``console_entry``
calls ``end_closed`` when its result cannot be written (``plugins.cni.skel``), and imports this
module only then.
"""
import os
import sys

EXIT_CLOSED = 141  # 128 + SIGPIPE (13)


def exit_with(main) -> None:
    """``sys.exit(main())`` with stdout flushed inside; a closed stdout ends the process quietly."""
    try:
        status = main()
        sys.stdout.flush()
    except BrokenPipeError:
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
