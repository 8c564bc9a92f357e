"""Every executable names its build, Python and platform with ``--version`` and ``version``, run as
an operator runs it: the console script and ``python -m``."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

from hnsnode import VENV_BIN
from plugins import registry
from plugins.cni.buildinfo import describe

REPO = Path(__file__).resolve().parents[2]


def run(argv: list[str], tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("CNI_", "LIBHNS_", "WINCNI_"))}
    return subprocess.run(
        argv,
        cwd=tmp_path,
        env={**clean, "PYTHONPATH": str(REPO), "LIBHNS_BACKEND": "sim", "LIBHNS_SIM_DIR": str(tmp_path), **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def says_the_build(proc: subprocess.CompletedProcess, name: str) -> list[str]:
    assert (proc.returncode, proc.stderr) == (0, ""), proc
    lines = proc.stdout.splitlines()
    assert lines[:3] == [
        f"{name} {describe()}",
        f"Python {platform.python_version()}",
        f"platform {platform.platform()}",
    ], lines
    return lines


@pytest.mark.parametrize("name", registry.COMMANDS)
@pytest.mark.parametrize("asked", ["--version", "version"])
def test_every_console_script_says_its_build(tmp_path: Path, name: str, asked: str) -> None:
    says_the_build(run([str(VENV_BIN / name), asked], tmp_path), name)


@pytest.mark.parametrize("name", registry.COMMANDS)
def test_every_module_says_its_build(tmp_path: Path, name: str) -> None:
    says_the_build(run([sys.executable, "-m", registry.entry_module(name), "--version"], tmp_path), name)


def test_a_plugin_keeps_cnis_version_command_and_its_about_text(tmp_path: Path) -> None:
    """CNI_COMMAND=VERSION is the runtime's, arguments or not; bare, the about text goes to stderr."""
    proc = run([str(VENV_BIN / "flannel"), "--version"], tmp_path, CNI_COMMAND="VERSION")
    assert proc.returncode == 0 and "supportedVersions" in json.loads(proc.stdout)
    proc = run([str(VENV_BIN / "flannel")], tmp_path)
    assert (proc.returncode, proc.stdout) == (0, "") and proc.stderr.startswith(f"flannel {describe()}: ")


def test_a_plugin_refuses_other_arguments_as_usage(tmp_path: Path) -> None:
    proc = run([str(VENV_BIN / "win-bridge"), "--bogus"], tmp_path)
    assert (proc.returncode, proc.stdout) == (2, "") and "usage: win-bridge [--version | version]" in proc.stderr


def test_hnsctl_puts_hns_beside_its_build(tmp_path: Path) -> None:
    lines = says_the_build(run([str(VENV_BIN / "hnsctl"), "version"], tmp_path, LIBHNS_SIM_VERSION="11.10"), "hnsctl")
    assert lines[3] == "HNS 11.10" and lines[4].split() == ["FEATURE", "SUPPORTED"]
    doc = json.loads(run([str(VENV_BIN / "hnsctl"), "version", "-o", "json"], tmp_path).stdout)
    assert (doc["Major"], doc["Minor"], doc["python"]) == (13, 2, platform.python_version())


def test_hnsctl_says_its_build_when_hns_does_not_answer(tmp_path: Path) -> None:
    lines = says_the_build(run([str(VENV_BIN / "hnsctl"), "--version"], tmp_path, LIBHNS_BACKEND="bogus"), "hnsctl")
    assert lines[3].startswith("HNS not reachable: LIBHNS_BACKEND='bogus'"), lines
    doc = json.loads(run([str(VENV_BIN / "hnsctl"), "version", "-o", "json"], tmp_path, LIBHNS_BACKEND="bogus").stdout)
    assert doc["version"] and doc["HnsError"].startswith("HNS not reachable") and "Major" not in doc


def test_wincni_version_speaks_json(tmp_path: Path) -> None:
    doc = json.loads(run([str(VENV_BIN / "wincni"), "version", "-o", "json"], tmp_path).stdout)
    assert (
        set(doc) == {"version", "commit", "build", "python", "platform"} and doc["python"] == platform.python_version()
    )
