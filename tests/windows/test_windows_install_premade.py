"""On Windows: ``wincni.exe install`` into bin and conf dirs someone created and filled
beforehand, through the real Win32 calls (CreateFileW with CREATE_NEW and
FILE_FLAG_OPEN_REPARSE_POINT, GetFileInformationByHandle's link count, GetSecurityInfo /
SetSecurityInfo with the protected install DACL).

What Wine 8 cannot stage (see test_windows_security.py): every file is the prefix user's, so
"owned by another user" cannot be planted; it makes no reparse points, so a junction or symbolic
link cannot be planted either. A Unix symlink is no stand-in: Wine follows it without reporting,
even in DeleteFileW (a first version of this test saw the link's target deleted where Windows
deletes the link). So the planted entries are hard links to files outside (the victims), under
install's own temporary names too, which a folder taken over loses (``REMOVE``); a folder others
may write is staged with Unix mode bits (Wine's Everyone ACE).
"""

from __future__ import annotations

import json
import os
import shutil
import zipfile
from pathlib import Path

from testdata import FIXTURES
from winenode import WineNode

BIN, NET_D = r"C:\premade\cni\bin", r"C:\premade\cni\net.d"
NET_CONF = r"C:\premade-kube-flannel\net-conf.json"


def test_install_into_a_folder_prepared_beforehand(node: WineNode, package_zip: Path) -> None:
    bin_dir, net_d = node.path(BIN), node.path(NET_D)
    for folder in (bin_dir, net_d, node.path(NET_CONF).parent):
        folder.mkdir(parents=True, exist_ok=True)
    node.path(NET_CONF).write_text((FIXTURES / "net-conf.vxlan.json").read_text().replace("vxlan0", "vxlan29"))
    shutil.copy(package_zip, node.path(r"C:\premade-release.zip"))
    with zipfile.ZipFile(package_zip) as zf:
        build = next(n.split("/")[0] for n in zf.namelist() if n.startswith("_wincni-"))[len("_wincni-") :]
        flannel = zf.read("flannel.exe")
    victims = {name: node.root / f"victim-{name}" for name in ("hard", "launcher", "conf")}
    for name, path in victims.items():
        path.write_text(f"secret {name}")
    (bin_dir / "stray.exe").write_text("someone's tool")
    os.link(victims["hard"], bin_dir / "hard.exe")
    os.link(victims["launcher"], bin_dir / ".flannel.exe.wincni-new")
    os.link(victims["conf"], net_d / ".10-flannel.conflist.wincni-tmp")
    planted = bin_dir / f"_wincni-{build}"
    planted.mkdir()
    (planted / "python313.dll").write_text("payload")
    (bin_dir / ".wincni-install.json").write_text(
        json.dumps({"build": build, "moved": [[r"C:\Windows\system32\x.dll", NET_D + r"\x.dll.disabled-by-wincni"]]})
    )
    for folder in (bin_dir.parent, bin_dir, net_d):
        os.chmod(folder, 0o777)  # Wine: Everyone may write

    args = (
        "install",
        "--from",
        r"C:\premade-release.zip",
        "--cni-bin-dir",
        BIN,
        "--cni-conf-dir",
        NET_D,
        "--net-conf",
        NET_CONF,
        "-o",
        "json",
    )
    proc = node.wine(r"C:\k\cni\wincni.exe", *args, "--dry-run")  # winwalk.walk's survey: says, changes nothing
    assert proc.returncode == 0, (proc.stdout.decode(), proc.stderr.decode())
    plan = {(s["action"], s["path"]) for s in json.loads(proc.stdout)["steps"]}
    assert {("takeover", BIN), ("takeover", NET_D), ("remove", BIN + r"\hard.exe")} <= plan, plan
    assert os.stat(bin_dir).st_mode & 0o002 and (bin_dir / "hard.exe").exists()

    proc = node.wine(r"C:\k\cni\wincni.exe", *args)
    assert proc.returncode == 0, (proc.stdout.decode(), proc.stderr.decode())
    done = json.loads(proc.stdout)
    (node.root / "install-premade.json").write_text(json.dumps(done, indent=1))
    steps = {(s["action"], s["path"]) for s in done["steps"]}
    assert {
        ("takeover", BIN),
        ("takeover", NET_D),
        ("remove", BIN + r"\hard.exe"),
        ("remove", BIN + r"\.flannel.exe.wincni-new"),
        ("quarantine", NET_D + r"\.10-flannel.conflist.wincni-tmp"),
    } <= steps, done["steps"]
    copy = next(s for s in done["steps"] if s["path"] == BIN + rf"\_wincni-{build}")
    assert copy["action"] == "copy" and "not the one install laid" in copy["detail"], copy
    assert any("ignored" in w and "folder others could write" in w for w in done["warnings"]), done["warnings"]

    assert all(path.read_text() == f"secret {name}" for name, path in victims.items())
    assert not os.path.lexists(bin_dir / ".flannel.exe.wincni-new") and not (bin_dir / "hard.exe").exists()
    assert (bin_dir / "flannel.exe").read_bytes() == flannel and not (bin_dir / "flannel.exe").is_symlink()
    assert (planted / "python313.dll").read_bytes() != b"payload" and (bin_dir / "stray.exe").is_file()
    assert json.loads((net_d / "10-flannel.conflist").read_text())["name"] == "vxlan29"
    for folder in (bin_dir.parent, bin_dir, net_d):
        assert not os.stat(folder).st_mode & 0o002, folder
    written = json.loads((bin_dir / ".wincni-install.json").read_text())
    assert written["moved"] == [] and [name for name, _ in written["contents"]] == [f"_wincni-{build}"]

    proc = node.wine(
        r"C:\k\cni\wincni.exe",
        "install",
        "--uninstall",
        "--cni-bin-dir",
        BIN.lower(),  # one folder
        "--cni-conf-dir",
        NET_D.lower().replace("\\", "/"),
        "--net-conf",
        NET_CONF,
        "-o",
        "json",
    )  # to Windows
    assert proc.returncode == 0, (proc.stdout.decode(), proc.stderr.decode())
    assert sorted(p.name for p in bin_dir.iterdir()) == ["stray.exe"]
    assert not (net_d / "10-flannel.conflist").exists()
