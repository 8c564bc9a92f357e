"""The debug log stays bounded while many pod commands append at once: 16 writer processes, each
logging as a plugin does (``plugins.cni.log``), with a small ``WINCNI_LOG_MAX_BYTES``. Every line
in the log and its one rotated generation is whole JSON, the log stays within the bound, nothing
but the two files (and the rotation's lock) is left, and no writer fails."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

WRITERS, LINES, LIMIT = 16, 150, 16 << 10

WRITER = """
import sys
from plugins.cni import log
log.configure("writer", log_file=sys.argv[1], max_bytes=sys.argv[2])
for n in range(int(sys.argv[3])):
    log.event("line", writer=int(sys.argv[4]), n=n, pad="x" * 120)
"""


def _lines(path: Path) -> list[dict]:
    raw = path.read_bytes() if path.exists() else b""
    assert raw == b"" or raw.endswith(b"\n"), path
    return [json.loads(line) for line in raw.splitlines()]


@pytest.mark.slow
def test_sixteen_writers_rotate_the_log_without_a_torn_line_or_growing_past_the_bound(tmp_path: Path) -> None:
    log = tmp_path / "logs" / "wincni.log"  # its folder is missing: made admin-only by the first writer
    root = Path(__file__).resolve().parents[2]
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(log), str(LIMIT), str(LINES), str(w)],
            cwd=root,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for w in range(WRITERS)
    ]
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0 and not out and not err, err.decode()
    assert sorted(p.name for p in log.parent.iterdir()) == ["wincni.log", "wincni.log.1", "wincni.log.lock"]
    assert stat.S_IMODE(log.parent.stat().st_mode) == 0o755 and stat.S_IMODE(log.stat().st_mode) == 0o600
    line = len(json.dumps(_lines(log)[0])) + 1
    for path in (log, log.with_name("wincni.log.1")):
        assert os.path.getsize(path) <= LIMIT + WRITERS * line, path  # at most one line per writer past it
        for doc in _lines(path):
            assert doc["event"] == "line" and doc["plugin"] == "writer" and len(doc["pad"]) == 120
    last = _lines(log)[-1]
    assert last["n"] <= LINES - 1 and WRITERS * LINES * line > 4 * LIMIT  # it did rotate, many times over
