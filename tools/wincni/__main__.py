"""``wincni``: operator commands. ``wincni doctor`` walks the Windows networking troubleshooting guide;
``wincni install`` lays the plugins and their config into containerd's CNI directories;
``wincni sourcevip`` reserves kube-proxy's source VIP; ``wincni reclaim`` frees what no pod holds,
once or ``--every`` minute (the node's sweep: no Windows runtime sends CNI GC); ``wincni dirs`` says
where the runtime's CNI folders are (``containerd.locate``: every command's default)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, Callable, Mapping, Sequence, TextIO

from basics.cli import DIR, FILE, FILE_OR_DIR, Parser, UsageError, add_output, add_version, ip_address, parse


def build_parser(defaults: Mapping[str, str], platform: str = sys.platform) -> argparse.ArgumentParser:
    from plugins.cni.buildinfo import describe

    p = Parser(prog="wincni", description=f"Windows CNI operator tools, wincni {describe()}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=Parser)
    add_output(
        add_version(p, sub, "this wincni's build, Python and platform"), "version, commit, build, python, platform"
    )
    d = sub.add_parser("doctor", help="check this node's pod networking, with a fix for each problem")
    _node_arguments(d, defaults, platform)
    d.add_argument("--reach", type=ip_address, metavar="IP", help="tell whether pod traffic to IP is SNAT'ed")
    d.add_argument(
        "--quick",
        action="store_true",
        help="only what decides whether a pod can get a network now, "
        "reading only (the DaemonSet's readiness probe): no host-local store, no endpoint scan, "
        "no contents-folder digest",
    )
    d.add_argument(
        "--replay",
        type=FILE,
        metavar="BUNDLE",
        help="read the node from a wincni bundle instead (any OS): the checks only the node can answer "
        "say not checked (replay)",
    )
    add_output(d, "the CNI dirs looked at and every check: id, status, message, fix, run")
    from tools.wincni.doctor.metrics import command as metrics
    from tools.wincni.install import options
    from tools.wincni.node import containerd
    from tools.wincni.reclaim import command as reclaim
    from tools.wincni.sourcevip import command as sourcevip

    b = sub.add_parser("bundle", help="one bounded file of this node's CNI and HNS state, for an issue (no secrets)")
    _node_arguments(b, defaults, platform)
    b.add_argument(
        "--out", type=FILE, metavar="FILE", help="the .tar.gz to write (default: ./wincni-bundle-<host>-<time>.tar.gz)"
    )
    m = sub.add_parser(
        "metrics", help="the doctor's findings and HNS's counts as gauges for windows_exporter's textfile collector"
    )
    _node_arguments(m, defaults, platform)
    metrics.add_arguments(m)
    options.add_arguments(
        sub.add_parser(
            "install", help="lay the plugins and the CNI config into containerd's CNI directories (upgrades under load)"
        ),
        platform,
    )
    sourcevip.add_arguments(
        sub.add_parser(
            "sourcevip", help="reserve kube-proxy's source VIP (overlay) in the pods' host-local store; print its flags"
        ),
        platform,
    )
    r = sub.add_parser(
        "reclaim",
        help="free what no pod holds: endpoints, reservations, saved configs (what CNI GC would do); "
        "--every: the node's sweep",
    )
    _cni_conf_argument(r)
    reclaim.add_arguments(r, platform)
    containerd.add_config_argument(r, platform)
    w = sub.add_parser(
        "dirs",
        help="where the runtime's CNI bin and conf folders are on this node, and why "
        "(what the other commands default to)",
    )
    containerd.add_config_argument(w, platform)
    add_output(w, "binDir, confDir and from")
    return p


DIRS_DEFAULT = "the runtime's (wincni dirs)"


def _node_arguments(d: argparse.ArgumentParser, defaults: Mapping[str, str], platform: str) -> None:
    """The files of the node the doctor reads, and so the bundle and the metrics too."""
    from tools.wincni.node import containerd

    _cni_conf_argument(d)
    d.add_argument(
        "--subnet-env",
        type=FILE,
        metavar="FILE",
        help=f"flanneld's lease (default: the config's subnetFile, else {defaults['subnet_env']})",
    )
    d.add_argument(
        "--net-conf",
        type=FILE,
        metavar="FILE",
        help=f"flanneld's net-conf.json (default: the config's netConf, else {defaults['net_conf']})",
    )
    d.add_argument(
        "--source-vip",
        type=FILE,
        default=defaults["source_vip"],
        metavar="FILE",
        help="kube-proxy's source VIP file (default %(default)s)",
    )
    d.add_argument(
        "--cni-bin-dir", type=DIR, metavar="DIR", help=f"the plugins' directory (default: {DIRS_DEFAULT} bin dir)"
    )
    containerd.add_config_argument(d, platform)


def _node_opts(args: argparse.Namespace, found: Any, defaults: Mapping[str, str]) -> dict[str, Any]:
    """What ``facts.gather`` reads, from the node arguments (``_node_arguments``) and the CNI
    folders ``where`` found."""
    return {
        "cni_conf": args.cni_conf or found.conf_dir,
        "subnet_env": args.subnet_env or defaults["subnet_env"],
        "subnet_env_given": bool(args.subnet_env),
        "net_conf": args.net_conf or defaults["net_conf"],
        "net_conf_given": bool(args.net_conf),
        "source_vip": args.source_vip,
        "cni_bin_dir": args.cni_bin_dir or found.bin_dir,
        "reach": getattr(args, "reach", None) or "",
        "quick": getattr(args, "quick", False),
        "containerd_version": found.version if found is not None else None,
    }


def _cni_conf_argument(p: argparse.ArgumentParser) -> None:
    """The reading commands' --cni-conf: a config file, or the folder the runtime picks one from."""
    p.add_argument(
        "--cni-conf",
        type=FILE_OR_DIR,
        metavar="FILE|DIR",
        help=f"config file or directory (default: {DIRS_DEFAULT} conf dir)",
    )


