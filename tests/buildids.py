"""Every executable of a package names the package's one build: the frozen tests (``make dist``)
and the Windows lane (the package zip under Wine) hold each command's ``--version`` to it."""

from __future__ import annotations

from typing import Callable

from plugins.cni.buildinfo import VERSION
from plugins.registry import COMMANDS
from winbuild.buildid import SOURCE_ARCHIVE


def assert_one_build(about: Callable[[str], str], build: str) -> None:
    """``about(command)`` is that command's ``--version`` text; its first line must name ``build``
    (the package's contents folder is ``_wincni-<build>``): the version, the commit it holds (a
    real one: the host that built it had git) and the time."""
    version, tag, built = build.split("-")
    assert version == VERSION and tag != SOURCE_ARCHIVE, build
    assert len(tag) in (12, 13) and all(c in "0123456789abcdef" for c in tag[:12]), build
    commit = tag[:12] + ("-dirty" if len(tag) == 13 else "")
    said = {name: about(name).splitlines()[0] for name in COMMANDS}
    assert said == {name: f"{name} {VERSION} (commit {commit}, built {built})" for name in COMMANDS}, said
