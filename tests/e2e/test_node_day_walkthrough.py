"""docs/DEVELOPING.md's "A node's day" walk-through, run as written (bash, from the clone, with the package
folder ``make dist`` builds): install → doctor → the doctor's own ``run:`` command → doctor → a pod
through the installed config → uninstall, on the simulator."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from plugins import registry
from testdata import require_frozen

REPO = Path(__file__).resolve().parents[2]
DIST = REPO / "dist" / "wincni"
MARK = "runs this block as written"

pytestmark = pytest.mark.frozen  # the walk-through starts from the package folder


def block() -> str:
    text = (REPO / "docs" / "DEVELOPING.md").read_text()
    after = text[text.index(MARK) :]
    start = after.index("```sh\n") + len("```sh\n")
    return after[start : after.index("```\n", start)]


def test_the_walkthrough_runs_as_written(tmp_path: Path) -> None:
    require_frozen(DIST, "wincni")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CNI_", "LIBHNS_", "WINCNI_"))}
    proc = subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", block()],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={**env, "TMPDIR": str(tmp_path)},
        timeout=300,
    )
    assert proc.returncode == 0 and proc.stderr == "", (proc.stdout, proc.stderr)
    out = proc.stdout
    [node] = re.findall(r"^WRITE    (\S+)/net\.d/10-flannel\.conflist$", out, re.M)
    doctors = re.findall(r"^\d+ checks: \d+ ok, (\d+) failed, (\d+) warnings, 0 not checked$", out, re.M)
    assert doctors == [("0", "1"), ("0", "0")], out
    [run] = re.findall(r"^ +run: (.*)$", out, re.M)
    printed = next(line for line in block().splitlines() if " sourcevip " in line)
    assert run == printed.replace("$N", node), (run, printed)  # the walk-through pastes the doctor's own line
    assert '"address": "10.244.4.3/24"' in out and '"10.96.0.10"' in out and "pod1_vxlan0" in out
    laid = len(registry.COMMANDS) + 2  # each command's launcher, the contents folder, the conflist
    assert out.rstrip().endswith(f"uninstalled: {laid} item(s), 0 warning(s)")
    assert sorted(p.name for p in Path(node, "bin").iterdir()) == [] and not list(Path(node, "net.d").iterdir())
