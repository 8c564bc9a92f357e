"""``wincni bundle``: one bounded file of what the doctor reads on this node, to attach to an issue
and diagnose anywhere (``wincni doctor --replay``).

What is read is an allow-list, never a folder's contents: the files the doctor's own readers open
(the CNI config the runtime picks, flanneld's subnet.env and net-conf.json, kube-proxy's source
VIP), install's manifest and the template it names, the tail of the debug log the config names,
host-local's and flannel's stores as names and owners (IP -> container, container -> interface,
host-local's sandbox records: IP -> container, interface, CNI_NETNS; never a file's content), every HNS document both APIs list, and the tools' build and the OS. So a
kubeconfig, token or key beside any of those is never opened, whatever it is called. Every file is
read by ``flagfile.read`` (no FIFO waited on, no link a user planted followed, a size cap), and the
output is a new admin-only file of ours renamed into its folder, which is left as it is (a shared
``/tmp`` stays shared: ``basics.outputfile``).

The archive is a gzip'd tar: ``MANIFEST.json`` first (what was read from where, what was left
out and why), each member at most ``MEMBER_CAP`` bytes and all of them ``TOTAL_CAP``.
"""

from __future__ import annotations

import argparse
import os
import time
from dataclasses import dataclass
from typing import Mapping

from basics.cli import Manual
from tools.wincni.cli.context import Context
from tools.wincni.doctor.archive.members import (
    FILES,
    FLANNEL_MEMBER,
    FORMAT,
    SANDBOX_MEMBER,
    STORE_MEMBER,
    Members,
    archive,
)
from tools.wincni.doctor.archive.recorder import (
    Recorder,
    extra_file,
    file_entry,
    flannel_store,
    log_path,
    log_tail,
    manifest_path,
    member_base,
    record_hns,
    template_path,
)
from tools.wincni.doctor.options import NodeFiles

MANUAL = Manual(
    does="Write one bounded .tar.gz of what the doctor reads on this node (configs, flanneld's lease, the "
    "stores' names and owners, every HNS document, the build), to attach to an issue and read anywhere "
    "with `wincni doctor --replay`. Only an allow-list of files is read: no token or key beside them.",
    elevated=True,
    exits=(
        (0, "written"),
        (1, "written with a file refused (listed), or not written (one line says why)"),
        (2, "a usage error"),
    ),
    examples=("wincni bundle --out C:\\wincni-bundle.tar.gz",),
)


def collect(
    opts: NodeFiles, env: Mapping[str, str], platform: str, cwd: str, recorder: Recorder
) -> tuple[dict, Members]:
    """Everything the bundle holds: (its manifest, its members). The doctor runs on the live node
    through ``recorder``; its report goes in beside what it read."""
    from tools.wincni.doctor.checks import registry as checks
    from tools.wincni.doctor.gather import gather

    found = gather(opts, env, platform, cwd, recorder)
    members = Members()
    files: dict[str, dict] = {}
    for n, (path, (flag, got)) in enumerate(recorder.files.items()):
        files[path] = file_entry(members, f"{FILES}{n}-{member_base(path, platform)}", flag, got)
    members.json(STORE_MEMBER, recorder.store_read)
    members.json(SANDBOX_MEMBER, recorder.sandboxes_read)
    pause = [p.sandbox.id for p in found.sandboxes or () if p.sandbox is not None and p.sandbox.kind == "container"]
    hns_errors = record_hns(members, env, pause)
    from tools.wincni.node.installed import MAX_MANIFEST, MAX_TEMPLATE

    extras = {
        "install manifest": extra_file(members, "node/install-manifest.json", manifest_path(found), MAX_MANIFEST),
        "template": extra_file(members, "node/template", template_path(found), MAX_TEMPLATE),
        "debug log": log_tail(members, log_path(found, recorder)),
    }
    members.json(FLANNEL_MEMBER, flannel_store(found.flannel_dir))
    members.json("node/doctor.json", [vars(c) for c in checks.run(found)])
    manifest = {
        "format": FORMAT,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "platform": platform,
        "cwd": cwd,
        "tools": _tools(),
        "os": _os(),
        "doctor": opts.recorded(),
        "configs": recorder.listings,
        "exists": recorder.existing,
        "files": files,
        "extras": extras,
        "hnsErrors": hns_errors,
        "omitted": members.omitted,
    }
    return manifest, members


def _tools() -> dict:
    from plugins.cni.buildinfo import document
    from tools.wincni.node.build import running_build

    return {**document(), "build": running_build()}


def _os() -> dict:
    import platform

    return {"system": platform.system(), "release": platform.release(), "version": platform.version()}


def default_out(now: float | None = None) -> str:
    import socket

    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now))
    return f"wincni-bundle-{socket.gethostname() or 'node'}-{stamp}.tar.gz"


@dataclass(frozen=True)
class BundleOptions:
    files: NodeFiles
    out: str  # the .tar.gz to write, relative to the working folder


def add_arguments(p: argparse.ArgumentParser, platform: str) -> None:
    from basics.cli import FILE
    from tools.wincni.doctor.options import add_node_files

    add_node_files(p, platform)
    p.add_argument(
        "--out", type=FILE, metavar="FILE", help="the .tar.gz to write (default: ./wincni-bundle-<host>-<time>.tar.gz)"
    )


def options(args: argparse.Namespace, ctx: Context) -> BundleOptions:
    """FlagFileError: --containerd-config given and refused (the bundle says no ``why``)."""
    from tools.wincni.doctor.options import node_files
    from tools.wincni.node.dirs import where

    found = where(args.containerd_config, ctx.platform, ctx.env, strict=True)
    return BundleOptions(node_files(args, found, ctx.platform, ctx.env), args.out or default_out())


def run(options: BundleOptions, ctx: Context) -> int:
    """Collect, then write ``out`` (``basics.outputfile``: its folder left as it is). Prints the
    path, what was left out and what was refused; 0, or 1 when it cannot be written or a file a
    flag names was refused (the bundle is then written without it)."""
    from basics import outputfile
    from tools.wincni.node.flagfile import FlagFileError

    opts, stdout, stderr = options.files, ctx.stdout, ctx.stderr
    path = os.path.join(ctx.cwd, options.out)
    try:
        replaceable(path)
    except FlagFileError as exc:
        stderr.write(f"wincni bundle: {exc}\n")
        return 1
    recorder = Recorder()
    manifest, members = collect(opts, ctx.env, ctx.platform, ctx.cwd, recorder)
    data = archive(manifest, members)
    try:
        outputfile.write(path, data)
    except OSError as exc:
        stderr.write(f"wincni bundle: cannot write {path}: {exc}\n")
        return 1
    stdout.write(f"{path}: {len(data)} bytes, {len(members.data) + 1} files\n")
    for name, why in members.omitted.items():
        stdout.write(f"  left out {name}: {why}\n")
    for name, why in manifest["hnsErrors"].items():
        stdout.write(f"  not recorded {name}: {why}\n")
    for why in recorder.refused():
        stdout.write(f"  refused {why}\n")
    return 1 if recorder.refused() else 0


def replaceable(path: str) -> None:
    """``--out`` may be replaced: absent, or an administrator's regular file (a FIFO, a device, a
    folder or a user's link there is refused, named, as any flag's file); it is never opened for
    writing, only renamed over."""
    from basics.inputfile import open_file
    from tools.wincni.node.flagfile import named

    with named("--out", path):
        try:
            fd, _ = open_file(path, 1 << 62)
        except FileNotFoundError:
            return
    os.close(fd)
