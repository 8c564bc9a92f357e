"""basics.inputfile: what a flag names is read only when it is a regular file under the cap, never waited on."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from basics import inputfile
from basics.errors import UnsafePath


def test_a_regular_file_and_nothing_there(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"abc")
    assert inputfile.read(str(tmp_path / "f"), 3) == inputfile.Input(str(tmp_path / "f"), b"abc")
    assert inputfile.read(str(tmp_path / "none"), 3) is None


@pytest.mark.parametrize(
    "make, words",
    [
        (lambda p: os.mkfifo(p), "is a FIFO, not a regular file"),
        (lambda p: os.mkdir(p), "is a folder, not a regular file"),
        (lambda p: p.write_bytes(b"abcd"), "is over 3 bytes"),
    ],
)
def test_what_is_not_a_file_under_the_cap_is_refused_at_once(tmp_path: Path, make, words: str) -> None:
    make(tmp_path / "x")
    start = time.monotonic()
    with pytest.raises(UnsafePath, match=words):
        inputfile.read(str(tmp_path / "x"), 3)
    assert time.monotonic() - start < 1


def test_a_configmap_link_chain_of_our_own_is_followed(tmp_path: Path) -> None:
    """kubelet's atomic writer: ``f -> ..data/f`` and ``..data -> ..<timestamp>``, relative and absolute."""
    (tmp_path / "..2026_01_01").mkdir()
    (tmp_path / "..2026_01_01" / "f").write_bytes(b"{}")
    (tmp_path / "..data").symlink_to("..2026_01_01")
    (tmp_path / "f").symlink_to("..data/f")
    (tmp_path / "abs").symlink_to(tmp_path / "f")
    for name in ("f", "abs"):
        assert inputfile.read(str(tmp_path / name), 2).data == b"{}"


def test_a_link_loop_is_refused(tmp_path: Path) -> None:
    (tmp_path / "a").symlink_to("b")
    (tmp_path / "b").symlink_to("a")
    with pytest.raises(UnsafePath, match="more than 40 links"):
        inputfile.read(str(tmp_path / "a"), 10)


def test_size_reads_as_people_write_caps() -> None:
    assert [inputfile.size(n) for n in (1 << 20, 64 << 10, 100)] == ["1 MiB", "64 KiB", "100 bytes"]
