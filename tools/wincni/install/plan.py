"""What ``wincni install`` and ``--uninstall`` are to do, as ``steps``: pure functions of the
options and of what was found on the node (listings, digests, the manifest), so every decision
is tested without a disk. ``install`` gathers what they need and hands the steps to
``executor.StepExecutor``; the rules of the layout are in ``node.installed``'s docstring.
"""

from __future__ import annotations

import hashlib
import os
from typing import Callable, Iterable, Mapping, Sequence

from tools.wincni.install.package import PackageFolder
from tools.wincni.install.steps import (
    ClaimFolder,
    CopyExe,
    CopyFolder,
    Disable,
    Held,
    Keep,
    PurgeFolder,
    Quarantine,
    RemoveFile,
    Restore,
    Step,
    WriteFile,
)
from tools.wincni.node import installed
from tools.wincni.node.installed import Manifest


def bin_steps(
    package: PackageFolder,
    bin_dir: str,
    present: Iterable[str],
    same: Callable[[str], bool],
    previous: Manifest,
    laid: bool,
) -> list[Step]:
    """Steps laying ``package`` into ``bin_dir`` (whose top-level names are ``present``).

    ``same(name)``: the launcher in bin_dir already has the package's bytes. ``laid``: the contents
    folder there is the one the manifest names, digest and all; any other is replaced. Launchers
    the previous install laid that this build no longer has are removed, so no launcher outlives
    its contents.
    """
    present = set(present)
    j = os.path.join
    there = package.contents in present
    detail = f"build {package.build}"
    steps: list[Step] = [
        Keep(j(bin_dir, package.contents), detail)
        if there and laid
        else CopyFolder(
            j(bin_dir, package.contents),
            j(package.root, package.contents),
            detail + ("; the folder there is not the one install laid: replaced" if there else ""),
        )
    ]
    for name in package.launchers:
        if name in present and same(name):
            steps.append(Keep(j(bin_dir, name)))
        else:
            steps.append(CopyExe(j(bin_dir, name), j(package.root, name), new=name not in present))
    steps += [
        RemoveFile(j(bin_dir, name), "not in this build", in_use="aside")
        for name in previous.launchers
        if name not in package.launchers and name in present
    ]
    return steps


def conf_steps(
    conf_dir: str, present: Iterable[str], ours: str, rendered: bytes, existing: bytes | None, keep_others: bool
) -> list[Step]:
    """Write our config unless identical; disable every config containerd would load before it
    (it loads only the first, in lexical order)."""
    j = os.path.join
    steps: list[Step] = [Keep(j(conf_dir, ours)) if existing == rendered else WriteFile(j(conf_dir, ours), rendered)]
    if keep_others:
        return steps
    return steps + [
        Disable(
            j(conf_dir, name),
            f"sorts before {ours}: containerd would load it instead; moved to {name}{installed.DISABLED}",
        )
        for name in sorted(present)
        if name < ours and name.endswith(installed.CONF_EXTENSIONS)
    ]


def claim_steps(
    done: Sequence, foreign: Sequence[tuple[str, str]], dry_run: bool, quarantine: str, is_folder: Callable[[str], bool]
) -> list[Step]:
    """What claiming a folder did (``done``: ``takeover.Takeover``s; a dry run: would do), then
    what to do with each entry an administrator did not lay (``foreign``: (path, why)): moved into
    the fresh folder ``quarantine`` when one is given (the conf dir: an operator may want the
    config back), else deleted (the bin dir). ``is_folder(path)``: the entry is a folder itself."""
    would = "would be " if dry_run else ""
    steps: list[Step] = [
        ClaimFolder(t.path, f"{t.why}: {would}moved to {t.aside}, a new admin-only one made", moved=True)
        if t.aside
        else ClaimFolder(t.path, f"{t.why}: {would}made admin-only")
        for t in done
    ]
    for entry, problem in foreign:
        why = f"{problem}: not laid by an administrator"
        if quarantine:
            steps.append(Quarantine(entry, quarantine, f"{why}; moved to {quarantine}"))
        else:
            steps.append(PurgeFolder(entry, why) if is_folder(entry) else RemoveFile(entry, why))
    return steps


def manifest(
    package: PackageFolder,
    conf: str,
    install: tuple[str, ...],
    rendered: bytes,
    previous: Manifest,
    conf_done: Iterable[Step],
    contents_digest: str,
    present: Iterable[str],
) -> Manifest:
    """The manifest of this install: what it laid, the configs it moved aside (before and now),
    and the digest of each contents folder it laid that is still ``present`` in the bin dir."""
    moved = [(s.path, s.path + installed.DISABLED) for s in conf_done if isinstance(s, Disable)]
    present = set(present)
    return Manifest(
        build=package.build,
        launchers=package.launchers,
        conf=conf,
        install=install,
        conf_digest=hashlib.sha256(rendered).hexdigest(),
        moved=tuple(dict.fromkeys(previous.moved + tuple(moved))),
        contents=tuple((n, d) for n, d in previous.contents if n != package.contents and n in present)
        + ((package.contents, contents_digest),),
    )


