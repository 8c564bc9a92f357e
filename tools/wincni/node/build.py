"""This wincni's build identity, and the folder of the running frozen build."""

from __future__ import annotations

import os


def running_build() -> str:
    """This wincni's build ID; from a source checkout its version and commit, the start of the ID
    a package built from it carries (``specs/wincni.spec``)."""
    from plugins.cni.buildinfo import VERSION, build, commit

    return build() or "-".join(x for x in (VERSION, commit()[:12]) if x)


def frozen_dir() -> str:
    """The folder of the running frozen wincni (the package it lays, the programs the fix
    commands run); "" from source (they are then found on PATH)."""
    import sys

    return os.path.dirname(os.path.abspath(sys.executable)) if getattr(sys, "frozen", False) else ""
