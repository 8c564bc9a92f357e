"""The package ``wincni install`` lays: ``--from DIR``, ``--from ZIP`` (unpacked by the ``Disk``
into a scratch folder it deletes at the end of the run), else the folder of the running frozen
``wincni``. Only read: nothing here changes a CNI folder.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from tools.wincni.install.report import InstallError
from tools.wincni.node import installed
from tools.wincni.node.disk import Disk
from tools.wincni.node.flagfile import FlagFileError, named
from tools.wincni.node.installed import CONTENTS_PREFIX, is_contents, is_launcher

MAX_ZIP_BYTES, MAX_ZIP_ENTRIES = 512 << 20, 20000


@dataclass(frozen=True)
class PackageFolder:
    """A package folder: launchers beside one ``_wincni-<build>`` contents folder."""

    root: str
    build: str
    launchers: tuple[str, ...]

    @property
    def contents(self) -> str:
        return CONTENTS_PREFIX + self.build

    @classmethod
    def of(cls, root: str, files: Iterable[str], dirs: Iterable[str]) -> "PackageFolder":
        """ValueError naming what is wrong with the folder."""
        builds = sorted(d[len(CONTENTS_PREFIX) :] for d in dirs if is_contents(d))
        if len(builds) != 1:
            raise ValueError(
                f"{root} must hold exactly one {CONTENTS_PREFIX}<build> folder beside the executables, "
                f"found {len(builds)}"
                + (" (an _internal folder: a build older than wincni install)" if "_internal" in dirs else "")
            )
        launchers = tuple(sorted(f for f in files if is_launcher(f)))
        if not launchers:
            raise ValueError(f"{root} holds no executables")
        return cls(root, builds[0], launchers)


def open_package(source: str, disk: Disk) -> PackageFolder:
    """The package folder ``source`` names (its zip unpacked), else this wincni's own; InstallError
    naming the way out when there is none or it is not a package."""
    root = source
    if root and not disk.exists(root):
        raise InstallError(
            f"--from {root} does not exist: pass the release folder (make dist's dist/wincni, "
            "or the unpacked release zip) or the release zip"
        )
    if not root:
        from tools.wincni.node.build import frozen_dir

        root = frozen_dir()
        if not root:
            raise InstallError("this wincni runs from source, not from a release folder: pass --from DIR|ZIP")
    elif not disk.is_folder(root):
        root = _unpack(root, disk)
    files, dirs = disk.listdir(root)
    try:
        return PackageFolder.of(root, files, dirs)
    except ValueError as exc:
        raise InstallError(str(exc)) from None


def _unpack(path: str, disk: Disk) -> str:
    import zipfile

    try:
        with named("--from", path):
            return disk.unpack(path, MAX_ZIP_BYTES, MAX_ZIP_ENTRIES, installed.is_launcher)
    except FlagFileError as exc:
        raise InstallError(str(exc)) from None
    except ValueError as exc:
        raise InstallError(f"{path}: {exc}: not a wincni release zip") from None
    except zipfile.BadZipFile as exc:
        raise InstallError(f"cannot unpack {path}: {exc}") from None