def where(
    args: argparse.Namespace,
    platform: str,
    env: Mapping[str, str],
    read: Any = None,
    isdir: Callable[[str], bool] = os.path.isdir,
    strict: bool = False,
) -> Any:
    """The CNI folders the reading commands look at: ``containerd.locate``'s answer, the C:\\k\\cni
    layout where nothing of containerd is; a config.toml they cannot use is said in ``why``,
    containerd's defaults then looked at (containerd itself does not start with it). ``read``: a
    ``flagfile.Reader`` (default: --containerd-config's, on the node's files). ``strict``: a
    --containerd-config given that cannot be read at all (a FIFO, a user's link) is raised
    (``FlagFileError``), for the commands that do not print ``why``. A ``containerd.CniDirs``."""
    from dataclasses import replace

    from tools.wincni.node import containerd
    from tools.wincni.node.flagfile import FlagFileError, Reader

    read = read or Reader("--containerd-config")
    try:
        return containerd.locate(
            platform, env, read, isdir, args.containerd_config, containerd.without_containerd(platform)
        )
    except (containerd.ConfigError, FlagFileError) as exc:
        if strict and args.containerd_config and isinstance(exc, FlagFileError):
            raise
        found = containerd.defaults(platform, env)
        why = read.quote(str(exc))
        return replace(found, why=f"{why} (fix it, or pass --cni-conf and --cni-bin-dir): looking at {found.why}")


#: The table's status column: a check that could not run is neither passed nor warned about.
LABELS = {"ok": "OK", "warn": "WARN", "fail": "FAIL", "not-checked": "SKIP"}


def summary(checks: list) -> dict[str, int]:
    """How many checks ended in each status (``verdict.STATUSES``); only ``fail`` sets the exit code."""
    from tools.wincni.judge.verdict import STATUSES

    return {status: sum(c.status == status for c in checks) for status in STATUSES}


def render_table(checks: list, out: TextIO) -> None:
    width = max((len(c.id) for c in checks), default=0)
    for c in checks:
        out.write(f"{LABELS[c.status]:<4}  {c.id:<{width}}  {c.message}\n")
        if c.status != "ok" and c.run:
            out.write(f"{'':<4}  {'':<{width}}  run: {c.run}\n")
        if c.status != "ok" and c.fix:
            out.write(f"{'':<4}  {'':<{width}}  fix: {c.fix}\n")
    n = summary(checks)
    out.write(
        f"\n{len(checks)} checks: {n['ok']} ok, {n['fail']} failed, {n['warn']} warnings, {n['not-checked']} not checked\n"
    )


