"""The files the operator's flags name (``basics.cli.FILE``), read through ``basics.inputfile``:
never waited on, never through another user's link, never more than a cap. An error names the
flag and the path, and quotes nothing of a file no administrator owns (``quote``)."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Callable, Iterator

from basics import inputfile
from basics.errors import UnsafePath
from basics.inputfile import Input

Source = Callable[[str, int], "Input | None"]  # inputfile.read; a test's files


class FlagFileError(Exception):
    """The file a flag names cannot be used: the message names the flag, the path and why."""


def read(flag: str, path: str, cap: int, source: Source = inputfile.read) -> Input | None:
    """The file ``path`` the flag ``flag`` names, at most ``cap`` bytes; None when absent."""
    with named(flag, path):
        return source(path, cap)


@contextmanager
def named(flag: str, path: str) -> Iterator[None]:
    """A refusal (``UnsafePath``) or an error reading ``path`` inside, as a FlagFileError naming ``flag``."""
    try:
        yield
    except UnsafePath as exc:
        raise FlagFileError(f"{flag} {exc}") from None
    except OSError as exc:
        raise FlagFileError(f"{flag} {path}: cannot read it: {exc.strerror or exc}") from None


def quote(message: str, *read: tuple[str, Input | None]) -> str:
    """``message``, which may quote the files ``read`` (flag, what was read), when administrators
    own them all; else one that says which file, not what is in it."""
    flag, found = next(((f, i) for f, i in read if i is not None and not i.admins), ("", None))
    if found is None:
        return message
    return (
        f"{flag} {found.path} cannot be used, and it is owned by {found.owner}, not by an administrator: "
        "what is wrong is not shown, as it could quote the file; check it, or give it to an administrator"
    )


class Reader:
    """``read(path, cap) -> bytes | None`` for a loader taking one (``containerd.locate``) on the
    file of ``flag``, keeping what it read for ``quote``. Such a loader asks for one byte more
    than it takes, to tell a file too large: here that file is refused, naming the real cap."""

    def __init__(self, flag: str, source: Source = inputfile.read) -> None:
        self.flag, self.source, self.found = flag, source, None

    def __call__(self, path: str, cap: int) -> bytes | None:
        self.found = read(self.flag, path, cap - 1, self.source)
        return self.found.data if self.found else None

    def quote(self, message: str) -> str:
        return quote(message, (self.flag, self.found))
