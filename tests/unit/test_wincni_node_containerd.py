"""Where the runtime's CNI folders are (``containerd.locate``), the one answer ``wincni install``,
``doctor``, ``sourcevip``, ``reclaim`` and ``dirs`` default to (install
followed config.toml but fell back to C:\\opt\\cni\\bin where containerd looks in
%ProgramFiles%\\containerd\\cni, and the doctor looked in C:\\k\\cni\\config after any install)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from hnsnode import Node, package_folder
from testdata import FIXTURES
from tools.wincni.cli.main import main
from tools.wincni.node import containerd
from tools.wincni.node.containerd import CniDirs, ConfigError, locate

PF = r"D:\Apps"  # a %ProgramFiles% elsewhere than C:, so a hard-coded C:\Program Files shows
HOME = PF + r"\containerd"
CONFIG = HOME + r"\config.toml"
V2 = b'version = 2\n[plugins."io.containerd.grpc.v1.cri".cni]\n  bin_dir = "E:\\\\cni\\\\bin"\n  conf_dir = "E:\\\\cni\\\\net.d"\n'
V3 = (
    b'version = 3\n[plugins."io.containerd.cri.v1.runtime".cni]\n  bin_dirs = ["F:\\\\cni\\\\bin", "G:\\\\more"]\n'
    b'  conf_dir = "F:\\\\cni\\\\conf"\n'
)
DEFAULTS = (PF + r"\containerd\cni\bin", PF + r"\containerd\cni\conf")
LEGACY = (r"C:\k\cni", r"C:\k\cni\config")
NO_CONTAINERD = containerd.without_containerd("win32")  # what the reading tools pass


class Files:
    """The node's files and folders as ``locate`` reads them; records what it read."""

    def __init__(self, files: dict[str, bytes], dirs: tuple[str, ...] = ()) -> None:
        self.files, self.dirs, self.reads = files, dirs, []

    def read(self, path: str, cap: int) -> bytes | None:
        self.reads.append(path)
        if path in self.dirs:
            raise IsADirectoryError(21, "Is a directory")
        return self.files[path][:cap] if path in self.files else None

    def isdir(self, path: str) -> bool:
        return path in self.dirs


def windows(
    files: Files, absent: CniDirs | None = NO_CONTAINERD, env: dict | None = None, config: str | None = None
) -> CniDirs:
    return locate("win32", {"ProgramFiles": PF} if env is None else env, files.read, files.isdir, config, absent)


@pytest.mark.parametrize(
    "raw, want",
    [(V2, (r"E:\cni\bin", r"E:\cni\net.d")), (V3, (r"F:\cni\bin", r"F:\cni\conf"))],
    ids=["containerd-1.x", "containerd-2.x"],
)
def test_a_config_with_a_cni_section_decides(raw: bytes, want: tuple[str, str]) -> None:
    files = Files({CONFIG: raw}, dirs=(HOME,))
    found = windows(files)
    assert (found.bin_dir, found.conf_dir) == want and found.why == f"{CONFIG} names them"
    assert files.reads == [CONFIG]  # containerd's own config.toml, under %ProgramFiles%


def test_a_config_naming_one_folder_leaves_the_other_to_containerd() -> None:
    found = windows(Files({CONFIG: b'[plugins."io.containerd.cri.v1.runtime".cni]\n  conf_dir = "F:\\\\c"\n'}))
    assert (found.bin_dir, found.conf_dir) == (DEFAULTS[0], r"F:\c") and "names conf_dir" in found.why


@pytest.mark.parametrize(
    "files",
    [Files({CONFIG: b"version = 2\n"}, dirs=(HOME,)), Files({CONFIG: b""}), Files({}, dirs=(HOME,))],
    ids=["without-cni-section", "empty", "absent-but-installed"],
)
def test_containerd_s_own_windows_defaults_under_program_files(files: Files) -> None:
    """containerd 1.x and 2.x: filepath.Join(os.Getenv("ProgramFiles"), "containerd", "cni", "bin"/"conf")."""
    found = windows(files)
    assert (found.bin_dir, found.conf_dir) == DEFAULTS and "containerd's own defaults" in found.why


def test_no_containerd_at_all() -> None:
    """The reading tools look at the dockershim-era C:\\k\\cni; install lays for containerd anyway."""
    found = windows(Files({}))
    assert (found.bin_dir, found.conf_dir) == LEGACY and "no containerd here" in found.why and "C:\\k\\cni" in found.why
    installing = windows(Files({}), absent=None)
    assert (installing.bin_dir, installing.conf_dir) == DEFAULTS
    named = windows(Files({}), config=r"E:\my\config.toml")  # the operator named a config: containerd's own
    assert (named.bin_dir, named.conf_dir) == DEFAULTS and named.why.startswith(r"E:\my\config.toml does not exist")


