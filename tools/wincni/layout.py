"""What ``wincni install`` lays into the CNI bin dir, and how an upgrade swaps builds under load.

Pure: the layout's names, the manifest and the release folder as records; ``plan`` turns them
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

from basics.takeover import QUARANTINED

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


@dataclass(frozen=True)
class Bundle:
    """A release folder: launchers beside one ``_wincni-<build>`` contents folder."""

    root: str
    build: str
    launchers: tuple[str, ...]

    @property
    def contents(self) -> str:
        return CONTENTS_PREFIX + self.build

    @classmethod
    def of(cls, root: str, files: Iterable[str], dirs: Iterable[str]) -> "Bundle":
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
    """Top-level files of a bundle that are commands: ``.exe`` on Windows, extension-less elsewhere."""
    return name.endswith(".exe") or ("." not in name and not name.startswith("_"))


def plain_name(name: str) -> bool:
    return bool(name) and name not in (".", "..") and "/" not in name and "\\" not in name and ":" not in name
