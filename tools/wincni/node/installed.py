"""What ``wincni install`` lays into the CNI bin dir, and how an upgrade swaps builds under load.

Pure: the layout's names, the manifest and the package folder as records; ``plan`` turns them
into steps, ``executor`` carries them out.

The layout (one build per contents folder, which PyInstaller's one-folder exe loads from beside
itself, its name baked into the exe by specs/wincni.spec)::

    <bin>\\flannel.exe … wincni.exe          the current build's launchers
    <bin>\\_wincni-<build>\\                  its contents (Python, our modules)
    <bin>\\_wincni-<older build>\\            kept while a process of that build may still run
    <bin>\\.wincni-old\\<older build>\\*.exe   launchers renamed aside while running
    <bin>\\.wincni-install.json               the manifest: what install laid down

The manifest is believed only when ``Manifest.problem`` finds nothing: every path it names is a
plain name in the bin or conf dir. A contents folder is kept only when the manifest names it with
the digest the folder has now; otherwise it is replaced by a fresh copy.

Windows refuses to overwrite or delete a running ``.exe`` but lets it be renamed, and refuses to
rename a folder holding a file in use. So an upgrade copies the new contents folder under its
own name first (the old build's processes keep theirs), then replaces each launcher, renaming a
running one aside; every process sees exactly one build. An older build's contents folder goes
once none of its launchers is left, i.e. when every aside file of it could be deleted (nothing
runs it any more).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping

from basics.errors import UnsafePath
from basics.takeover import QUARANTINED
from tools.wincni.node.disk import Disk

CONTENTS_PREFIX = "_wincni-"  # + build ID: specs/wincni.spec names the contents folder so


ASIDE_DIR = ".wincni-old"


MANIFEST = ".wincni-install.json"


PARTIAL = ".partial"  # a contents folder being copied; renamed into place when complete


TRASH = ".trash"  # a contents folder an older wincni renamed for deletion: still recognised as such


FOREIGN = "previous"  # aside folder for launchers install did not lay (e.g. the Go plugins)


CONF_EXTENSIONS = (".conf", ".conflist", ".json")  # what libcni's ConfFiles loads


DISABLED = ".disabled-by-wincni"


DISCARDED = ".wincni-trash"  # a folder renamed to be purged (proof that nothing held it), + ".1"… if taken


QUARANTINE = QUARANTINED  # in the conf dir: configs install found there but no administrator laid


MAX_MANIFEST = 1 << 20
MAX_TEMPLATE = 1 << 20  # the template install renders the config from (--template)


@dataclass(frozen=True)
class Manifest:
    build: str = ""
    launchers: tuple[str, ...] = ()
    conf: str = ""
    conf_digest: str = ""  # sha256 of what install wrote, so uninstall removes only that
    moved: tuple[tuple[str, str], ...] = ()  # (original, disabled) config paths
    contents: tuple[tuple[str, str], ...] = ()  # (contents folder name, its digest) install laid
    install: tuple[str, ...] = ()  # install's arguments, for the doctor's fixes to run it again

    def encode(self) -> bytes:
        return (
            json.dumps(
                {
                    "build": self.build,
                    "launchers": list(self.launchers),
                    "conf": self.conf,
                    "confDigest": self.conf_digest,
                    "moved": [list(m) for m in self.moved],
                    "contents": [list(c) for c in self.contents],
                    "install": list(self.install),
                },
                indent=2,
            )
            + "\n"
        ).encode()

    def digest(self, name: str) -> str:
        """The digest install recorded for the contents folder ``name``, "" if none."""
        return dict(self.contents).get(name, "")

    def problem(self, conf_dir: str) -> str | None:
        """Why this cannot be a manifest install wrote for ``conf_dir``, or None: every config
        path must be a plain name directly in ``conf_dir`` (no "..", no other folder or drive), a
        moved config's new name its old one plus ``DISABLED``, every contents folder a build's."""
        paths = ([self.conf] if self.conf else []) + [p for pair in self.moved for p in pair]
        for path in paths:
            if not in_folder(path, conf_dir) or not plain_name(os.path.basename(path)):
                return f"{path!r} is not a file name in {conf_dir}"
        for original, disabled in self.moved:
            if disabled != original + DISABLED:
                return f"{disabled!r} is not {original!r} moved aside"
        for name, _ in self.contents:
            if not (is_contents(name) and plain_name(name)):
                return f"{name!r} is not a contents folder"
        return None

    @classmethod
    def decode(cls, raw: bytes) -> "Manifest":
        """ValueError for anything that is not a manifest we wrote."""
        try:
            doc = json.loads(raw[:MAX_MANIFEST].decode("utf-8"))
        except RecursionError:
            raise ValueError("nested too deeply") from None
        if not isinstance(doc, dict):
            raise ValueError("not a JSON object")
        launchers, moved, contents = doc.get("launchers") or [], doc.get("moved") or [], doc.get("contents") or []
        install = doc.get("install") or []
        if not isinstance(install, list) or not all(isinstance(a, str) for a in install):
            raise ValueError("install must be a list of strings")
        if not isinstance(launchers, list) or not all(isinstance(n, str) and plain_name(n) for n in launchers):
            raise ValueError("launchers must be file names")
        for key, pairs in (("moved", moved), ("contents", contents)):
            if not isinstance(pairs, list) or not all(
                isinstance(m, list) and len(m) == 2 and all(isinstance(p, str) for p in m) for m in pairs
            ):
                raise ValueError(f"{key} must be a list of pairs of strings")
        return cls(
            build=str(doc.get("build") or ""),
            launchers=tuple(launchers),
            conf=str(doc.get("conf") or ""),
            conf_digest=str(doc.get("confDigest") or ""),
            moved=tuple((a, b) for a, b in moved),
            contents=tuple((a, b) for a, b in contents),
            install=tuple(install),
        )


def embedded_build(launcher: bytes) -> str:
    """The build a launcher loads: PyInstaller stores its contents folder's name as the option
    ``pyi-contents-directory <name>`` in the archive's table of contents. "" for anything else
    (the Go plugins). More reliable than the manifest, which an interrupted install leaves behind."""
    marker = b"pyi-contents-directory " + CONTENTS_PREFIX.encode()
    start = launcher.rfind(marker)
    if start < 0:
        return ""
    start += len(marker)
    end = launcher.find(b"\0", start)
    name = launcher[start : end if end >= 0 else len(launcher)][:200]
    try:
        build = name.decode("ascii")
    except UnicodeDecodeError:
        return ""
    return build if build and plain_name(build) and build.isprintable() else ""


def aside_path(bin_dir: str, build: str, name: str, taken: Callable[[str], bool]) -> str:
    """Where a running launcher goes: ``.wincni-old\\<its build>\\<name>`` (``.1``, ``.2``… if taken)."""
    base = os.path.join(bin_dir, ASIDE_DIR, build or FOREIGN, name)
    path, n = base, 0
    while taken(path):
        n += 1
        path = f"{base}.{n}"
    return path


def stale_contents(present: Iterable[str], asides: Mapping[str, int], current: str) -> list[str]:
    """Contents folders no launcher can use any more: not the current build's, and no aside
    launcher of that build left (``asides``: build -> launchers still parked, i.e. held);
    leftovers of an interrupted copy or deletion too."""
    out = []
    for name in sorted(present):
        if name.endswith((PARTIAL, TRASH)) and name.startswith(CONTENTS_PREFIX):
            out.append(name)
        elif is_contents(name):
            build = name[len(CONTENTS_PREFIX) :]
            if build != current and not asides.get(build):
                out.append(name)
    return out


def in_folder(path: str, folder: str) -> bool:
    """``path`` is a name directly in ``folder``, as the file system compares names (Windows:
    ``C:\\etc`` and ``c:/etc`` are one folder, so an install run with either spelling is the same)."""
    return os.path.normcase(os.path.dirname(path)) == os.path.normcase(folder)


def same_file(a: str, b: str) -> bool:
    """``a`` and ``b`` name one file, as the file system compares names."""
    return os.path.normcase(os.path.normpath(a)) == os.path.normcase(os.path.normpath(b))


def is_contents(name: str) -> bool:
    """``name`` is a build's contents folder (not one half copied or being deleted)."""
    return name.startswith(CONTENTS_PREFIX) and not doomed(name) and len(name) > len(CONTENTS_PREFIX)


