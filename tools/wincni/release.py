"""The release ``wincni install`` lays: ``--from DIR``, ``--from ZIP`` (unpacked by the ``Disk``
into a scratch folder it deletes at the end of the run), else the folder of the running frozen
``wincni``. Only read: nothing here changes a CNI folder.
"""

from __future__ import annotations

from . import layout
from .disk import Disk
from .flagfile import FlagFileError, named
from .report import InstallError

MAX_ZIP_BYTES, MAX_ZIP_ENTRIES = 512 << 20, 20000


def open_release(source: str, disk: Disk) -> layout.Bundle:
    """The release folder ``source`` names (its zip unpacked), else this wincni's own; InstallError
    naming the way out when there is none or it is not a release."""
    root = source
    if root and not disk.exists(root):
        raise InstallError(
            f"--from {root} does not exist: pass the release folder (make dist's dist/wincni, "
            "or the unpacked release zip) or the release zip"
        )
    if not root:
        from .facts import frozen_dir

        root = frozen_dir()
        if not root:
            raise InstallError("this wincni runs from source, not from a release folder: pass --from DIR|ZIP")
    elif not disk.is_folder(root):
        root = _unpack(root, disk)
    files, dirs = disk.listdir(root)
    try:
        return layout.Bundle.of(root, files, dirs)
    except ValueError as exc:
        raise InstallError(str(exc)) from None


def _unpack(path: str, disk: Disk) -> str:
    import zipfile

    try:
        with named("--from", path):
            return disk.unpack(path, MAX_ZIP_BYTES, MAX_ZIP_ENTRIES, layout.is_launcher)
    except FlagFileError as exc:
        raise InstallError(str(exc)) from None
    except ValueError as exc:
        raise InstallError(f"{path}: {exc}: not a wincni release zip") from None
    except zipfile.BadZipFile as exc:
        raise InstallError(f"cannot unpack {path}: {exc}") from None
