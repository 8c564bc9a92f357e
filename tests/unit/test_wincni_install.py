"""``wincni install``: temp dirs for the node's folders, a fake package, and a Disk with Windows'
rules for files in use (a running .exe can be renamed, not replaced or deleted; a folder holding
one can be neither renamed nor deleted)."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest

from hnsnode import Node, package_folder
from plugins import registry
from plugins.winnet.policies import V2, UserPolicies
from testdata import FIXTURES
from tools.wincni.cli.main import main
from tools.wincni.node import installed
from tools.wincni.node.disk import Disk

COMMANDS = registry.COMMANDS
#: What a fresh install changes: each command's launcher, the contents folder, the conflist, a disabled config.
FRESH = len(COMMANDS) + 3


class WindowsDisk(Disk):
    """Disk refusing what Windows refuses for the paths in ``held`` (files a process has open)."""

    def __init__(self) -> None:
        super().__init__()
        self.held: set[str] = set()
        self.moved: dict[str, str] = {}  # held file renamed: where it went (a process keeps running it)

    def _holds(self, path: str) -> bool:
        return any(h == path or h.startswith(path + os.sep) for h in self.held)

    def replace(self, src: str, dst: str) -> None:
        if self._holds(dst) or self._holds(src):
            raise PermissionError(13, "in use", dst)
        super().replace(src, dst)

    def remove(self, path: str) -> None:
        if self._holds(path):
            raise PermissionError(13, "in use", path)
        super().remove(path)

    def purge(self, path: str) -> None:
        if self._holds(path):
            raise PermissionError(13, "in use", path)
        super().purge(path)

    def rename(self, src: str, dst: str) -> None:
        if src in self.held:  # a running exe may be renamed: it stays held under its new name
            super().rename(src, dst)
            self.held = {dst if h == src else h for h in self.held}
            self.moved[src] = dst
            return
        if self._holds(src):
            raise PermissionError(13, "in use", src)
        super().rename(src, dst)


def launcher_build(path: Path) -> str:
    return installed.embedded_build(path.read_bytes())


def install_node(root: Path, netconf: str = "net-conf.vxlan.json") -> Node:
    """A node with flannel's net-conf.json and a disk with Windows' rules for files in use."""
    node = Node(root).write_net_conf(json.loads((FIXTURES / netconf).read_text()))
    node.disk = WindowsDisk()
    return node


def actions(result: dict) -> dict[str, str]:
    return {os.path.basename(s["path"]): s["action"] for s in result["steps"]}


pytestmark = pytest.mark.node(build=install_node)


def test_fresh_install_then_an_idempotent_second_run(node: Node, tmp_path: Path) -> None:
    rel = package_folder(tmp_path, "0.1.0-aaa-1")
    node.conf_dir.mkdir()
    (node.conf_dir / "0-containerd-nat.json").write_text('{"type": "nat"}')
    (node.conf_dir / "99-later.conf").write_text("{}")
    table = node.install("--from", str(rel), output="table")
    assert "COPY     " + str(node.cni_bin / "_wincni-0.1.0-aaa-1") in table
    assert "INSTALL  " + str(node.cni_bin / "flannel") in table
    assert "WRITE    " + str(node.conf_dir / "10-flannel.conflist") in table
    assert "DISABLE  " + str(node.conf_dir / "0-containerd-nat.json") in table
    assert table.rstrip().endswith(f"build 0.1.0-aaa-1: changed {FRESH} item(s), 0 warning(s)")
    for c in COMMANDS:
        assert launcher_build(node.cni_bin / c) == "0.1.0-aaa-1"
    assert (node.cni_bin / "_wincni-0.1.0-aaa-1" / "python313.dll").is_file()
    assert sorted(p.name for p in node.conf_dir.iterdir()) == [
        "0-containerd-nat.json.disabled-by-wincni",
        "10-flannel.conflist",
        "99-later.conf",
    ]
    assert node.read_cni_conf()["name"] == "vxlan0"
    written = (node.conf_dir / "10-flannel.conflist").stat().st_mtime_ns

    again = node.install("--from", str(rel))
    assert set(actions(again).values()) == {"keep"}, again
    assert (node.conf_dir / "10-flannel.conflist").stat().st_mtime_ns == written


def test_dry_run_prints_the_plan_and_the_diff_and_changes_nothing(node: Node, tmp_path: Path) -> None:
    rel = package_folder(tmp_path, "0.1.0-aaa-1")
    node.conf_dir.mkdir()
    (node.conf_dir / "0-containerd-nat.json").write_text("{}")
    plan = node.install("--from", str(rel), "--dry-run")
    assert (
        plan["dryRun"] and actions(plan)["flannel"] == "install" and actions(plan)["0-containerd-nat.json"] == "disable"
    )
    assert '+  "name": "vxlan0",' in plan["diff"]
    assert not node.cni_bin.exists() and sorted(p.name for p in node.conf_dir.iterdir()) == ["0-containerd-nat.json"]
    table = node.install("--from", str(rel), "--dry-run", output="table")
    assert f"would change {FRESH} item(s)" in table and "+++ " + str(node.conf_dir / "10-flannel.conflist") in table


def test_uninstall_removes_exactly_what_install_laid_and_restores_moved_configs(node: Node, tmp_path: Path) -> None:
    node.cni_bin.mkdir()
    (node.cni_bin / "nat").write_text("someone else's plugin")
    node.conf_dir.mkdir()
    (node.conf_dir / "0-containerd-nat.json").write_text('{"type": "nat"}')
    node.install("--from", str(package_folder(tmp_path, "0.1.0-aaa-1")))
    done = node.install("--uninstall")
    assert actions(done)["0-containerd-nat.json"] == "restore" and actions(done)["10-flannel.conflist"] == "remove"
    assert sorted(p.name for p in node.cni_bin.iterdir()) == ["nat"]
    assert sorted(p.name for p in node.conf_dir.iterdir()) == ["0-containerd-nat.json"]
    assert node.install("--uninstall")["warnings"]  # nothing left to uninstall: said, not failed


def test_uninstall_keeps_a_config_changed_since(node: Node, tmp_path: Path) -> None:
    node.install("--from", str(package_folder(tmp_path, "0.1.0-aaa-1")))
    (node.conf_dir / "10-flannel.conflist").write_text("{}")
    done = node.install("--uninstall")
    assert actions(done)["10-flannel.conflist"] == "keep"
    assert (node.conf_dir / "10-flannel.conflist").read_text() == "{}"
    [warning] = done["warnings"]  # a config naming the plugins just removed: said, and counted
    assert warning.startswith(f"{node.conf_dir / '10-flannel.conflist'} left in place: changed since install")


def test_upgrade_while_a_plugin_runs(node: Node, tmp_path: Path) -> None:
    """flannel of build A is running: it is renamed aside (its contents folder stays), every other
    launcher is replaced; once it has exited the next install removes both."""
    node.install("--from", str(package_folder(tmp_path, "0.1.0-aaa-1")))
    running = str(node.cni_bin / "flannel")
    node.disk.held = {running, str(node.cni_bin / "_wincni-0.1.0-aaa-1" / "python313.dll")}
    done = node.install("--from", str(package_folder(tmp_path, "0.1.0-bbb-2")))
    step = next(s for s in done["steps"] if s["path"] == running)
    aside = str(node.cni_bin / ".wincni-old" / "0.1.0-aaa-1" / "flannel")
    assert step["action"] == "replace" and aside in step["detail"]
    for c in COMMANDS:
        assert launcher_build(node.cni_bin / c) == "0.1.0-bbb-2"
    assert (node.cni_bin / "_wincni-0.1.0-aaa-1").is_dir() and launcher_build(Path(aside)) == "0.1.0-aaa-1"
    assert {("held", aside), ("held", str(node.cni_bin / "_wincni-0.1.0-aaa-1"))} <= {
        (s["action"], s["path"]) for s in done["steps"]
    }

    node.disk.held = set()  # the old flannel exited
    done = node.install("--from", str(package_folder(tmp_path, "0.1.0-bbb-2")))
    assert {(s["action"], os.path.basename(s["path"])) for s in done["steps"]} >= {
        ("remove", "flannel"),
        ("remove", "_wincni-0.1.0-aaa-1"),
    }
    assert sorted(p.name for p in node.cni_bin.iterdir()) == sorted(
        [*COMMANDS, "_wincni-0.1.0-bbb-2", installed.MANIFEST]
    )


def test_an_old_contents_folder_in_use_stays(node: Node, tmp_path: Path) -> None:
    """Launchers all replaceable (nothing runs them) but a file in the old folder is open: kept, no error."""
    node.install("--from", str(package_folder(tmp_path, "0.1.0-aaa-1")))
    node.disk.held = {str(node.cni_bin / "_wincni-0.1.0-aaa-1" / "python313.dll")}
    done = node.install("--from", str(package_folder(tmp_path, "0.1.0-bbb-2")))
    assert actions(done)["_wincni-0.1.0-aaa-1"] == "held"
    node.disk.held = set()
    assert (
        actions(node.install("--from", str(package_folder(tmp_path, "0.1.0-bbb-2"))))["_wincni-0.1.0-aaa-1"] == "remove"
    )


def test_a_launcher_dropped_from_the_new_build_goes(node: Node, tmp_path: Path) -> None:
    node.install("--from", str(package_folder(tmp_path, "0.1.0-aaa-1")))
    rel = package_folder(tmp_path, "0.1.0-bbb-2")
    (rel / "hnsctl").unlink()
    assert actions(node.install("--from", str(rel)))["hnsctl"] == "remove"
    assert not (node.cni_bin / "hnsctl").exists() and not (node.cni_bin / "_wincni-0.1.0-aaa-1").exists()


@pytest.mark.parametrize("section", ["io.containerd.grpc.v1.cri", "io.containerd.cri.v1.runtime"])
def test_dirs_come_from_containerd_config(node: Node, tmp_path: Path, section: str) -> None:
    key = 'bin_dirs = ["{}", "/other"]' if section.endswith("runtime") else 'bin_dir = "{}"'
    (tmp_path / "config.toml").write_text(
        f'version = 3\n[plugins."{section}".cni]\n  {key.format(node.cni_bin)}\n  conf_dir = "{node.conf_dir}"\n'
    )
    done = node.install("--from", str(package_folder(tmp_path, "0.1.0-aaa-1")), dirs=False)
    assert done["binDir"] == str(node.cni_bin) and (node.cni_bin / "flannel").is_file()
    assert (node.conf_dir / "10-flannel.conflist").is_file()


@pytest.mark.parametrize("config, version", [("version = 3\n", "1.1.0"), ("version = 2\n", "1.0.0"), (None, "1.0.0")])
def test_cni_version_follows_containerd(node: Node, tmp_path: Path, config: str | None, version: str) -> None:
    """containerd 2.x (config version 3) asks the plugins' STATUS only for a config of 1.1.0 or later."""
    if config is not None:
        (tmp_path / "config.toml").write_text(config)
    node.install("--from", str(package_folder(tmp_path, "0.1.0-aaa-1")))
    assert node.read_cni_conf()["cniVersion"] == version