def doomed(name: str) -> bool:
    """``name`` says its folder is to go: half copied, or renamed to be purged."""
    return name.endswith((PARTIAL, TRASH)) or DISCARDED in name


def is_launcher(name: str) -> bool:
    """Top-level files of a package folder that are commands: ``.exe`` on Windows, extension-less elsewhere."""
    return name.endswith(".exe") or ("." not in name and not name.startswith("_"))


def plain_name(name: str) -> bool:
    return bool(name) and name not in (".", "..") and "/" not in name and "\\" not in name and ":" not in name


def read_manifest(disk: Disk, path: str, conf_dir: str, suspicious: bool) -> tuple[Manifest, str]:
    """The manifest in a folder already taken over (not ``suspicious``), believed only when it is
    an administrator's own regular file (not a link, no other hard link) whose paths all lie in
    the bin and conf dirs; else an empty one and the warning saying why it was ignored."""
    if not disk.exists(path):
        return Manifest(), ""
    why = "it lies in a folder others could write (install had to take it over)" if suspicious else None
    if why is None:
        try:
            raw = disk.read_trusted(path, MAX_MANIFEST + 1)
            if len(raw) > MAX_MANIFEST:
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
    path = os.path.join(bin_dir, MANIFEST)
    if not digests or not disk.exists(path):
        return tuple(found)
    manifest, why = read_manifest(disk, path, os.path.normpath(conf_dir), suspicious=False)
    found += [why] if why else []
    for name in disk.listdir(bin_dir)[1]:
        folder = os.path.join(bin_dir, name)
        if is_contents(name) and manifest.digest(name) != disk.digest(folder):
            found.append(
                f"{folder} is not the contents folder install laid (its manifest does not name it "
                "with the digest it has now)"
            )
    return tuple(found)
