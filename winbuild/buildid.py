"""The build's identity, worked out once on the host that starts a build and handed to the spec.

``make dist``, ``winbuild/dist.py`` (``make dist-windows``) and ``build.ps1`` ask for it before
PyInstaller runs (``python -m winbuild.buildid`` prints it) and pass it in ``WINCNI_BUILD``;
specs/wincni.spec writes it into the build's own work folder as the module ``wincni_build``, which
every executable of the package reads (``plugins/cni/buildinfo.py``). The host has git, the
Windows Python under Wine has none, and two builds at once share no generated file. A git
checkout whose commit cannot be read fails the build; a tree without ``.git`` (a source archive)
says so in its ID.
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Mapping

#: The environment variable the spec reads: ``<build> <commit>`` (no commit from a source archive).
ENV = "WINCNI_BUILD"
#: What a build ID holds in place of the commit when the tree is no git checkout.
SOURCE_ARCHIVE = "source"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class BuildIdError(Exception):
    """No build ID can be given: the message says why and what to do."""


def build_id(version: str, commit: str, built: str) -> str:
    """``<version>-<commit, 12 digits, d when dirty>-<UTC time>``, or ``<version>-source-<time>``
    without a commit: the contents folder is ``_wincni-<build>``."""
    tag = commit[:12] + ("d" if commit.endswith("-dirty") else "") if commit else SOURCE_ARCHIVE
    return f"{version}-{tag}-{built}"


def read_commit(root: str) -> str:
    """HEAD of the checkout at ``root`` (``-dirty`` when tracked files changed); "" when ``root``
    is no git checkout; ``BuildIdError`` when it is one but git cannot name its commit."""
    if not os.path.exists(os.path.join(root, ".git")):
        return ""
    try:
        head = _git(root, "rev-parse", "HEAD")
        dirty = _git(root, "status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.CalledProcessError) as exc:
        why = (getattr(exc, "stderr", "") or str(exc)).strip().splitlines()
        raise BuildIdError(
            f"{root} is a git checkout but git cannot name its commit ({why[-1] if why else exc}): "
            "install git and run the build again, or build from a source archive (a tree without .git)"
        ) from None
    if len(head) != 40 or not all(c in "0123456789abcdef" for c in head):
        raise BuildIdError(f"git rev-parse HEAD in {root} answered {head!r}, not a commit")
    return head + ("-dirty" if dirty else "")


def _git(root: str, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", root, *args], capture_output=True, text=True, check=True, timeout=60
    ).stdout.strip()


def identify(root: str = ROOT) -> tuple[str, str]:
    """(build ID, commit) of a build of ``root`` starting now."""
    import datetime

    from plugins.cni.buildinfo import VERSION

    commit = read_commit(root)
    built = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return build_id(VERSION, commit, built), commit


def encode(build: str, commit: str) -> str:
    return f"{build} {commit}".rstrip()


def decode(value: str) -> tuple[str, str]:
    """(build ID, commit) from ``encode``'s text; ``BuildIdError`` for anything else."""
    build, _, commit = value.strip().partition(" ")
    tag = build.split("-")[1:2]
    if not build or not tag or (tag[0] == SOURCE_ARCHIVE) != (not commit) or (commit and commit[:12] != tag[0][:12]):
        raise BuildIdError(f"{ENV}={value!r} is not a build ID and its commit (python -m winbuild.buildid prints one)")
    return build, commit


def passed(env: Mapping[str, str]) -> tuple[str, str]:
    """The ID the host passed in ``ENV``, else one worked out here (PyInstaller run by hand)."""
    return decode(env[ENV]) if env.get(ENV) else identify()


def main() -> int:
    try:
        print(encode(*identify()))
    except BuildIdError as exc:
        print(f"winbuild.buildid: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
