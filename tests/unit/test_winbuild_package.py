"""What the package zip carries beside the executables (winbuild/package/): ``INSTALL.txt`` finds
the node's CNI folders with ``wincni dirs`` instead of naming one, and every wincni command line it
gives is one wincni's own parser takes."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest

from tools.wincni.cli.main import build_parser
from tools.wincni.cli.main import main as wincni_main

INSTALL_TXT = Path(__file__).resolve().parents[2] / "winbuild" / "package" / "INSTALL.txt"
#: The folders a node may or may not use: containerd's defaults, sig-windows-tools', the kubelet's.
FIXED_BIN_DIRS = ("containerd\\cni\\bin", "C:\\opt\\cni\\bin\\", "C:\\k\\cni\\wincni.exe")


def command_lines(text: str) -> list[list[str]]:
    """The arguments of each ``wincni.exe`` command line in ``text``, up to a pipe or parenthesis."""
    return [args.split() for args in re.findall(r"wincni\.exe((?: [^\s|)]+)+)", text)]


def test_install_txt_runs_from_no_fixed_folder() -> None:
    text = INSTALL_TXT.read_text()
    assert not [d for d in FIXED_BIN_DIRS if d.lower() in text.lower()], "INSTALL.txt names a CNI bin dir"
    assert [line[0] for line in command_lines(text)][:2] == ["dirs", "install"]


def test_install_txt_command_lines_parse() -> None:
    lines = command_lines(INSTALL_TXT.read_text())
    assert {line[0] for line in lines} >= {"dirs", "install", "sourcevip", "doctor"}
    for line in lines:
        build_parser("win32").parse_args(line)


def test_install_txt_reads_the_bin_dir_wincni_dirs_prints(tmp_path: Path) -> None:
    """Step 4 takes ``binDir`` from ``wincni dirs -o json``: the key is there."""
    out = io.StringIO()
    rc = wincni_main(
        ["dirs", "--containerd-config", str(tmp_path / "config.toml"), "-o", "json"],
        out,
        io.StringIO(),
        {},
        platform="linux",
        cwd=str(tmp_path),
    )
    assert rc == 0 and ".binDir" in INSTALL_TXT.read_text() and json.loads(out.getvalue())["binDir"]


@pytest.mark.parametrize(
    "text, found",
    [
        ("  2. C:\\r\\wincni.exe dirs\n", [["dirs"]]),
        ("Set-Location (C:\\r\\wincni.exe dirs -o json | ConvertFrom-Json).binDir", [["dirs", "-o", "json"]]),
        ('& "C:\\Program Files\\containerd\\cni\\bin\\wincni.exe" doctor', []),
    ],
)
def test_command_lines_are_found_as_written(text: str, found: list) -> None:
    assert command_lines(text) == found
