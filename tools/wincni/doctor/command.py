"""``wincni doctor``: walks the Windows networking troubleshooting guide on this node (or, with
``--replay``, on a bundle of one), a fix for each problem. Exit status (``MANUAL``): 0 no check
failed (warnings allowed); 1 a check failed, or a flag's file (a bundle too) refused; 2 bad usage."""

from __future__ import annotations

import argparse

from basics.cli import Manual
from tools.wincni.cli.context import Context
from tools.wincni.doctor.options import DoctorOptions

MANUAL = Manual(
    does="Check this node's pod networking as the Windows troubleshooting guide would: the CNI config "
    "the runtime picks, the plugins, flanneld's lease, HNS's networks, endpoints and kube-proxy's load "
    "balancers, the pods' stores; for each problem a fix (and the command to run). --quick: what decides "
    "whether a pod can get a network now (the readiness probe). --replay: the same checks on a bundle "
    "from `wincni bundle`, on any OS.",
    elevated=True,
    exits=(
        (0, "no check failed (warnings and checks not run allowed)"),
        (
            1,
            "a check failed; or a file a flag names was refused, the --replay bundle too (not a bundle, a "
            "header or member over its caps, JSON nested too deep or too large, a field of the wrong type): "
            'then one line, FAILED: ... (-o json: {"error": ...}), is all that is printed',
        ),
        (2, "a usage error"),
    ),
    examples=("wincni doctor", "wincni doctor --replay wincni-bundle-node1.tar.gz"),
)


def add_arguments(p: argparse.ArgumentParser, platform: str) -> None:
    from basics.cli import FILE, add_output, ip_address
    from tools.wincni.doctor.options import add_node_files

    add_node_files(p, platform)
    p.add_argument("--reach", type=ip_address, metavar="IP", help="tell whether pod traffic to IP is SNAT'ed")
    p.add_argument(
        "--quick",
        action="store_true",
        help="only what decides whether a pod can get a network now, "
        "reading only (the DaemonSet's readiness probe): no host-local store, no endpoint scan, "
        "no contents-folder digest",
    )
    p.add_argument(
        "--replay",
        type=FILE,
        metavar="BUNDLE",
        help="read the node from a wincni bundle instead (any OS): the checks only the node can answer "
        "say not checked (replay); a bundle it cannot replay is refused in one line, exit status 1",
    )
    add_output(p, "the CNI dirs looked at and every check: id, status, message, fix, run")


def options(args: argparse.Namespace, ctx: Context) -> DoctorOptions:
    from tools.wincni.doctor.options import NodeFiles, node_files
    from tools.wincni.node.containerd import said
    from tools.wincni.node.dirs import where

    if args.replay:
        return DoctorOptions(NodeFiles(reach=args.reach or ""), args.output, args.replay)
    found = where(args.containerd_config, ctx.platform, ctx.env)
    files = node_files(args, found, ctx.platform, ctx.env)
    given = [flag for flag, value in (("--cni-conf", args.cni_conf), ("--cni-bin-dir", args.cni_bin_dir)) if value]
    looked = {"conf": files.cni_conf, "binDir": files.cni_bin_dir, "from": said(given, found)}
    return DoctorOptions(files, args.output, "", looked, len(given) < 2)


def run(options: DoctorOptions, ctx: Context) -> int:
    from tools.wincni.doctor.checks import registry as checks
    from tools.wincni.doctor.report import report

    if options.replay:
        return replay(options, ctx)
    from tools.wincni.doctor.gather import gather

    found = gather(options.files, ctx.env, ctx.platform, ctx.cwd)
    return report(checks.run(found, options.files.quick), options.looked, options.chose, options.output, ctx.stdout)


def replay(options: DoctorOptions, ctx: Context) -> int:
    """The report from a bundle's facts. A bundle that cannot be replayed is refused as any flag's
    file is: the error envelope, one line, exit status 1 (``output.refused``)."""
    from tools.wincni.cli.output import refused
    from tools.wincni.doctor.archive import replay as replaying
    from tools.wincni.doctor.checks import registry as checks
    from tools.wincni.doctor.report import report

    try:
        bundle = replaying.load(options.replay)
        found = replaying.gather(bundle, options.files.reach)
    except replaying.ReplayError as exc:
        return refused(ctx, "doctor", options.output, str(exc))
    looked = {"conf": found.conf_path, "binDir": found.bin_dir, "from": f"replayed from {options.replay}"}
    return report(checks.run(found), looked, True, options.output, ctx.stdout)