def uninstall_steps(manifest: Manifest, bin_dir: str, conf: bytes | None, exists: Callable[[str], bool]) -> list[Step]:
    """What the manifest says install laid: its config (``conf``: what is there now) unless
    changed since, the configs it moved aside, its launchers."""
    steps: list[Step] = []
    if conf is not None:
        ours = hashlib.sha256(conf).hexdigest() == manifest.conf_digest
        steps.append(RemoveFile(manifest.conf) if ours else Keep(manifest.conf, "changed since install"))
    steps += [
        Restore(original, disabled)
        for original, disabled in manifest.moved
        if exists(disabled) and not exists(original)
    ]
    return steps + [
        RemoveFile(os.path.join(bin_dir, n), in_use="aside")
        for n in manifest.launchers
        if exists(os.path.join(bin_dir, n))
    ]


def uninstalled_contents(manifest: Manifest, bin_dir: str) -> list[Step]:
    """The manifest's contents folder, which uninstall's cleanup removes: what a dry run adds to
    ``uninstall_steps`` to say so."""
    if not manifest.build:
        return []
    name = installed.CONTENTS_PREFIX + manifest.build
    return [PurgeFolder(os.path.join(bin_dir, name), contents_detail(name, "", manifest.build))]


def unpark_steps(aside_root: str, parked: Mapping[str, Sequence[str]]) -> list[Step]:
    """Delete each launcher parked aside (``parked``: build -> file names); one still running is held."""
    return [
        RemoveFile(os.path.join(aside_root, build, name), "no longer running", in_use="hold")
        for build, names in parked.items()
        for name in names
    ]


def still_parked(unparked: Iterable[Step]) -> dict[str, int]:
    """build -> how many of its launchers are still parked, from what ``unpark_steps`` came to."""
    running: dict[str, int] = {}
    for step in unparked:
        if isinstance(step, Held):
            build = os.path.basename(os.path.dirname(step.path))
            running[build] = running.get(build, 0) + 1
    return running


def tidy_steps(bin_dir: str, dirs: Iterable[str], parked: Iterable[str], running: Mapping[str, int]) -> list[Step]:
    """Folders left empty or half deleted, which nobody is told about: each aside folder whose
    launchers are all gone (the aside root too once none is left), and what an interrupted
    purge left (``dirs``: the folders in ``bin_dir``)."""
    aside_root = os.path.join(bin_dir, installed.ASIDE_DIR)
    steps: list[Step] = [
        PurgeFolder(os.path.join(aside_root, build), in_use="hold") for build in parked if not running.get(build)
    ]
    if installed.ASIDE_DIR in dirs and not running:
        steps.append(PurgeFolder(aside_root, in_use="hold"))
    return steps + [
        PurgeFolder(os.path.join(bin_dir, name), in_use="hold") for name in dirs if installed.DISCARDED in name
    ]


def stale_steps(
    bin_dir: str, dirs: Iterable[str], running: Mapping[str, int], current: str, uninstalled: str = ""
) -> list[Step]:
    """The contents folders a parked launcher still needs (held), then every one no launcher can
    use any more (``installed.stale_contents``) deleted; ``uninstalled``: the build uninstall removes."""
    dirs = list(dirs)
    held: list[Step] = [
        Held(os.path.join(bin_dir, installed.CONTENTS_PREFIX + build), "kept for its running launchers")
        for build in sorted(running)
        if installed.CONTENTS_PREFIX + build in dirs
    ]
    return held + [
        PurgeFolder(os.path.join(bin_dir, name), contents_detail(name, current, uninstalled), in_use="hold")
        for name in installed.stale_contents(dirs, running, current)
    ]


def contents_detail(name: str, current: str, uninstalled: str) -> str:
    """What a contents folder cleanup removes was: the uninstalled build, a leftover, or a build
    newer or older than ``current`` by its build time (a rollback removes a newer one)."""
    build = name[len(installed.CONTENTS_PREFIX) :]
    if uninstalled and build == uninstalled:
        return "the uninstalled build"
    if not installed.is_contents(name):
        return "left by an interrupted install"
    built, now = build.rpartition("-")[2], current.rpartition("-")[2]
    age = "a newer" if current and built > now else "an older" if current and built < now else "another"
    return f"{age} build, no longer used"
