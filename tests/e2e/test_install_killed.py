"""``wincni install`` killed (SIGKILL) at random moments, then run again: it converges.

Each round starts install as the operator would (the ``wincni`` console script), alternating two
builds, and kills it after a random delay: mid-takeover, mid-copy of the contents folder, between
launchers, before the manifest. After every kill each launcher present still finds its own
build's contents folder and nothing in the folders is a link; one install that runs to the end
then leaves exactly one build, the config, the manifest, and no temporary name behind.
"""

from __future__ import annotations

import json
import os
import random
import signal
import stat
import subprocess
import time
from pathlib import Path

from hnsnode import VENV_BIN, Node, package_folder
from plugins import registry
from testdata import FIXTURES
from tools.wincni.node import installed


def bulky_package(root: Path, build: str) -> Path:
    """A package whose contents folder takes a while to copy (so kills land inside the copy)."""
    folder = package_folder(root, build)
    for i in range(300):
        (folder / f"_wincni-{build}" / "plugins" / f"m{i}.pyc").write_bytes(os.urandom(16 << 10))
    return folder


def test_install_killed_at_random_moments_converges(tmp_path: Path) -> None:
    node = Node(tmp_path / "node").write_net_conf(json.loads((FIXTURES / "net-conf.vxlan.json").read_text()))
    node.conf_dir.mkdir()
    (node.conf_dir / "0-containerd-nat.json").write_text("{}")
    packages = [bulky_package(tmp_path, b) for b in ("0.1.0-aaa-1", "0.1.0-bbb-2")]
    rng = random.Random(29)
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path)}
    started = time.monotonic()
    subprocess.run(
        [str(VENV_BIN / "wincni"), *node.install_argv("--from", str(packages[1]))],
        env=env,
        check=True,
        capture_output=True,
    )
    whole = time.monotonic() - started  # one full install, start-up included: kills land inside it
    killed = 0
    for round_ in range(20):
        rel = packages[round_ % 2]
        proc = subprocess.Popen(
            [str(VENV_BIN / "wincni"), *node.install_argv("--from", str(rel))],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        time.sleep(rng.uniform(0.3, 1.0) * whole)
        proc.send_signal(signal.SIGKILL)
        _, err = proc.communicate(timeout=60)
        killed += proc.returncode == -signal.SIGKILL
        assert proc.returncode in (0, -signal.SIGKILL), err.decode()
        assert_consistent(node)
    assert killed >= 10, f"only {killed} of 20 runs were killed before they finished"
    done = node.install("--from", str(packages[1]))
    assert not done["warnings"], done["warnings"]
    assert sorted(p.name for p in node.cni_bin.iterdir()) == sorted(
        [*registry.COMMANDS, "_wincni-0.1.0-bbb-2", installed.MANIFEST]
    )
    assert sorted(p.name for p in node.conf_dir.iterdir()) == [
        "0-containerd-nat.json.disabled-by-wincni",
        "10-flannel.conflist",
    ]
    assert node.read_cni_conf()["name"] == "vxlan0"
    assert set(a["action"] for a in node.install("--from", str(packages[1]))["steps"]) == {"keep"}


def assert_consistent(node: Node) -> None:
    for folder in (node.cni_bin, node.conf_dir):
        if not folder.exists():
            continue
        for top, dirs, files in os.walk(folder):
            for name in dirs + files:
                assert not stat.S_ISLNK(os.lstat(os.path.join(top, name)).st_mode), os.path.join(top, name)
    for name in registry.COMMANDS:
        launcher = node.cni_bin / name
        if launcher.exists():  # its build's folder, or (killed between the two renames of a swap) its fresh copy
            build = installed.embedded_build(launcher.read_bytes())
            assert any(
                (node.cni_bin / f"_wincni-{build}{end}" / "python313.dll").is_file() for end in ("", installed.PARTIAL)
            ), (name, build)