@pytest.mark.parametrize(
    "env, home",
    [
        ({}, r"C:\Program Files\containerd"),
        ({"PROGRAMFILES": PF}, HOME),
        ({"ProgramFiles": "relative"}, r"C:\Program Files\containerd"),
        ({"ProgramFiles": "\\\\server\\share"}, r"C:\Program Files\containerd"),
    ],
)
def test_program_files_as_windows_spells_it_else_its_usual_place(env: dict, home: str) -> None:
    files = Files({}, dirs=(home,))
    found = windows(files, env=env)
    assert files.reads == [home + r"\config.toml"] and found.bin_dir == home + r"\cni\bin"


def test_elsewhere_than_windows_containerd_s_linux_defaults() -> None:
    files = Files({})
    found = locate("linux", {"ProgramFiles": PF}, files.read, files.isdir)
    assert (found.bin_dir, found.conf_dir) == ("/opt/cni/bin", "/etc/cni/net.d") and files.reads == [
        "/etc/containerd/config.toml"
    ]


@pytest.mark.parametrize(
    "files, words", [(Files({CONFIG: b"[plugins\n"}), "is not valid TOML"), (Files({}, dirs=(CONFIG,)), "cannot read")]
)
def test_a_config_that_cannot_be_used_is_an_error_naming_it(files: Files, words: str) -> None:
    with pytest.raises(ConfigError, match=words) as caught:
        windows(files)
    assert CONFIG in str(caught.value)


# ------------------------------------------------------------------ the commands, on one node


def test_a_plain_doctor_finds_what_install_wrote_where_config_toml_said(tmp_path: Path) -> None:
    """config.toml names folders of its own: install lays there, and the doctor, ``wincni dirs``
    and sourcevip's default look there, with no --cni-conf / --cni-bin-dir."""
    node = Node(tmp_path).write_net_conf(json.loads((FIXTURES / "net-conf.vxlan.json").read_text()))
    bin_dir, conf_dir = tmp_path / "runtime cni" / "bin", tmp_path / "runtime cni" / "conf"
    config = tmp_path / "config.toml"  # where Node.install points --containerd-config
    config.write_text(
        f'version = 3\n[plugins."io.containerd.cri.v1.runtime".cni]\n'
        f'  bin_dirs = ["{bin_dir}"]\n  conf_dir = "{conf_dir}"\n'
    )
    done = node.install("--from", str(package_folder(tmp_path, "0.1.0-aaa-1")), dirs=False)
    assert done["binDir"] == str(bin_dir) and done["config"] == str(conf_dir / containerd.CONF_NAME)
    assert done["dirsFrom"] == f"{config} names them"

    def wincni(*argv: str) -> tuple[int, str]:
        out, err = io.StringIO(), io.StringIO()
        rc = main([*argv, "--containerd-config", str(config)], out, err, node.env, platform="linux", cwd=str(tmp_path))
        assert err.getvalue() == ""
        return rc, out.getvalue()

    _, text = wincni("doctor", "-o", "json")
    doc = json.loads(text)
    checks = {c["id"]: c for c in doc["checks"]}
    assert doc["cniDirs"] == {"conf": str(conf_dir), "binDir": str(bin_dir), "from": f"{config} names them"}
    # found and loaded (its delegate waits for flanneld's lease, which this node has not yet)
    assert checks["config"]["message"].startswith(f"{conf_dir / containerd.CONF_NAME}: flannel config valid"), checks
    assert checks["plugins"]["status"] == "ok", checks["plugins"]
    one = json.loads(wincni("doctor", "--cni-conf", str(conf_dir), "-o", "json")[1])["cniDirs"]
    assert one == {"conf": str(conf_dir), "binDir": str(bin_dir), "from": f"--cni-conf given; {config} names them"}
    _, table = wincni("doctor")
    assert table.splitlines()[0] == f"CNI config {conf_dir}, plugins {bin_dir}: {config} names them"
    assert json.loads(wincni("dirs", "-o", "json")[1]) == {
        "binDir": str(bin_dir),
        "confDir": str(conf_dir),
        "from": f"{config} names them",
    }
    rc, text = wincni("sourcevip", "--timeout", "0", "-o", "json")  # it read install's config, then waits for flanneld
    assert rc == 1 and json.loads(text)["error"].startswith("flanneld's lease (subnet.env) not there"), text


def test_a_config_toml_the_doctor_cannot_use_is_said_and_containerd_s_defaults_looked_at(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text("[plugins\n")
    out = io.StringIO()
    main(
        ["doctor", "--containerd-config", str(config), "-o", "json"],
        out,
        io.StringIO(),
        {},
        platform="linux",
        cwd=str(tmp_path),
    )
    looked = json.loads(out.getvalue())["cniDirs"]
    assert looked["conf"] == "/etc/cni/net.d" and "is not valid TOML" in looked["from"]
    assert "--cni-conf and --cni-bin-dir" in looked["from"]  # the doctor's own flags, not install's
