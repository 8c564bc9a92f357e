"""A Go program a test needs (kustomize, crane), built from the Go module proxy by winbuild.gotools
into its cache: where it cannot be built the test skips saying why, and in CI it fails saying why
(``.ci/run`` builds them first)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


def go_tool(name: str, needed_for: str) -> Path:
    from winbuild.gotools import ToolUnavailable, tool

    try:
        return tool(name)
    except ToolUnavailable as exc:
        if os.environ.get("CI"):
            pytest.fail(f"{name} is needed to {needed_for} and cannot be built: {exc}")
        pytest.skip(f"{name} cannot be built here: {exc}")
