"""The release notes: one version's section of CHANGELOG.md (Keep a Changelog's form).

A section starts at a second-level heading ``## [<version>]`` (``## [<version>] - <date>`` once
released) and runs to the next one; its notes are its body, the heading left out.
"""

from __future__ import annotations

import re

UNRELEASED = "Unreleased"


class ChangelogError(ValueError):
    """The changelog has no section for the version asked for."""


def section(text: str, version: str) -> str:
    """The body of ``version``'s section, else of Unreleased (a version not yet given its own)."""
    sections = dict(
        (m.group(1), m.group(2).strip())
        for m in re.finditer(r"^## \[([^\]]+)\][^\n]*\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    )
    for name in (version, UNRELEASED):
        if sections.get(name):
            return sections[name] + "\n"
    raise ChangelogError(f"CHANGELOG.md has no section for {version} and no Unreleased entries")


def notes(text: str, version: str) -> str:
    """The release notes of ``version``: a title, then its section."""
    return f"# wincni {version}\n\n{section(text, version)}"