def test_a_templates_cni_version_wins(node: Node, tmp_path: Path) -> None:
    node.install("--from", str(package_folder(tmp_path, "0.1.0-aaa-1")))
    template = tmp_path / "template.conflist"
    template.write_text(json.dumps(node.read_cni_conf()))
    (tmp_path / "config.toml").write_text("version = 3\n")
    node.install("--from", str(package_folder(tmp_path, "0.1.0-aaa-1")), "--template", str(template))
    assert node.read_cni_conf()["cniVersion"] == "1.0.0"


def test_a_broken_containerd_config_is_named(node: Node, tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text("[plugins\n")
    done = node.install("--from", str(package_folder(tmp_path, "0.1.0-aaa-1")), dirs=False, expect=1)
    assert "config.toml is not valid TOML" in done["error"] and "--cni-bin-dir" in done["error"]


@pytest.mark.parametrize(
    "text, words",
    [
        ("x = " + "[" * 5000 + "]" * 5000 + "\n", "nests arrays or tables deeper"),
        ('[plugins."io.containerd.grpc.v1.cri".cni]\n  bin_dir = "C:\\u0000x"\n', "NUL or control character"),
        (
            "# pad\n" * (1 << 18) + '[plugins."io.containerd.grpc.v1.cri".cni]\n  bin_dir = "{bin}"\n',
            "is over 1 MiB",
        ),
    ],
)
@pytest.mark.parametrize("output", ["json", "table"])
def test_a_containerd_config_install_cannot_use_is_a_clear_error_in_the_chosen_format(
    node: Node, tmp_path: Path, text: str, words: str, output: str
) -> None:
    """Deep nesting and a NUL were tracebacks, and past 1 MiB the file was cut and its
    cni section silently missed (install then targeted the default dirs)."""
    (tmp_path / "config.toml").write_text(text.replace("{bin}", str(node.cni_bin)))
    done = node.install("--from", str(package_folder(tmp_path, "0.1.0-aaa-1")), dirs=False, expect=1, output=output)
    error = done["error"] if output == "json" else done.split("FAILED: ", 1)[1]
    assert str(tmp_path / "config.toml") in error and words in error and "--cni-bin-dir" in error, error
    assert not node.cni_bin.exists() and not node.conf_dir.exists()


def test_every_net_conf_problem_fails_the_install_and_changes_nothing(node: Node, tmp_path: Path) -> None:
    node.net_conf.write_text(
        json.dumps({"Network": "10.244.0.0/16", "Backend": {"Type": "vxlan", "VNI": 1, "Port": 8472}})
    )
    done = node.install("--from", str(package_folder(tmp_path, "0.1.0-aaa-1")), expect=1)
    assert "Backend.VNI 1" in done["error"] and "Backend.Port 8472" in done["error"]
    assert not node.cni_bin.exists() and not node.conf_dir.exists()


@pytest.mark.parametrize(
    "name, words",
    [
        ("a/b", "invalid characters"),
        ("..", "invalid characters"),
        ("cbr0.", "ends with a dot"),
        ("NUL", "reserved device name"),
        ("n" * 129, "over the limit of 128"),
    ],
)
def test_a_network_name_every_plugin_refuses_fails_the_install_and_changes_nothing(
    node: Node, tmp_path: Path, name: str, words: str
) -> None:
    """The name flanneld takes from Backend.Name passed install, and every pod ADD then
    failed with code 7: the rendered config goes through the plugins' own name rule first."""
    node.net_conf.write_text(
        json.dumps({"Network": "10.244.0.0/16", "Backend": {"Type": "vxlan", "Name": name, "VNI": 4096}})
    )
    node.conf_dir.mkdir()
    (node.conf_dir / "0-containerd-nat.json").write_text("{}")
    done = node.install("--from", str(package_folder(tmp_path, "0.1.0-aaa-1")), expect=1)
    assert "Backend.Name" in done["error"] and words in done["error"], done["error"]
    assert not node.cni_bin.exists() and [p.name for p in node.conf_dir.iterdir()] == ["0-containerd-nat.json"]


def test_linux_flannel_defaults_are_a_warning(node: Node, tmp_path: Path) -> None:
    node.net_conf.write_text(json.dumps({"Network": "10.244.0.0/16", "Backend": {"Type": "vxlan", "Name": "vxlan0"}}))
    [warning] = node.install("--from", str(package_folder(tmp_path, "0.1.0-aaa-1")))["warnings"]
    assert "8472" in warning and '"VNI": 4096 and "Port": 4789' in warning


@pytest.mark.parametrize(
    "args, words",
    [
        (("--service-cidr", "10.96.0.0/33"), ("--service-cidr", "not a CIDR")),
        (
            ("--service-cidr", "10.96.0.0/29", "--kubelet-config", "/nonexistent/config.yaml"),
            ("--service-cidr 10.96.0.0/29", "--cluster-dns"),
        ),
        (("--node-ip", "nope"), ("--node-ip",)),
    ],
)
def test_bad_inputs_name_the_flag(tmp_path: Path, args: tuple, words: tuple) -> None:
    node = install_node(tmp_path, "net-conf.host-gw.json")
    done = node.install("--from", str(package_folder(tmp_path, "0.1.0-aaa-1")), *args, expect=1)
    assert all(w in done["error"] for w in words), done


def test_a_folder_that_is_not_a_package(node: Node, tmp_path: Path) -> None:
    (tmp_path / "old" / "_internal").mkdir(parents=True)
    (tmp_path / "old" / "flannel").write_text("x")
    done = node.install("--from", str(tmp_path / "old"), expect=1)
    assert "_wincni-<build>" in done["error"] and "_internal" in done["error"]
    assert "runs from source" in node.install(expect=1)["error"]


@pytest.mark.parametrize("name", ["../10-flannel.conflist", "net.d/10-flannel.conflist", "", "..", "10-flannel.txt"])
def test_a_conf_name_that_is_no_config_file_name_in_the_conf_dir_is_a_usage_error(
    node: Node, tmp_path: Path, name: str
) -> None:
    """A path would be written outside the conf dir, where uninstall never finds it again; another
    extension is a config containerd never loads."""
    out, err = io.StringIO(), io.StringIO()
    argv = node.install_argv("--from", str(package_folder(tmp_path, "0.1.0-aaa-1")), "--conf-name", name)
    assert main(argv, out, err, {}, platform="linux", cwd=str(tmp_path)) == 2
    assert f"argument --conf-name: {name!r} is not a config file name in the conf dir" in err.getvalue()
    assert out.getvalue() == "" and not node.cni_bin.exists() and not (tmp_path / "10-flannel.conflist").exists()


def test_through_main_and_usage_errors_are_status_2(node: Node, tmp_path: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    assert main(node.install_argv("--bogus"), out, err, {}, platform="linux", cwd=str(tmp_path)) == 2
    assert "unrecognized arguments: --bogus" in err.getvalue() and out.getvalue() == ""
    argv = node.install_argv("--from", str(package_folder(tmp_path, "0.1.0-aaa-1")))
    assert main(argv, out, err, {}, platform="linux", cwd=str(tmp_path)) == 0
    assert json.loads(out.getvalue())["build"] == "0.1.0-aaa-1"


def test_install_from_the_package_zip(node: Node, tmp_path: Path) -> None:
    import shutil

    rel = package_folder(tmp_path, "0.1.0-aaa-1")
    archive = shutil.make_archive(str(tmp_path / "wincni-0.1.0-windows-amd64"), "zip", rel)
    node.install("--from", archive)
    assert launcher_build(node.cni_bin / "flannel") == "0.1.0-aaa-1" and os.access(node.cni_bin / "flannel", os.X_OK)


# ---------------------------------------------------------------- the rendered config vs the samples


def _delegate(doc: dict) -> dict:
    return doc["plugins"][0]["delegate"] if "plugins" in doc else doc["delegate"]


@pytest.mark.parametrize(
    "netconf, node_ip, v1, v2",
    [
        ("net-conf.vxlan.json", "", "cni.conf.overlay-v1.json", "cni.conf.overlay-v2.json"),
        ("net-conf.host-gw.json", "10.127.130.36/24", "cni.conf.l2bridge-v1.json", "cni.conf.l2bridge-v2.json"),
    ],
)
def test_rendered_config_matches_the_samples_field_by_field(tmp_path: Path, netconf, node_ip, v1, v2) -> None:
    node = install_node(tmp_path, netconf)
    node.install("--from", str(package_folder(tmp_path, "0.1.0-aaa-1")), "--node-ip", node_ip or "0.0.0.0")
    got = node.read_cni_conf()
    plugin = got["plugins"][0]
    for sample_name in (v1, v2):
        sample = json.loads((FIXTURES / sample_name).read_text())
        assert got["name"] == sample["name"] and plugin["type"] == sample["type"] == "flannel"
        want = _delegate(sample)
        delegate = plugin["delegate"]
        assert delegate["type"] == want["type"]
        policies = [p.get("Value") or p.get("value") for p in want.get("policies") or want.get("Policies")]
        ours = [p["Value"] for p in delegate["policies"]]
        if sample_name == v2:
            ours = UserPolicies.fit(ours, [""] * len(ours), V2)
        assert ours == policies, sample_name
        dns = {k.lower(): v for k, v in want["dns"].items()}
        assert delegate["dns"]["Nameservers"] == dns["nameservers"]
        assert set(delegate["dns"]["Search"]) <= set(dns["search"])
    assert plugin["capabilities"] == {"portMappings": True, "dns": True}


def test_rendered_vxlan_config(tmp_path: Path) -> None:
    """The whole document, as docs/INSTALL.md shows it."""
    node = install_node(tmp_path)
    node.install("--from", str(package_folder(tmp_path, "0.1.0-aaa-1")))
    assert node.read_cni_conf() == {
        "cniVersion": "1.0.0",
        "name": "vxlan0",
        "plugins": [
            {
                "type": "flannel",
                "capabilities": {"portMappings": True, "dns": True},
                "delegate": {
                    "type": "win-overlay",
                    "dns": {"Nameservers": ["10.96.0.10"], "Search": ["svc.cluster.local"]},
                    "policies": [
                        {
                            "Name": "EndpointPolicy",
                            "Value": {"Type": "OutBoundNAT", "ExceptionList": ["10.244.0.0/16", "10.96.0.0/12"]},
                        },
                        {
                            "Name": "EndpointPolicy",
                            "Value": {"Type": "ROUTE", "DestinationPrefix": "10.96.0.0/12", "NeedEncap": True},
                        },
                    ],
                },
            }
        ],
    }


@pytest.mark.parametrize(
    "text",
    [
        '{"launchers": ["..\\\\..\\\\Windows\\\\system32\\\\x.exe"]}',
        '{"launchers": 5}',  # was a TypeError traceback
        '{"a": ' * 100_000 + "1" + "}" * 100_000,  # was a RecursionError traceback
    ],
)
def test_a_manifest_that_is_not_ours_is_ignored_with_a_warning(node: Node, tmp_path: Path, text: str) -> None:
    node.cni_bin.mkdir()
    (node.cni_bin / installed.MANIFEST).write_text(text)
    done = node.install("--from", str(package_folder(tmp_path, "0.1.0-aaa-1")))
    [warning] = done["warnings"]
    assert "ignored: not a wincni install manifest" in warning and (node.cni_bin / "flannel").is_file()


@pytest.mark.parametrize(
    "manifest, why",
    [
        ({"conf": "/etc/shadow"}, "'/etc/shadow' is not a file name in"),
        ({"moved": [["{conf}/0-x.conf", "/root/.ssh/authorized_keys"]]}, "is not a file name in"),
        ({"moved": [["{conf}/../x.conf", "{conf}/../x.conf.disabled-by-wincni"]]}, "is not a file name in"),
        ({"moved": [["{conf}/x.conf", "{conf}/y.conf"]]}, "is not '"),
        ({"contents": [["..", "0" * 64]]}, "'..' is not a contents folder"),
    ],
)
def test_a_manifest_naming_paths_outside_its_folders_is_ignored_and_uninstall_restores_nothing(
    node: Node, tmp_path: Path, manifest: dict, why: str
) -> None:
    """Even an administrator's manifest: every path must lie in the conf dir (or be a plain name)."""
    rel = package_folder(tmp_path, "0.1.0-aaa-1")
    node.install("--from", str(rel))
    doc = json.loads((node.cni_bin / installed.MANIFEST).read_text())
    for key, value in manifest.items():
        doc[key] = json.loads(json.dumps(value).replace("{conf}", str(node.conf_dir)))
    (node.cni_bin / installed.MANIFEST).write_text(json.dumps(doc))
    done = node.install("--uninstall", "--from", str(rel))
    assert any(why in w and "ignored" in w for w in done["warnings"]), done["warnings"]
    assert "restore" not in actions(done).values()
    assert actions(done)["flannel"] == "remove" and actions(done)["10-flannel.conflist"] == "remove"
    assert actions(done)["_wincni-0.1.0-aaa-1"] == "remove" and not (node.cni_bin / "flannel").exists()


def test_keep_others_leaves_shadowing_configs(node: Node, tmp_path: Path) -> None:
    node.conf_dir.mkdir()
    (node.conf_dir / "0-containerd-nat.json").write_text("{}")
    done = node.install("--from", str(package_folder(tmp_path, "0.1.0-aaa-1")), "--keep-others")
    assert "0-containerd-nat.json" not in actions(done)
    assert sorted(p.name for p in node.conf_dir.iterdir()) == ["0-containerd-nat.json", "10-flannel.conflist"]


# ---------------------------------------------------------------- upgrades under load, any order

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

RUNS = st.lists(
    st.tuples(st.integers(0, 3), st.sets(st.sampled_from(COMMANDS), max_size=3), st.booleans(), st.booleans()),
    min_size=1,
    max_size=6,
)


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(RUNS)
def test_no_running_process_loses_its_build_and_every_launcher_has_its_own(tmp_path_factory, runs) -> None:
    """Installs of builds 0-3 in any order while processes of whatever is installed start and
    stop (some just started: their .exe is held, their build's DLLs not loaded yet): a running
    process's contents folder is never removed, every launcher in the bin dir finds its own
    build's folder, and once nothing runs, one install leaves exactly one build."""
    root = tmp_path_factory.mktemp("node")
    node = install_node(root)
    packages = {b: package_folder(root, f"0.1.0-b{b}-1") for b in range(4)}
    running: list[tuple[str, str, bool]] = []  # (launcher as started, its build's DLL, DLL loaded yet)
    for build, start, stop_all, loaded in runs:
        node.disk.held = {p for exe, dll, has_dll in running for p in ((exe, dll) if has_dll else (exe,))}
        node.disk.moved = {}
        node.install("--from", str(packages[build]))
        running = [(node.disk.moved.get(exe, exe), dll, has_dll) for exe, dll, has_dll in running]
        for _, dll, _ in running:
            assert Path(dll).is_file(), f"{dll} removed under a running process"
        for name in COMMANDS:
            owner = launcher_build(node.cni_bin / name)
            assert (node.cni_bin / f"_wincni-{owner}" / "python313.dll").is_file(), name
        running = [] if stop_all else running
        running += [
            (str(node.cni_bin / name), str(node.cni_bin / f"_wincni-0.1.0-b{build}-1" / "python313.dll"), loaded)
            for name in start
        ]
    node.disk.held = set()
    node.install("--from", str(packages[runs[-1][0]]))
    assert sorted(p.name for p in node.cni_bin.iterdir()) == sorted(
        [*COMMANDS, f"_wincni-0.1.0-b{runs[-1][0]}-1", installed.MANIFEST]
    )


def test_a_running_launcher_is_parked_under_the_build_it_loads_even_without_a_manifest(
    node: Node, tmp_path: Path
) -> None:
    """An install interrupted before its manifest was written leaves the manifest naming an older
    build; the launcher itself says which contents folder it loads."""
    node.install("--from", str(package_folder(tmp_path, "0.1.0-aaa-1")))
    (node.cni_bin / installed.MANIFEST).unlink()
    node.disk.held = {str(node.cni_bin / "wincni")}
    node.install("--from", str(package_folder(tmp_path, "0.1.0-bbb-2")))
    assert launcher_build(node.cni_bin / ".wincni-old" / "0.1.0-aaa-1" / "wincni") == "0.1.0-aaa-1"
    assert (node.cni_bin / "_wincni-0.1.0-aaa-1").is_dir()


def test_embedded_build_reads_only_a_plain_folder_name() -> None:
    assert installed.embedded_build(b"MZ..pyi-contents-directory _wincni-0.1.0-abc-1\0rest") == "0.1.0-abc-1"
    assert installed.embedded_build(b"MZ..pyi-contents-directory _internal\0") == ""
    assert installed.embedded_build(b"pyi-contents-directory _wincni-..\\x\0") == ""
    assert installed.embedded_build(b"Go build ID") == ""


def test_uninstall_dry_run_changes_nothing(node: Node, tmp_path: Path) -> None:
    node.conf_dir.mkdir()
    (node.conf_dir / "0-containerd-nat.json").write_text("{}")
    node.install("--from", str(package_folder(tmp_path, "0.1.0-aaa-1")))
    before = sorted(p.name for p in [*node.cni_bin.iterdir(), *node.conf_dir.iterdir()])
    plan = node.install("--uninstall", "--dry-run")
    assert actions(plan)["0-containerd-nat.json"] == "restore" and actions(plan)["flannel"] == "remove"
    assert sorted(p.name for p in [*node.cni_bin.iterdir(), *node.conf_dir.iterdir()]) == before


def test_install_takes_write_access_to_its_folders_back_from_everyone_else(node: Node, tmp_path: Path) -> None:
    """The plugins run from the bin dir as SYSTEM/root: a folder (or a file in it) others may
    write is made admin-only before anything is laid in (safefs.protect_dir; the DACL on Windows)."""
    node.cni_bin.mkdir()
    node.conf_dir.mkdir()
    (node.cni_bin / "nat").write_text("someone else's plugin")
    for path in (node.cni_bin, node.conf_dir, node.cni_bin / "nat"):
        path.chmod(0o777)
    node.install("--from", str(package_folder(tmp_path, "0.1.0-aaa-1")))
    for path in (node.cni_bin, node.conf_dir, node.cni_bin / "nat", node.cni_bin / "flannel"):
        assert path.stat().st_mode & 0o022 == 0, (path, oct(path.stat().st_mode))


def test_nothing_install_lays_is_writable_by_others_whatever_the_umask_and_the_packages_modes(
    node: Node, tmp_path: Path
) -> None:
    """Run with umask 0 (as some containers start) from a package folder others may write: the
    contents folder copied in was 0777/0666, its launchers kept their 0777, so any local user
    could change what then runs as root."""
    rel = package_folder(tmp_path, "0.1.0-aaa-1")
    for path in [rel, *rel.rglob("*")]:
        path.chmod(0o777)
    old = os.umask(0)
    try:
        node.install("--from", str(rel))
    finally:
        os.umask(old)
    laid = [node.cni_bin, *node.cni_bin.rglob("*"), node.conf_dir, *node.conf_dir.iterdir()]
    assert len(laid) > 10
    assert [(str(p), oct(p.stat().st_mode)) for p in laid if p.stat().st_mode & 0o022] == []
    assert os.access(node.cni_bin / "flannel", os.X_OK)


def test_a_contents_folder_is_kept_only_with_the_digest_the_manifest_names(node: Node, tmp_path: Path) -> None:
    rel = package_folder(tmp_path, "0.1.0-aaa-1")
    node.install("--from", str(rel))
    contents = node.cni_bin / "_wincni-0.1.0-aaa-1"
    assert actions(node.install("--from", str(rel)))["_wincni-0.1.0-aaa-1"] == "keep"
    (contents / "plugins" / "extra.py").write_text("changed since")
    done = node.install("--from", str(rel))
    step = next(s for s in done["steps"] if s["path"] == str(contents))
    assert step["action"] == "copy" and "not the one install laid: replaced" in step["detail"]
    assert not (contents / "plugins" / "extra.py").exists() and not list(node.cni_bin.glob("*trash*"))
    (node.cni_bin / installed.MANIFEST).unlink()  # an install killed before its manifest: no folder is vouched for
    assert actions(node.install("--from", str(rel)))["_wincni-0.1.0-aaa-1"] == "copy"


def test_a_manifest_in_a_folder_others_could_write_is_not_believed(node: Node, tmp_path: Path) -> None:
    rel = package_folder(tmp_path, "0.1.0-aaa-1")
    node.install("--from", str(rel))
    node.cni_bin.chmod(0o777)
    done = node.install("--from", str(rel))
    assert actions(done)["opt-cni-bin"] == "takeover" and actions(done)["_wincni-0.1.0-aaa-1"] == "copy"
    [warning] = done["warnings"]
    assert "ignored: it lies in a folder others could write" in warning
    assert set(actions(node.install("--from", str(rel))).values()) == {"keep"}


def test_a_dry_run_says_what_taking_a_folder_over_would_do_and_changes_nothing(node: Node, tmp_path: Path) -> None:
    node.cni_bin.mkdir()
    (tmp_path / "elsewhere").write_text("x")
    os.link(tmp_path / "elsewhere", node.cni_bin / "linked")
    (node.cni_bin / "link").symlink_to(tmp_path / "elsewhere")
    node.cni_bin.chmod(0o777)
    plan = node.install("--from", str(package_folder(tmp_path, "0.1.0-aaa-1")), "--dry-run")
    assert {(s["action"], os.path.basename(s["path"])) for s in plan["steps"]} >= {
        ("takeover", "opt-cni-bin"),
        ("remove", "linked"),
        ("remove", "link"),
    }
    takeover = next(s for s in plan["steps"] if s["action"] == "takeover")
    assert takeover["detail"] == "is writable by others (mode 0777): would be made admin-only"  # as install says it
    assert sorted(p.name for p in node.cni_bin.iterdir()) == ["link", "linked"] and node.cni_bin.stat().st_mode & 0o002
