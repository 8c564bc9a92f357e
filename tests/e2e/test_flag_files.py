"""Every file an operator's flag names, given what a local user could plant there, as processes.

The flags come from the parsers themselves (``basics.cli.FILE`` / ``FILE_OR_DIR`` as ``type=``),
so a new file flag is tried here without a word changed. Each gets a FIFO (a plain open waited
for a writer forever: the readiness probe hung), a link the attacker (``test_security.as_nobody``)
made to a root-only file holding ``SECRET_TOKEN``, a folder where a file is due, and /dev/zero:
each must be a clear error naming the flag and the path within 2 s, never the secret. An
administrator's ConfigMap-style links (kubelet's ``..data``) must still be followed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from basics.cli import PathArg
from hnsnode import Node, package_folder
from test_security import NOBODY, _symlink, as_nobody, root_only
from tools.hnsctl import build_parser as hnsctl_parser
from tools.wincni.cli.main import build_parser as wincni_parser

SECRET = "SECRET_TOKEN"
TOOLS = {"wincni": wincni_parser("linux"), "hnsctl": hnsctl_parser()}


def path_flags(
    parser: argparse.ArgumentParser, command: tuple[str, ...] = ()
) -> list[tuple[tuple[str, ...], str, str]]:
    """(subcommand path, option, kind) of every option of ``parser`` and its subparsers typed as a
    path; a positional argument is named by its dest (no leading dash)."""
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += path_flags(sub, (*command, name))
        elif isinstance(action.type, PathArg):
            found.append(
                (command, action.option_strings[-1] if action.option_strings else action.dest, action.type.kind)
            )
    return found


FLAGS = [(tool, *flag) for tool, parser in TOOLS.items() for flag in path_flags(parser)]
FILE_FLAGS = [f for f in FLAGS if f[3] != "folder"]


def test_the_walk_finds_the_file_flags_the_red_team_tried() -> None:
    """The 16 (command, flag) pairs of the finding, and that each flag with a path is typed."""
    files = {(" ".join(command), flag) for _, command, flag, _ in FILE_FLAGS}
    assert {
        ("install", "--template"),
        ("install", "--kubelet-config"),
        ("install", "--net-conf"),
        ("install", "--containerd-config"),
        ("doctor", "--cni-conf"),
        ("doctor", "--subnet-env"),
        ("doctor", "--net-conf"),
        ("doctor", "--source-vip"),
        ("doctor", "--containerd-config"),
        ("sourcevip", "--cni-conf"),
        ("sourcevip", "--out"),
        ("sourcevip", "--containerd-config"),
        ("reclaim", "--cni-conf"),
        ("reclaim", "--containerd-config"),
        ("dirs", "--containerd-config"),
    } <= files
    assert {f for f in FLAGS if f[3] == "folder"} == {
        ("wincni", ("doctor",), "--cni-bin-dir", "folder"),
        ("wincni", ("install",), "--cni-bin-dir", "folder"),
        ("wincni", ("install",), "--cni-conf-dir", "folder"),
        ("wincni", ("bundle",), "--cni-bin-dir", "folder"),
        ("wincni", ("metrics",), "--cni-bin-dir", "folder"),
        ("wincni", ("metrics",), "--textfile", "folder"),
    }


@pytest.fixture
def node(tmp_path: Path) -> Node:
    """A node with a containerd config naming its CNI folders, a net-conf.json and a package."""
    node = Node(tmp_path / "node").bridge()
    (node.root / "config.toml").write_text(
        f'[plugins."io.containerd.grpc.v1.cri".cni]\n  bin_dir = "{node.cni_bin}"\n  conf_dir = "{node.conf_dir}"\n'
    )
    node.write_net_conf(json.loads((Path(__file__).parents[1] / "data/fixtures/net-conf.vxlan.json").read_text()))
    return node


def base_args(node: Node, command: tuple[str, ...]) -> dict[str, str | None]:
    """Good values for a command, so the flag under test is what it stops at (None: a switch)."""
    toml = {"--containerd-config": str(node.root / "config.toml")}
    if command == ("install",):
        argv = node.install_argv("--dry-run", "--from", str(package_folder(node.root, "0.1.0-aaa-1")), dirs=False)[1:]
        return {
            a: (b if b and not b.startswith("--") else None) for a, b in zip(argv, [*argv[1:], ""]) if a[:2] == "--"
        } | {"-o": "json"}
    if command == ("doctor",):
        return toml
    if command == ("sourcevip",):
        return {**toml, "--timeout": "0", "--out": str(node.root / "vip.json")}
    if command == ("bundle",):
        return {**toml, "--out": str(node.root / "bundle.tar.gz")}
    if command == ("netpol",):
        return {**toml, "--node-name": "node1"}
    if command == ("metrics",):
        return {**toml, "--textfile": str(node.root / "textfile")}
    return toml


#: The positional arguments a command takes before its file argument (an endpoint's name: the file
#: is judged before HNS is asked for it).
LEADING = {("endpoint", "acls"): ("wincni-flag-test",)}


def run(node: Node, tool: str, command: tuple[str, ...], args: dict[str, str | None]) -> tuple[int, str, float]:
    """``args``: options (None: a switch); a key without a leading dash is a positional argument."""
    named = {k: v for k, v in args.items() if k.startswith("-")}
    given = [v for k, v in args.items() if not k.startswith("-")]
    leading = LEADING.get(command, ()) if given else ()
    argv = [*command, *leading, *given, *(x for k, v in named.items() for x in ((k,) if v is None else (k, v)))]
    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", f"tools.{tool}", *argv], env=node.env, capture_output=True, timeout=30, text=True
    )
    return proc.returncode, proc.stdout + proc.stderr, time.monotonic() - start


@pytest.fixture
def planted(tmp_path: Path, arena: Path) -> dict[str, Path]:
    """What the flags get: a FIFO, the attacker's link to a root-only secret, a folder, /dev/zero."""
    secret = tmp_path / "secret"
    secret.write_text(f'{{"Network": "{SECRET}", "clusterDNS": ["{SECRET}"]}}\n')
    secret.chmod(0o600)
    os.mkfifo(tmp_path / "fifo")
    as_nobody(_symlink, secret, arena / "link")
    (tmp_path / "folder").mkdir()
    return {
        "FIFO": tmp_path / "fifo",
        "link": arena / "link",
        "folder": tmp_path / "folder",
        "character device": Path("/dev/zero"),
    }


