"""What ``wincni install`` prints: a dry run its plan, a real run what it did (``Outcome``), as a
table or one JSON document; the only place that names a step for the operator.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TextIO

from tools.wincni.cli.output import failed, json_doc
from tools.wincni.install.options import InstallOptions
from tools.wincni.install.steps import Step

EXIT_OK, EXIT_FAILED = 0, 1


class InstallError(Exception):
    """Install cannot go on: the message names the input or file and the way out (exit status 1)."""


@dataclass
class Outcome:
    steps: list[Step] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    diff: str = ""
    dns: dict = field(default_factory=dict)  # the cluster DNS the config was rendered with, and whence
    build: str = ""
    bin_dir: str = ""
    conf_path: str = ""
    dirs_from: str = ""  # why these bin and conf dirs (containerd.locate's answer)
    containerd_version: int = 0  # config.toml's version (containerd.CniDirs.version), which picks the cniVersion
    install: tuple[str, ...] = ()  # this install's arguments, as the manifest records them (rerun_args)


def action(step: Step) -> str:
    """The word the table and the JSON give ``step``: each kind of step names itself (``word``)."""
    return step.word


def write(options: InstallOptions, out: Outcome, stdout: TextIO, error: str = "") -> None:
    """``out`` in ``options.output``'s format; ``error``: why the run stopped."""
    warnings = out.warnings + (_left(out.steps) if options.uninstall and not options.dry_run else [])
    (_json if options.output == "json" else _table)(options, out, warnings, stdout, error)


def _json(options: InstallOptions, out: Outcome, warnings: list[str], stdout: TextIO, error: str) -> None:
    doc: dict = {
        "build": out.build,
        "binDir": out.bin_dir,
        "config": out.conf_path,
        "dirsFrom": out.dirs_from,
        "dryRun": options.dry_run,
        "steps": [{"action": action(s), "path": s.path, "detail": s.detail} for s in out.steps],
        "warnings": warnings,
    }
    if not options.uninstall:
        doc["dns"] = out.dns
    if options.dry_run and not options.uninstall:
        doc["diff"] = out.diff
    if error:
        doc["error"] = error
    json_doc(stdout, doc)


def _table(options: InstallOptions, out: Outcome, warnings: list[str], stdout: TextIO, error: str) -> None:
    for s in out.steps:
        stdout.write(f"{action(s).upper():<8} {s.path}" + (f"  ({s.detail})" if s.detail else "") + "\n")
    for w in warnings:
        stdout.write(f"WARN     {w}\n")
    if options.dry_run and out.diff:
        stdout.write("\n" + out.diff)
    if error:
        failed(stdout, "table", error)
        return
    changed = sum(action(s) not in ("keep", "held") for s in out.steps)
    verb = "would change" if options.dry_run else ("uninstalled:" if options.uninstall else "changed")
    if out.dirs_from:
        stdout.write(f"\nCNI dirs {out.bin_dir} and {os.path.dirname(out.conf_path)}: {out.dirs_from}")
    build = f"build {out.build}" if out.build else ("no build installed" if options.uninstall else "build -")
    stdout.write(f"\n{build}: {verb} {changed} item(s), {len(warnings)} warning(s)\n")


def _left(done: list[Step]) -> list[str]:
    """What uninstall leaves behind, as warnings: a config it keeps still names the plugins it removed."""
    return [
        f"{s.path} left in place: changed since install, it still names the plugins this uninstall removed; "
        "delete it, or put back the config the node should run pods with"
        if action(s) == "keep"
        else f"{s.path} left in place: {s.detail}"
        for s in done
        if action(s) in ("keep", "held")
    ]
