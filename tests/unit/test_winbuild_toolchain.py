"""winbuild.toolchain.run_wine retries Wine's transient process-start failure, and nothing else."""

from __future__ import annotations

import pytest

from winbuild import toolchain

# A stand-in for wine64: fails its first run with the given message, then succeeds.
FAKE_WINE = """#!/bin/sh
n=$(cat "{count}" 2>/dev/null || echo 0); echo $((n + 1)) > "{count}"
if [ "$n" = 0 ]; then echo "{message}" >&2; exit 1; fi
echo ran "$@"
"""


def fake_wine(tmp_path, monkeypatch, message: str):
    count = tmp_path / "count"
    wine = tmp_path / "wine64"
    wine.write_text(FAKE_WINE.format(count=count, message=message))
    wine.chmod(0o755)
    monkeypatch.setattr(toolchain, "WINE", wine)
    monkeypatch.setattr(toolchain, "RETRIED", [])
    return count


def test_the_wine_process_start_flake_is_retried_once(tmp_path, monkeypatch, capsys):
    count = fake_wine(tmp_path, monkeypatch, "OSError: [WinError 1359] Internal error")
    proc = toolchain.run_wine(tmp_path, ["python.exe", "-m", "PyInstaller"], env={}, check=True)
    assert proc.stdout == b"ran python.exe -m PyInstaller\n"
    assert count.read_text().strip() == "2"
    assert "retrying once" in capsys.readouterr().err
    assert toolchain.RETRIED == ["python.exe -m: WinError 1359"]


def test_a_silent_non_zero_exit_is_retried_once(tmp_path, monkeypatch):
    """Windows CPython refusing a standard handle exits 1 before any code runs, its message lost
    on the bad handle: nothing on either stream, so it never ran."""
    count = fake_wine(tmp_path, monkeypatch, "")
    proc = toolchain.run_wine(tmp_path, ["flannel.exe"], env={})
    assert proc.returncode == 0 and proc.stdout == b"ran flannel.exe\n"
    assert count.read_text().strip() == "2"
    assert toolchain.RETRIED == ["flannel.exe: exit status 1 without a word"]


def test_any_other_failure_is_reported_at_once(tmp_path, monkeypatch):
    count = fake_wine(tmp_path, monkeypatch, "SyntaxError: invalid syntax")
    with pytest.raises(toolchain.ToolchainError, match="exit status 1"):
        toolchain.run_wine(tmp_path, ["python.exe", "-m", "PyInstaller"], env={}, check=True)
    assert count.read_text().strip() == "1"
