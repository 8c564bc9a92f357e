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


def go_main(name: str, needed_for: str) -> Path:
    """A program of our own under winbuild/gomain/<name> (its main.go, go.mod and go.sum), built
    with Go into the Go tools' cache, keyed by its sources' digest: the repository holds no binary
    and the build writes nothing in it. Skips (fails in CI) where it cannot be built."""
    import hashlib

    from winbuild.gotools import cache

    source = Path(__file__).resolve().parents[1] / "winbuild" / "gomain" / name
    digest = hashlib.sha256(b"".join((source / f).read_bytes() for f in ("main.go", "go.mod", "go.sum"))).hexdigest()
    exe = cache() / f"{name}-{digest[:16]}" / name
    problem = "" if exe.is_file() else _go_build(source, exe)
    if not problem:
        return exe
    if os.environ.get("CI"):
        pytest.fail(f"{name} is needed to {needed_for} and cannot be built: {problem}")
    pytest.skip(f"{name} cannot be built here: {problem}")


def _go_build(source: Path, exe: Path) -> str:
    """What went wrong building the main package in ``source`` as ``exe`` ("" when it was built)."""
    import subprocess

    from winbuild.goref import find_go
    from winbuild.toolchain import ToolchainError

    try:
        go = find_go()
    except ToolchainError as exc:
        return str(exc)
    env = {**os.environ, "CGO_ENABLED": "0", "GOFLAGS": "-mod=readonly"}
    try:
        proc = subprocess.run(
            [go, "build", "-trimpath", "-o", str(exe), "."],
            cwd=source,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )
    except subprocess.TimeoutExpired:
        return "go build did not finish in 900 s: is the Go module proxy reachable (GOPROXY)?"
    return "" if proc.returncode == 0 else f"go build failed:\n{proc.stderr[-2000:]}"
