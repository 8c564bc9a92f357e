"""winbuild.buildid: the build's ID is worked out on the host, once, from git; a checkout whose
commit git cannot name fails the build, a source archive says so in its ID."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from plugins.cni import buildinfo
from winbuild import buildid

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def _git(root: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t"}
    env["GIT_COMMITTER_EMAIL"] = "t@t"
    return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, text=True, env=env).stdout


@pytest.mark.parametrize(
    "commit, want",
    [
        (COMMIT, "0.1.0-0123456789ab-20261207T101010Z"),
        (COMMIT + "-dirty", "0.1.0-0123456789abd-20261207T101010Z"),
        ("", "0.1.0-source-20261207T101010Z"),
    ],
)
def test_the_id_names_the_commit_or_the_source_archive(commit: str, want: str) -> None:
    assert buildid.build_id("0.1.0", commit, "20261207T101010Z") == want
    assert buildid.decode(buildid.encode(want, commit)) == (want, commit)


def test_a_checkout_names_its_head_and_whether_tracked_files_changed(tmp_path: Path) -> None:
    _git(tmp_path, "init", "-q")
    (tmp_path / "f").write_text("a")
    _git(tmp_path, "add", "f")
    _git(tmp_path, "commit", "-q", "-m", "one")
    head = _git(tmp_path, "rev-parse", "HEAD").strip()
    (tmp_path / "untracked").write_text("x")
    assert buildid.read_commit(str(tmp_path)) == head
    (tmp_path / "f").write_text("b")
    assert buildid.read_commit(str(tmp_path)) == head + "-dirty"


def test_a_tree_without_git_is_a_source_archive(tmp_path: Path) -> None:
    assert buildid.read_commit(str(tmp_path)) == ""


def test_a_checkout_whose_commit_git_cannot_name_fails_loudly(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / ".git").mkdir()  # a checkout git does not recognise
    with pytest.raises(buildid.BuildIdError, match="is a git checkout but git cannot name its commit"):
        buildid.read_commit(str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path))  # no git at all, as under Wine
    with pytest.raises(buildid.BuildIdError, match="install git"):
        buildid.read_commit(str(tmp_path))


def test_the_command_prints_the_id_or_one_line_and_status_1(tmp_path: Path) -> None:
    repo = Path(buildid.ROOT)
    proc = subprocess.run([sys.executable, "-m", "winbuild.buildid"], cwd=repo, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    build, commit = buildid.decode(proc.stdout)
    assert build.startswith(buildinfo.VERSION + "-") and commit == buildid.read_commit(str(repo))
    env = {**os.environ, "PATH": str(tmp_path), "PYTHONPATH": str(repo)}
    proc = subprocess.run([sys.executable, "-m", "winbuild.buildid"], cwd=repo, capture_output=True, text=True, env=env)
    assert proc.returncode == 1 and not proc.stdout and len(proc.stderr.splitlines()) == 1, proc.stderr


@pytest.mark.parametrize("value", ["", "0.1.0-source-T 0123", "0.1.0-0123456789ab-T", "0.1.0-aaaaaaaaaaaa-T " + COMMIT])
def test_a_passed_value_that_is_no_id_is_refused(value: str) -> None:
    with pytest.raises(buildid.BuildIdError, match="WINCNI_BUILD"):
        buildid.decode(value)


def test_the_spec_takes_the_passed_id() -> None:
    build = buildid.build_id("0.1.0", COMMIT, "20261207T101010Z")
    assert buildid.passed({buildid.ENV: buildid.encode(build, COMMIT)}) == (build, COMMIT)


@pytest.mark.parametrize(
    "build, commit, says",
    [
        ("0.1.0-0123456789ab-20261207T101010Z", COMMIT, "0.1.0 (commit 0123456789ab, built 20261207T101010Z)"),
        ("0.1.0-source-20261207T101010Z", "", "0.1.0 (source archive, built 20261207T101010Z)"),
    ],
)
def test_an_executable_says_which_build_it_is(monkeypatch, build: str, commit: str, says: str) -> None:
    monkeypatch.setitem(sys.modules, "wincni_build", type(sys)("wincni_build"))
    sys.modules["wincni_build"].BUILD, sys.modules["wincni_build"].COMMIT = build, commit
    monkeypatch.setattr(buildinfo, "_cached", [])
    assert buildinfo.describe() == says
