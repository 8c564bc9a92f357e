"""A Go program a test needs, built from the Go module proxy by winbuild.gobuild into its cache
(``.ci/run`` builds them first): where it cannot be built the test fails saying why, never skips."""

from __future__ import annotations

from pathlib import Path

import pytest


def go_tool(name: str, needed_for: str) -> Path:
    from winbuild.gobuild import GoBuildError, build

    try:
        return build(name)
    except GoBuildError as exc:
        pytest.fail(f"{name} is needed to {needed_for} and cannot be built: {exc}")
