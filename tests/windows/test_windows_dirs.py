"""Where the runtime's CNI folders are, on a Windows node (Wine): ``containerd.locate``'s Windows
branch, containerd's folder and defaults under %ProgramFiles% as the Windows process has it
(containerd 1.x and 2.x: ``filepath.Join(os.Getenv("ProgramFiles"), "containerd", "cni", ...)``),
through ``wincni.exe dirs`` and a plain ``wincni.exe doctor``.

The node is shared with test_windows_lane.py, whose doctor reads the C:\\k\\cni layout of a node
without containerd: containerd's folder is made here and removed again.
"""

from __future__ import annotations

import json
import shutil

from testdata import FIXTURES
from winenode import WineNode

HOME = r"C:\Program Files\containerd"


def dirs(node: WineNode) -> dict:
    proc = node.wine(node.exe("wincni"), "dirs", "-o", "json")
    assert proc.returncode == 0 and b"Traceback" not in proc.stderr, (proc.stdout, proc.stderr)
    return json.loads(proc.stdout)


def test_the_cni_folders_are_containerd_s_under_program_files_else_c_k_cni(node: WineNode) -> None:
    home = node.path(HOME)
    assert node.path(r"C:\Program Files").is_dir() and not home.exists()
    legacy = dirs(node)
    assert (legacy["binDir"], legacy["confDir"]) == (r"C:\k\cni", r"C:\k\cni\config"), legacy
    assert legacy["from"].startswith(f"no containerd here ({HOME}\\config.toml and {HOME} do not exist)"), legacy
    try:
        (home / "cni" / "conf").mkdir(parents=True)
        installed = dirs(node)  # containerd's folder, no config.toml: containerd's own defaults
        assert (installed["binDir"], installed["confDir"]) == (HOME + r"\cni\bin", HOME + r"\cni\conf"), installed
        (home / "config.toml").write_text("version = 2\r\n")
        assert dirs(node)["from"] == f"{HOME}\\config.toml leaves them out: containerd's own defaults"
        conf = json.loads((FIXTURES / "cni.conf.l2bridge-v2.json").read_text())
        (home / "cni" / "conf" / "10-flannel.conf").write_text(json.dumps(conf))
        proc = node.wine(node.exe("wincni"), "doctor", "-o", "json")
        assert b"Traceback" not in proc.stderr, proc.stderr.decode()
        doc = json.loads(proc.stdout)
        assert doc["cniDirs"]["conf"] == HOME + r"\cni\conf" and doc["cniDirs"]["binDir"] == HOME + r"\cni\bin"
        config = {c["id"]: c for c in doc["checks"]}["config"]
        assert HOME + r"\cni\conf\10-flannel.conf" in config["message"], config
        (home / "config.toml").write_text(
            '[plugins."io.containerd.grpc.v1.cri".cni]\r\n  conf_dir = "C:\\\\k\\\\cni\\\\config"\r\n'
        )
        named = dirs(node)
        assert (named["binDir"], named["confDir"]) == (HOME + r"\cni\bin", r"C:\k\cni\config"), named
    finally:
        shutil.rmtree(home)