@root_only
@pytest.mark.slow
@pytest.mark.parametrize(
    "tool, command, flag, kind", FILE_FLAGS, ids=lambda v: " ".join(v) if isinstance(v, tuple) else v
)
def test_a_file_flag_given_what_a_user_planted_is_a_clear_error_at_once(
    node, planted, tool, command, flag, kind
) -> None:
    for what, path in planted.items():
        if what == "folder" and kind != "file":
            continue  # the flag takes a folder too
        base = base_args(node, command) if tool == "wincni" else {}
        rc, out, took = run(node, tool, command, {**base, flag: str(path)})
        assert took < 2, (what, took, out)
        assert SECRET not in out and "Traceback" not in out, (what, out)
        assert (f"{flag} {path}" if flag.startswith("-") else str(path)) in out, (what, out)
        assert what in out or (what == "link" and "writable by others" in out), (what, out)
        assert rc == (0 if command == ("dirs",) else 1), (what, rc, out)


@root_only
def test_the_bundle_takes_nothing_through_a_users_link(node: Node, planted: dict[str, Path]) -> None:
    """The link a user planted where the bundle reads is refused and named; what it leads to is in
    no member of the bundle, which is written without it."""
    import tarfile

    args = {**base_args(node, ("bundle",)), "--subnet-env": str(planted["link"])}
    rc, out, _ = run(node, "wincni", ("bundle",), args)
    assert rc == 1 and f"refused --subnet-env {planted['link']}" in out, out
    with tarfile.open(node.root / "bundle.tar.gz") as tar:
        assert [m.name for m in tar if m.isfile() and SECRET.encode() in tar.extractfile(m).read()] == []


@root_only
def test_an_administrators_configmap_links_are_followed(node: Node, tmp_path: Path) -> None:
    """kubelet's atomic writer: ``f -> ..data/f``, ``..data -> ..<timestamp>/``, all root's."""
    mount = tmp_path / "configmap"
    stamp = mount / "..2026_11_27_08_00_00.000000001"
    stamp.mkdir(parents=True)
    (stamp / "net-conf.json").write_bytes(node.net_conf.read_bytes())
    (stamp / "10-bridge.conf").write_text(json.dumps(node.conf()))
    nat = {"Type": "OutBoundNAT", "ExceptionList": ["__CLUSTER_CIDR__", "__SERVICE_CIDR__"]}
    flannel = {"type": "flannel", "delegate": {"policies": [{"Name": "EndpointPolicy", "Value": nat}]}}
    (stamp / "10-flannel.conflist").write_text(
        json.dumps({"cniVersion": "1.0.0", "name": "__NETWORK_NAME__", "plugins": [flannel]})
    )
    (mount / "..data").symlink_to(stamp.name)
    for name in ("net-conf.json", "10-bridge.conf", "10-flannel.conflist"):
        (mount / name).symlink_to(f"..data/{name}")
    args = base_args(node, ("install",)) | {
        "--net-conf": str(mount / "net-conf.json"),
        "--template": str(mount / "10-flannel.conflist"),
    }
    rc, out, _ = run(node, "wincni", ("install",), args)
    assert rc == 0 and json.loads(out)["dryRun"], out
    rc, out, _ = run(node, "wincni", ("doctor",), {"--cni-conf": str(mount / "10-bridge.conf"), "-o": "json"})
    config = {c["id"]: c for c in json.loads(out)["checks"]}["config"]
    assert config["status"] == "ok", config


@root_only
def test_an_error_quotes_nothing_of_a_file_no_administrator_owns(node: Node, tmp_path: Path) -> None:
    """An administrator's bad value is quoted (the error helps); a user's own file is named, not quoted."""
    bad = tmp_path / "net-conf.json"
    bad.write_text(json.dumps({"Network": SECRET, "Backend": {"Type": "vxlan", "VNI": 4096}}))
    args = base_args(node, ("install",)) | {"--net-conf": str(bad)}
    rc, out, _ = run(node, "wincni", ("install",), args)
    assert rc == 1 and SECRET in json.loads(out)["error"], out
    os.chown(bad, NOBODY, NOBODY)
    rc, out, _ = run(node, "wincni", ("install",), args)
    error = json.loads(out)["error"]
    assert rc == 1 and SECRET not in out and f"--net-conf {bad}" in error and "uid 65534" in error, out
