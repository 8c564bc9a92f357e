"""winbuild.gotools: a Go build that cannot finish is ToolUnavailable saying why (which CI reports
as a failure, tests/gotool.py), never a TimeoutExpired traceback."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from winbuild import gotools


def test_a_build_past_its_time_is_a_tool_unavailable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "bin" / "go"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\nexec sleep 30\n")  # exec: the one process the timeout kills
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("WINCNI_GO_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(gotools, "BUILD_TIMEOUT_S", 0.5)
    with pytest.raises(
        gotools.ToolUnavailable,
        match=r"go install sigs.k8s.io/kustomize/kustomize/v5@v\S+ did not "
        r"finish in 0.5 s",
    ):
        gotools.tool("kustomize")


def test_an_unknown_tool_is_an_error_line_and_status_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert gotools.main(["kustomize", "kubectl"]) == 2
    assert capsys.readouterr().err == "winbuild.gotools: no tool 'kubectl': choose from kustomize, crane, flanneld\n"
