"""What ``wincni install``'s claim does to a folder on the way it cannot trust, shared by the POSIX
walk (``posixfs``) and the Windows one (``winwalk``): the record of it, the name a folder moved
aside gets, and the one folder never moved nor taken, one a user lives in. Pure."""

from __future__ import annotations

import os

from basics.errors import UnsafePath

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Callable

#: The suffix of another user's folder moved aside by a claim (and of install's quarantine folder
#: for entries of the conf dir no administrator laid).
QUARANTINED = ".wincni-quarantine"
#: How often a folder moved aside may be made again by someone else before the claim gives up.
ASIDE_TRIES = 5


class Takeover:
    """A folder on the way a claim could not trust as it found it: ``aside`` is where it was moved
    (another user's: quarantined, never followed nor reused, a fresh one made in its place); ""
    for an administrator's folder others could write, closed where it stands."""

    __slots__ = ("path", "why", "aside")

    def __init__(self, path: str, why: str, aside: str = "") -> None:
        self.path, self.why, self.aside = path, why, aside

    def __repr__(self) -> str:
        return f"Takeover({self.path!r}, {self.why!r}, {self.aside!r})"


def refuse_home(here: str, why: str, homes: list[tuple[str, str]]) -> None:
    """UnsafePath when the folder ``here`` (untrusted for ``why``) is a user's home or holds one:
    it is never moved nor taken; the fix says to choose a folder outside it. ``homes``: (user,
    home folder) pairs; the file system's root is nobody's home."""
    here = os.path.normcase(here)
    for user, home in homes:
        home = os.path.normcase(os.path.normpath(home or os.sep))
        if os.path.dirname(home) != home and (home == here or home.startswith(here.rstrip(os.sep) + os.sep)):
            raise UnsafePath(
                here,
                f"{why}, and {user}'s home folder {'is' if home == here else 'lies in'} it",
                "install never takes a folder a user lives in: choose a folder outside it",
            )


def fresh(base: str, taken: Callable[[str], bool]) -> str:
    """``base``, or ``base.1``, ``base.2``…: the first name ``taken`` says nothing holds."""
    name, n = base, 0
    while taken(name):
        n += 1
        name = f"{base}.{n}"
    return name


def remade(path: str) -> UnsafePath:
    """The refusal of a folder someone makes again each time a claim moves it aside."""
    return UnsafePath(
        path,
        f"is made again by another user each time it is moved aside ({ASIDE_TRIES} times)",
        "find who keeps creating it; nothing was laid there",
    )
