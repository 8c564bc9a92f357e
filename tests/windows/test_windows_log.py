"""The debug log's rotation on Windows, where appends and renames behave otherwise than on Linux: a
file others have open is renamed only because every handle shares delete, and the rotated name is
replaced while writers may still hold it. 16 Windows processes (the lane's CPython, our source)
append through ``plugins.cni.log`` at once with a small ``WINCNI_LOG_MAX_BYTES``; every line is
whole, the log stays within its bound, and only the log, its one older generation and the
rotation's lock are left."""

from __future__ import annotations

import json

from winenode import ROOT, WineNode, toolchain

WRITERS, LINES, LIMIT = 16, 60, 8 << 10

PROBE = r"""
import subprocess, sys
root, log_file, limit, count, lines = sys.argv[1:6]
sys.path.insert(0, root)
if sys.argv[6:]:  # one writer: its number
    from plugins.cni import log
    log.configure("writer", log_file=log_file, max_bytes=limit)
    for n in range(int(lines)):
        log.event("line", writer=int(sys.argv[6]), n=n, pad="x" * 120)
    sys.exit(0)
writers = [
    subprocess.Popen([sys.executable, __file__, *sys.argv[1:6], str(w)], stderr=subprocess.PIPE)
    for w in range(int(count))
]
failed = [p.communicate()[1].decode() for p in writers if p.wait() != 0]
print("failed:" + "|".join(failed))
"""


def test_sixteen_windows_writers_rotate_the_log_without_a_torn_line(node: WineNode) -> None:
    python = toolchain.winpath(toolchain.cache_dir() / "python" / "python.exe")
    script = node.root / "log_probe.py"
    script.write_text(PROBE)
    log = r"C:\wincni-logs\wincni.log"  # its folder missing: made admin-only by the first writer
    proc = node.wine(
        python, toolchain.winpath(script), toolchain.winpath(ROOT), log, str(LIMIT), str(WRITERS), str(LINES)
    )
    assert proc.returncode == 0 and proc.stdout.decode().strip().endswith("failed:"), proc.stdout + proc.stderr
    folder = node.path(r"C:\wincni-logs")
    assert sorted(p.name for p in folder.iterdir()) == ["wincni.log", "wincni.log.1", "wincni.log.lock"]
    for name in ("wincni.log", "wincni.log.1"):
        raw = (folder / name).read_bytes()
        assert raw.endswith(b"\n"), name
        docs = [json.loads(line) for line in raw.splitlines()]
        line = len(raw) // len(docs)
        assert len(raw) <= LIMIT + WRITERS * (line + 16), (name, len(raw))
        assert all(d["event"] == "line" and len(d["pad"]) == 120 for d in docs), name
