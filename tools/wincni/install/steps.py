"""What ``wincni install`` does, as a closed set of typed steps: planned by ``plan`` (pure), carried
out by ``executor.StepExecutor`` (the only code that changes a CNI folder), printed by ``report``
with the ``word`` each kind of step names itself by.

A step names one entry and says why (``detail``, shown beside it). Planned steps are what is to
be done; ``Aside`` and ``Held`` are what the executor reports instead when Windows refuses a step
on a file in use; ``Keep`` and ``ClaimFolder`` change nothing here (the claim has already done, or in
a dry run would do, what a takeover says).

Deleting has two forms only: ``RemoveFile`` (one entry that is not a folder: a file, or a link
itself) and ``PurgeFolder`` (a folder and all in it, renamed to a trash name first).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal, Union

#: What a removal does when the entry is in use (Windows: a running launcher, a loaded DLL):
#: fail (the run stops), move a running launcher aside, or hold it (left for a later install).
InUse = Literal["fail", "aside", "hold"]


@dataclass(frozen=True)
class CopyFolder:
    """A build's contents folder laid as a fresh copy of ``source``; one there is replaced."""

    word: ClassVar[str] = "copy"  # what the table and the JSON call it
    path: str
    source: str
    detail: str = ""


@dataclass(frozen=True)
class CopyExe:
    """A launcher laid from ``source``: ``new`` where none was, else replacing it."""

    path: str
    source: str
    new: bool
    detail: str = ""

    @property
    def word(self) -> str:
        return "install" if self.new else "replace"


@dataclass(frozen=True)
class WriteFile:
    """``data`` written over ``path`` atomically (the config, the manifest)."""

    word: ClassVar[str] = "write"  # what the table and the JSON call it
    path: str
    data: bytes
    detail: str = ""


@dataclass(frozen=True)
class Disable:
    """A config containerd would load before ours, renamed to ``installed.DISABLED``'s name."""

    word: ClassVar[str] = "disable"  # what the table and the JSON call it
    path: str
    detail: str = ""


@dataclass(frozen=True)
class Restore:
    """A config install disabled (``source``) put back under its name ``path``."""

    word: ClassVar[str] = "restore"  # what the table and the JSON call it
    path: str
    source: str
    detail: str = ""


@dataclass(frozen=True)
class Quarantine:
    """An entry no administrator laid in the conf dir, moved into ``folder`` (made on first use)."""

    word: ClassVar[str] = "quarantine"  # what the table and the JSON call it
    path: str
    folder: str
    detail: str = ""


@dataclass(frozen=True)
class RemoveFile:
    word: ClassVar[str] = "remove"  # what the table and the JSON call it
    path: str
    detail: str = ""
    in_use: InUse = "fail"


@dataclass(frozen=True)
class PurgeFolder:
    word: ClassVar[str] = "remove"  # what the table and the JSON call it
    path: str
    detail: str = ""
    in_use: InUse = "fail"


@dataclass(frozen=True)
class Keep:
    """Left as it is: already what install would lay, or (uninstall) changed since install."""

    word: ClassVar[str] = "keep"  # what the table and the JSON call it
    path: str
    detail: str = ""


@dataclass(frozen=True)
class ClaimFolder:
    """A folder on the way claimed (``Disk.claim``): made admin-only, or ``moved`` aside and made anew."""

    path: str
    detail: str = ""
    moved: bool = False

    @property
    def word(self) -> str:
        return "quarantine" if self.moved else "takeover"


@dataclass(frozen=True)
class Aside:
    """A launcher to remove was running: renamed aside instead (``detail`` says where)."""

    word: ClassVar[str] = "aside"  # what the table and the JSON call it
    path: str
    detail: str = ""


@dataclass(frozen=True)
class Held:
    """Left in place because it is in use; a later install removes it."""

    word: ClassVar[str] = "held"  # what the table and the JSON call it
    path: str
    detail: str = ""


Step = Union[
    CopyFolder,
    CopyExe,
    WriteFile,
    Disable,
    Restore,
    Quarantine,
    RemoveFile,
    PurgeFolder,
    Keep,
    ClaimFolder,
    Aside,
    Held,
]
