"""``wincni.exe install`` from the package zip on a Windows node (Wine): into C:\\opt\\cni\\bin and
C:\\etc\\cni\\net.d, as a sig-windows-tools containerd config.toml names them, a pod through the
installed config, then an upgrade while a plugin process holds its .exe open, the next pod on the
new build, and the old build removed once nothing runs it.

The "newer build" is this build with another build ID: its launchers name their contents folder
(PyInstaller's option in the archive's table of contents), so the copy gets the folder renamed and
that name patched in every .exe and in wincni_build's code in wincni.pack (same length), which is all that tells two
builds apart on disk. A real second build would take minutes more under Wine.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

from hnsnode import Run, first_ip
from testdata import FIXTURES
from tools.wincni.node.installed import ASIDE_DIR, CONTENTS_PREFIX, MANIFEST
from winbuild.dist import COMMANDS
from winenode import WineNode, toolchain

OPT_BIN, NET_D = r"C:\opt\cni\bin", r"C:\etc\cni\net.d"
# Its own network and net-conf.json: the node is shared with test_windows_lane.py.
NETWORK, NET_CONF = "vxlan7", r"C:\etc\kube-flannel-install\net-conf.json"
KUBELET_CONFIG = r"C:\var\lib\kubelet\config.yaml"
# Not at containerd's default place: the node is shared, and test_windows_lane.py's doctor reads
# the C:\k\cni layout of a node without containerd (test_windows_dirs.py covers the default place).
CONTAINERD_CONFIG = r"C:\etc\containerd-install\config.toml"
LOG = r"C:\k\install-pods.log"


def newer_package(src: Path, dst: Path, build: str) -> str:
    stamp = build.rsplit("-", 1)[1]
    newer = build[: -len(stamp)] + "9" * (len(stamp) - 1) + "Z"
    old_name, new_name = (CONTENTS_PREFIX + build).encode(), (CONTENTS_PREFIX + newer).encode()
    dst.mkdir(parents=True)
    for name in COMMANDS:
        data = (src / f"{name}.exe").read_bytes()
        assert data.count(old_name) == 1, name
        (dst / f"{name}.exe").write_bytes(data.replace(old_name, new_name))
    shutil.copytree(src / old_name.decode(), dst / new_name.decode())
    pack = dst / new_name.decode() / "wincni.pack"  # wincni_build's code is in there
    assert pack.read_bytes().count(build.encode()) == 1
    pack.write_bytes(pack.read_bytes().replace(build.encode(), newer.encode()))
    return newer


def record(node: WineNode, what: str, result: dict) -> None:
    """What the install did, kept beside the node (pytest keeps the last runs' tmp dirs)."""
    (node.root / f"install-{what}.json").write_text(json.dumps(result, indent=1))


def install(node: WineNode, wincni: str, *args: str) -> dict:
    proc = node.wine(
        wincni, "install", "--net-conf", NET_CONF, "--containerd-config", CONTAINERD_CONFIG, "-o", "json", *args
    )
    assert proc.returncode == 0, (proc.stdout.decode(), proc.stderr.decode())
    return json.loads(proc.stdout)


def cni(node: WineNode, command: str, conf: dict, cid: str, netns: str) -> Run:
    return node.run(command, conf, cid, netns, plugin="flannel", bin_dir=OPT_BIN, WINCNI_LOG_FILE=LOG)


def started_builds(node: WineNode) -> list[str]:
    return [
        e.get("build") for e in map(json.loads, node.path(LOG).read_text().splitlines()) if e.get("event") == "start"
    ]


def holding(needle: Path, timeout: float = 30) -> None:
    """Until some process (Wine's for the holder) has mapped ``needle`` (its build's Python DLL);
    Wine may load a PE image by reading it instead, so after ``timeout`` the holder, which Wine
    starts in a few seconds, is taken to be up."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for maps in Path("/proc").glob("[0-9]*/maps"):
            try:
                if str(needle) in maps.read_text():
                    return
            except OSError:
                pass
        time.sleep(0.5)


def test_install_pods_and_an_upgrade_under_an_open_exe(node: WineNode, package_zip: Path) -> None:
    node.overlay(NETWORK)
    try:
        upgrade_under_load(node, package_zip)
    finally:
        node.hnsctl("network", "delete", NETWORK)


def upgrade_under_load(node: WineNode, package_zip: Path) -> None:
    node.lease()
    net_conf = node.path(NET_CONF)
    net_conf.parent.mkdir(parents=True, exist_ok=True)
    net_conf.write_text((FIXTURES / "net-conf.vxlan.json").read_text().replace("vxlan0", NETWORK))
    net_d = node.path(NET_D)
    net_d.mkdir(parents=True, exist_ok=True)
    (net_d / "0-containerd-nat.json").write_text('{"cniVersion": "0.3.0", "name": "nat", "type": "nat"}')
    shutil.copy(package_zip, node.path(r"C:\wincni-release.zip"))
    containerd = node.path(CONTAINERD_CONFIG)
    containerd.parent.mkdir(parents=True, exist_ok=True)
    containerd.write_text(
        f'version = 2\r\n[plugins."io.containerd.grpc.v1.cri".cni]\r\n'
        f'  bin_dir = "{OPT_BIN}"\r\n  conf_dir = "{NET_D}"\r\n'.replace("\\", "\\\\")
    )
    kubelet = node.path(KUBELET_CONFIG)  # read at its Windows default path: the DNS comes from it
    kubelet.parent.mkdir(parents=True, exist_ok=True)
    kubelet.write_text("kind: KubeletConfiguration\r\nclusterDNS:\r\n- 10.100.0.10\r\nclusterDomain: corp.example\r\n")

    first = install(node, r"C:\k\cni\wincni.exe", "--from", r"C:\wincni-release.zip")
    build = first["build"]
    assert json.loads((node.path(OPT_BIN) / MANIFEST).read_text())["build"] == build  # what every .exe names
    assert first["dns"] == {"servers": ["10.100.0.10"], "domain": "corp.example", "from": KUBELET_CONFIG}
    bin_dir = node.path(OPT_BIN)
    assert first["binDir"] == OPT_BIN and first["config"] == NET_D + r"\10-flannel.conflist"
    assert first["dirsFrom"] == CONTAINERD_CONFIG + " names them"
    assert {p.name for p in bin_dir.iterdir()} >= {*(f"{c}.exe" for c in COMMANDS), CONTENTS_PREFIX + build}
    assert sorted(p.name for p in net_d.iterdir()) == [
        "0-containerd-nat.json.disabled-by-wincni",
        "10-flannel.conflist",
    ]
    doc = json.loads((net_d / "10-flannel.conflist").read_text())
    assert doc["plugins"][0]["delegate"]["dns"] == {"Nameservers": ["10.100.0.10"], "Search": ["svc.corp.example"]}
    conf = {"cniVersion": doc["cniVersion"], "name": doc["name"], **doc["plugins"][0]}

    netns = node.sandbox("v2", "inst-pod1")
    add = cni(node, "ADD", conf, "inst-pod1", netns)
    assert add.ok, (add.out, add.stderr)
    ip, _ = first_ip(add.out)
    assert node.endpoints()[f"inst-pod1_{NETWORK}"]["IPAddress"] == ip
    assert cni(node, "CHECK", {**conf, "prevResult": add.out}, "inst-pod1", netns).ok
    assert cni(node, "DEL", conf, "inst-pod1", netns).ok
    assert f"inst-pod1_{NETWORK}" not in node.endpoints() and set(started_builds(node)) == {build}
    seen = len(started_builds(node))

    newer = newer_package(bin_dir, node.path(r"C:\wincni-newer"), build)
    holder = subprocess.Popen(
        [str(toolchain.WINE), OPT_BIN + r"\flannel.exe"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=node.drive_c / "k",
        env={**node.win_env, "CNI_COMMAND": "VERSION"},
    )  # blocks reading its config
    try:
        holding(bin_dir / (CONTENTS_PREFIX + build) / "python313.dll")
        upgrade = install(node, r"C:\wincni-newer\wincni.exe", "--from", r"C:\wincni-newer")
        record(node, "upgrade", upgrade)
        flannel = {s["path"]: s for s in upgrade["steps"]}[OPT_BIN + r"\flannel.exe"]
        assert flannel["action"] == "replace"
        if "in use" in flannel["detail"]:  # renamed aside: it and its build's contents stay
            assert (bin_dir / ASIDE_DIR / build / "flannel.exe").is_file()
            assert (bin_dir / (CONTENTS_PREFIX + build)).is_dir()

        about = node.wine(OPT_BIN + r"\flannel.exe")
        assert f"built {newer.rsplit('-', 1)[1]}" in about.stderr.decode(), about.stderr
        netns = node.sandbox("v2", "inst-pod2")
        add = cni(node, "ADD", conf, "inst-pod2", netns)
        assert add.ok, (add.out, add.stderr)
        assert started_builds(node)[seen:] and set(started_builds(node)[seen:]) == {newer}
        assert cni(node, "DEL", conf, "inst-pod2", netns).ok
    finally:
        holder.communicate(b'{"cniVersion": "1.0.0"}', timeout=120)
    assert holder.returncode == 0

    again = install(node, r"C:\wincni-newer\wincni.exe", "--from", r"C:\wincni-newer")
    record(node, "after-exit", again)
    assert {p.name for p in bin_dir.iterdir()} == {
        *(f"{c}.exe" for c in COMMANDS),
        CONTENTS_PREFIX + newer,
        ".wincni-install.json",
    }, sorted(p.name for p in bin_dir.iterdir())
    assert not (bin_dir / ASIDE_DIR).exists()

    gone = install(node, OPT_BIN + r"\wincni.exe", "--uninstall")
    assert gone["build"] == newer
    assert sorted(p.name for p in net_d.iterdir()) == ["0-containerd-nat.json"]
    assert {p.name for p in bin_dir.iterdir()} <= {"wincni.exe", ASIDE_DIR, CONTENTS_PREFIX + newer}
