"""A bare clone passes `make test`: nothing in the repository reaches outside it for files."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# A machine's absolute path, the sibling shared/ folder, or a Path built towards it (spelled in
# pieces, so that this line is not itself a hit for the same check run with grep).
_SHARED = "sha" + "red"
OUTSIDE = re.compile(
    "|".join([r"/wo" + r"rk/", r"\.\./" + _SHARED, r"""["']""" + _SHARED + r"""["']\s*/""", '"' + _SHARED + "/"])
)


def tracked_text_files() -> list[Path]:
    out = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout
    paths = [
        REPO / p
        for p in out.decode().split("\0")
        if p and not p.startswith("tests/data/") and p != "tests/unit/test_self_contained.py"
    ]
    return [p for p in paths if p.suffix in {".py", ".md", ".cfg", ".toml", ".ps1", ".spec", ".txt", ".c", ".h", ""}]


def test_no_file_names_a_path_outside_the_repository():
    hits = [
        f"{p.relative_to(REPO)}:{n}: {line.strip()}"
        for p in tracked_text_files()
        if p.is_file()
        for n, line in enumerate(p.read_text(errors="replace").splitlines(), 1)
        if OUTSIDE.search(line)
    ]
    assert not hits, "read these from tests/data instead:\n" + "\n".join(hits)


def test_the_fixtures_and_goldens_are_in_the_repository():
    from testdata import FIXTURES, GOLDENS

    assert sorted(p.name for p in FIXTURES.glob("cni.conf.*.json")) == [
        "cni.conf.l2bridge-v1.json",
        "cni.conf.l2bridge-v2.json",
        "cni.conf.overlay-v1.json",
        "cni.conf.overlay-v2.json",
    ]
    assert (FIXTURES / "subnet.env").is_file() and len(list(GOLDENS.glob("*.json"))) == 10