def main(
    argv: Sequence[str],
    stdout: TextIO,
    stderr: TextIO,
    env: Mapping[str, str],
    platform: str = sys.platform,
    cwd: str | None = None,
) -> int:
    """0: no check failed (warnings allowed); 1: a check failed; 2: bad usage."""
    from tools.wincni.doctor import checks
    from tools.wincni.doctor import gather as facts
    from tools.wincni.doctor.facts import Facts
    from tools.wincni.node.paths import default_paths
    from tools.wincni.node.source import Problem

    defaults = default_paths(platform)
    try:
        args = parse(build_parser(defaults, platform), list(argv))
        risk = _min_age_risk(args) if args.command == "reclaim" else ""
    except UsageError as exc:
        stderr.write(f"{exc}\n")
        return 2
    except SystemExit as exc:  # --help
        return int(exc.code or 0)
    if args.command == "version":
        return _print_version(args.output, stdout)
    if args.command == "install":
        from tools.wincni.install import command as install
        from tools.wincni.install.options import InstallOptions

        return install.run(InstallOptions.of(args), stdout, platform, cwd or os.getcwd(), env=env)
    if args.command == "doctor" and args.replay:
        return replay_doctor(args, stdout, stderr)
    from tools.wincni.node.flagfile import FlagFileError

    try:  # sourcevip and reclaim print no "why": a --containerd-config they cannot read is their error
        strict = args.command in ("sourcevip", "reclaim", "bundle", "metrics")
        found, refused = where(args, platform, env, strict=strict), ""
    except FlagFileError as exc:
        found, refused = None, str(exc)
    if args.command == "dirs":
        return _print_dirs(found, args.output, stdout)
    if args.command == "sourcevip":
        from tools.wincni.node import containerd
        from tools.wincni.sourcevip import command as sourcevip

        if refused:
            return sourcevip.failed(args, stdout, refused)
        args.cni_conf = args.cni_conf or os.path.join(found.conf_dir, containerd.CONF_NAME)
        return sourcevip.run(args, stdout, env, platform, cwd or os.getcwd(), stderr=stderr)
    if args.command == "reclaim":
        from tools.wincni.reclaim import command as reclaim

        if risk:
            stderr.write(f"wincni reclaim: warning: --min-age {args.min_age:g} with --force: {risk}\n")

        def gather() -> Facts:
            if refused:
                return Facts(conf_problem=Problem(refused, "fix it, or pass --cni-conf"))
            opts = {
                **defaults,
                "cni_conf": args.cni_conf or found.conf_dir,
                "cni_bin_dir": found.bin_dir,
                "quick": True,
            }
            return facts.gather(opts, env, platform, cwd or os.getcwd())

        return reclaim.command(args, gather, platform, env, cwd or os.getcwd(), stdout, stderr)
    if refused and args.command in ("bundle", "metrics"):
        stderr.write(f"wincni {args.command}: {refused}\n")
        return 1
    opts = _node_opts(args, found, defaults)
    if args.command == "bundle":
        from tools.wincni.doctor.archive import command as bundle

        return bundle.run(opts, args.out or bundle.default_out(), env, platform, cwd or os.getcwd(), stdout, stderr)
    if args.command == "metrics":
        from tools.wincni.doctor.metrics import command as metrics

        return metrics.run(args, opts, env, platform, cwd or os.getcwd(), stdout, stderr)
    results = checks.run(facts.gather(opts, env, platform, cwd or os.getcwd()), args.quick)
    from tools.wincni.node.containerd import said

    given = [flag for flag, value in (("--cni-conf", args.cni_conf), ("--cni-bin-dir", args.cni_bin_dir)) if value]
    looked = {"conf": opts["cni_conf"], "binDir": opts["cni_bin_dir"], "from": said(given, found)}
    return _report(results, looked, len(given) < 2, args.output, stdout)


def _report(results: list, looked: Mapping[str, str], chose: bool, output: str, stdout: TextIO) -> int:
    """The doctor's report, live or replayed; ``chose``: the doctor picked the folders, so the
    table says where it looked and why. 1 when a check failed."""
    if output == "json":
        json.dump(
            {
                "cniDirs": looked,
                "summary": summary(results),
                "checks": [
                    {"id": c.id, "status": c.status, "message": c.message, "fix": c.fix, "run": c.run} for c in results
                ],
            },
            stdout,
            indent=2,
        )
        stdout.write("\n")
    else:
        if chose:
            stdout.write(f"CNI config {looked['conf']}, plugins {looked['binDir']}: {looked['from']}\n\n")
        render_table(results, stdout)
    return 1 if any(c.status == "fail" for c in results) else 0


def replay_doctor(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    """``wincni doctor --replay``: the report from a bundle's facts; 1, said on stderr, for a
    bundle that cannot be read (as for a file any flag names)."""
    from tools.wincni.doctor import checks
    from tools.wincni.doctor.archive import replay

    try:
        bundle = replay.load(args.replay)
        found = replay.gather(bundle, args.reach or "")
    except replay.ReplayError as exc:
        stderr.write(f"wincni doctor: {exc}\n")
        return 1
    looked = {"conf": found.conf_path, "binDir": found.bin_dir, "from": f"replayed from {args.replay}"}
    return _report(checks.run(found), looked, True, args.output, stdout)


def _min_age_risk(args: argparse.Namespace) -> str:
    """What reclaim's ``--min-age`` risks by the ownership rule: a usage error unless ``--force``."""
    from plugins.cni.ownership import IN_FLIGHT_SECONDS, min_age_risk

    risk = min_age_risk(args.min_age)
    if risk and not args.force:
        args.refuse(
            f"--min-age {args.min_age:g} is below the in-flight age ({IN_FLIGHT_SECONDS:g} s) and needs --force: {risk}"
        )
    return risk


def _print_version(output: str, stdout: TextIO) -> int:
    from plugins.cni import buildinfo

    if output == "json":
        json.dump(buildinfo.document(), stdout, indent=2)
        stdout.write("\n")
    else:
        stdout.write(buildinfo.about("wincni"))
    return 0


def _print_dirs(found: Any, output: str, stdout: TextIO) -> int:
    if output == "json":
        json.dump({"binDir": found.bin_dir, "confDir": found.conf_dir, "from": found.why}, stdout, indent=2)
        stdout.write("\n")
    else:
        stdout.write(f"bin   {found.bin_dir}\nconf  {found.conf_dir}\nfrom  {found.why}\n")
    return 0


def entry() -> None:
    """Console script ``wincni``."""
    from basics.closedpipe import exit_with

    exit_with(lambda stdout: main(sys.argv[1:], stdout, sys.stderr, os.environ))


if __name__ == "__main__":
    entry()
