"""Carries out ``wincni install``'s steps (``steps``) through a ``Disk``: the only code of install
that changes a CNI folder, so every change goes through a folder install judged and holds.

Windows' rules for files in use shape each step (``node.installed``'s docstring says why): a launcher is
laid under a temporary name and renamed over the old one, a running one renamed aside first; a
contents folder is copied under ``.partial`` and swapped in; a folder is renamed to a trash name
before it is purged (proof that nothing holds a file in it; an interrupted purge leaves a name the
next cleanup recognises).
"""

from __future__ import annotations

import os

from tools.wincni.install import steps
from tools.wincni.install.steps import Step
from tools.wincni.node import installed
from tools.wincni.node.disk import Disk

MAX_LAUNCHER = 64 << 20


class StepExecutor:
    """``do`` one step; ``build``: the build a running launcher is parked under when the file does
    not say (the previous manifest's)."""

    def __init__(self, disk: Disk, bin_dir: str, build: str = "") -> None:
        self.disk, self.bin_dir, self.build = disk, bin_dir, build

    def do(self, step: Step) -> Step:
        """Carry ``step`` out; what was done (``Aside`` or ``Held`` where an entry was in use).
        OSError when the step cannot be done."""
        disk = self.disk
        match step:
            case steps.CopyFolder():
                self._copy_folder(step.source, step.path)
            case steps.CopyExe():
                return self._copy_exe(step)
            case steps.WriteFile():
                disk.write_atomic(step.path, step.data)
            case steps.Disable():
                disk.replace(step.path, step.path + installed.DISABLED)
            case steps.Restore():
                disk.rename(step.source, step.path)
            case steps.Quarantine():
                if not disk.exists(step.folder):
                    disk.fresh_dir(step.folder)
                disk.rename(step.path, disk.fresh_name(os.path.join(step.folder, os.path.basename(step.path))))
            case steps.RemoveFile():
                return self._remove(step)
            case steps.PurgeFolder():
                return self._purge(step)
            case steps.Keep() | steps.ClaimFolder() | steps.Aside() | steps.Held():
                pass
        return step

    def _copy_folder(self, source: str, path: str) -> None:
        """A fresh copy under ``.partial`` (an interrupted run's purged first), renamed into place
        once complete; a folder there (not the one install laid) is renamed to a trash name first
        and purged after."""
        partial = path + installed.PARTIAL
        if self.disk.exists(partial):
            self.disk.purge(partial)
        self.disk.copy_tree(source, partial)
        doomed = self._trash(path) if self.disk.exists(path) else ""
        self.disk.rename(partial, path)
        if doomed:
            self.disk.purge(doomed)

    def _copy_exe(self, step: steps.CopyExe) -> Step:
        new = os.path.join(self.bin_dir, f".{os.path.basename(step.path)}.wincni-new")
        if self.disk.exists(new):  # an interrupted run's
            self.disk.remove(new)
        self.disk.copy_file(step.source, new)
        try:
            self.disk.replace(new, step.path)
        except PermissionError:  # running: Windows lets it be renamed, not replaced
            aside = self._aside(step.path)
            self.disk.replace(new, step.path)
            return steps.CopyExe(step.path, step.source, False, f"in use: the running one moved to {aside}")
        return step

    def _remove(self, step: steps.RemoveFile) -> Step:
        try:
            self.disk.remove(step.path)
        except OSError as exc:
            if step.in_use == "aside" and isinstance(exc, PermissionError):
                return steps.Aside(step.path, f"in use: moved to {self._aside(step.path)}")
            if step.in_use == "hold":
                return steps.Held(step.path, "still running: removed by a later install")
            raise
        return step

    def _purge(self, step: steps.PurgeFolder) -> Step:
        """Renamed to a trash name first unless its name already says it is to go."""
        try:
            self.disk.purge(step.path if installed.doomed(os.path.basename(step.path)) else self._trash(step.path))
        except OSError:
            if step.in_use == "hold":
                return steps.Held(step.path, "in use: removed by a later install")
            raise
        return step

    def _trash(self, path: str) -> str:
        """``path`` renamed to a fresh trash name beside it; the new name."""
        trash = self.disk.fresh_name(path + installed.DISCARDED)
        self.disk.rename(path, trash)
        return trash

    def _aside(self, path: str) -> str:
        """Park a running launcher under the build it loads (read from the file; else ``build``):
        that build's contents folder stays while it is parked."""
        own = installed.embedded_build(self.disk.read_entry(path, MAX_LAUNCHER) or b"")
        aside = installed.aside_path(self.bin_dir, own or self.build, os.path.basename(path), self.disk.exists)
        self.disk.makedirs(os.path.dirname(aside))
        self.disk.rename(path, aside)
        return aside
