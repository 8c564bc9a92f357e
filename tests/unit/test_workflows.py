""".github/workflows/ checked here, where no forge runs them: actionlint (built from the Go module
proxy, winbuild/gobuild.py) lints every workflow, and the parity workflow runs what build.ps1
-TestRealHns runs on both hosted Windows images (its PowerShell is parsed in
tests/windows/test_build_ps1.py, beside build.ps1's)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import yaml

from gotool import go_tool

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))


def _actionlint(*paths: Path) -> subprocess.CompletedProcess:
    exe = go_tool("actionlint", "lint .github/workflows/")
    return subprocess.run(
        [str(exe), "-no-color", "-shellcheck=", "-pyflakes=", *map(str, paths)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_every_workflow_lints_clean() -> None:
    assert WORKFLOWS, "no workflow in .github/workflows"
    proc = _actionlint(*WORKFLOWS)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_linter_fails_a_broken_workflow(tmp_path: Path) -> None:
    broken = tmp_path / ".github" / "workflows" / "broken.yml"
    broken.parent.mkdir(parents=True)
    broken.write_text("on: push\njobs:\n  x:\n    runs-on: ${{ matrix.nope }}\n    steps:\n      - run: true\n")
    proc = _actionlint(broken)
    assert proc.returncode == 1 and "matrix" in proc.stdout, proc.stdout + proc.stderr


def test_the_parity_workflow_runs_the_suite_on_both_windows_images_and_publishes_it() -> None:
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "parity.yml").read_text())
    (job,) = workflow["jobs"].values()
    assert job["strategy"]["matrix"]["os"] == ["windows-2022", "windows-2025"]
    runs = "\n".join(step.get("run", "") for step in job["steps"])
    assert ".\\build.ps1 @options" in runs and "TestRealHns = $true" in runs
    (upload,) = [s for s in job["steps"] if str(s.get("uses", "")).startswith("actions/upload-artifact@")]
    assert upload["if"] == "always()" and upload["with"]["path"] == "build/parity/"


def test_the_release_workflow_builds_on_both_hosts_attaches_the_files_and_pushes_the_image() -> None:
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "release.yml").read_text())
    runs = {name: "\n".join(s.get("run", "") for s in job["steps"]) for name, job in workflow["jobs"].items()}
    assert ".\\build.ps1 -Release" in runs["windows"]
    assert "make release" in runs["linux"] and "sha256sum -c SHA256SUMS" in runs["linux"]
    assert "gh release create" in runs["linux"] and "dist-release/*" in runs["linux"]
    assert '"$crane" push' in runs["linux"]
