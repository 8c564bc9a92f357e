"""What in the CNI bin dir an administrator can vouch for: the manifest ``wincni install`` wrote,
read only as it may be trusted, and the doctor's audit of the folder built on it."""

from __future__ import annotations

import os

from basics.errors import UnsafePath

from . import layout
from .disk import Disk
from .layout import Manifest


def read_manifest(disk: Disk, path: str, conf_dir: str, suspicious: bool) -> tuple[Manifest, str]:
    """The manifest in a folder already taken over (not ``suspicious``), believed only when it is
    an administrator's own regular file (not a link, no other hard link) whose paths all lie in
    the bin and conf dirs; else an empty one and the warning saying why it was ignored."""
    if not disk.exists(path):
        return Manifest(), ""
    why = "it lies in a folder others could write (install had to take it over)" if suspicious else None
    if why is None:
        try:
            raw = disk.read_trusted(path, layout.MAX_MANIFEST + 1)
            if len(raw) > layout.MAX_MANIFEST:
                why = "larger than a manifest"
            else:
                manifest = Manifest.decode(raw)
                why = manifest.problem(conf_dir)
        except UnsafePath as exc:
            why = exc.problem
        except (ValueError, UnicodeDecodeError) as exc:
            why = f"not a wincni install manifest ({exc})"
        except OSError as exc:
            why = f"cannot be read ({exc.strerror or exc})"
    if why is None:
        return manifest, ""
    return Manifest(), (
        f"{path} ignored: {why}; only what provably matches the release is removed or replaced, nothing is restored"
    )


def audit(
    bin_dir: str, conf_dir: str, launchers: list[str], disk: Disk | None = None, digests: bool = True
) -> tuple[str, ...]:
    """What the doctor's ``plugins`` check holds against the bin dir: writable by others, one of
    ``launchers`` a link or not an administrator's, a contents folder the manifest (when there
    is one: ``build.ps1 -Install`` writes none) does not name with the digest it has now (only
    with ``digests``)."""
    from basics.safefs import writable_by_others

    disk = disk or Disk()
    found = []
    for path in [bin_dir] + [os.path.join(bin_dir, n) for n in launchers]:
        try:
            who = writable_by_others(path)
        except OSError:
            continue
        if who:
            found.append(f"{path} is {who}" if who.startswith("a ") else f"{path} is writable by {who}")
    path = os.path.join(bin_dir, layout.MANIFEST)
    if not digests or not disk.exists(path):
        return tuple(found)
    manifest, why = read_manifest(disk, path, os.path.normpath(conf_dir), suspicious=False)
    found += [why] if why else []
    for name in disk.listdir(bin_dir)[1]:
        folder = os.path.join(bin_dir, name)
        if layout.is_contents(name) and manifest.digest(name) != disk.digest(folder):
            found.append(
                f"{folder} is not the contents folder install laid (its manifest does not name it "
                "with the digest it has now)"
            )
    return tuple(found)
