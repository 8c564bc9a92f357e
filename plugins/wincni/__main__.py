"""``wincni``: operator commands. ``wincni doctor`` walks the Windows networking troubleshooting guide;
``wincni install`` lays the plugins and their config into containerd's CNI directories;
``wincni sourcevip`` reserves kube-proxy's source VIP."""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Mapping, Sequence, TextIO

from libhns.cli import Parser, UsageError


def build_parser(defaults: Mapping[str, str], platform: str = sys.platform) -> argparse.ArgumentParser:
    from plugins.cni.buildinfo import describe
    p = Parser(prog="wincni", description=f"Windows CNI operator tools, wincni {describe()}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=Parser)
    d = sub.add_parser("doctor", help="check this node's pod networking, with a fix for each problem")
    d.add_argument("--cni-conf", default=defaults["cni_conf"], help="config file or directory (default %(default)s)")
    d.add_argument("--subnet-env", help=f"flanneld's lease (default: the config's subnetFile, else {defaults['subnet_env']})")
    d.add_argument("--net-conf", help=f"flanneld's net-conf.json (default: the config's netConf, else {defaults['net_conf']})")
    d.add_argument("--source-vip", default=defaults["source_vip"], help="kube-proxy's source VIP file (default %(default)s)")
    d.add_argument("--cni-bin-dir", default=defaults["cni_bin_dir"], help="the plugins' directory (default %(default)s)")
    d.add_argument("--reach", default="", metavar="IP", help="tell whether pod traffic to IP is SNAT'ed")
    d.add_argument("-o", "--output", choices=("table", "json"), default="table")
    from . import install, sourcevip
    install.add_arguments(sub.add_parser("install", help="lay the plugins and the CNI config into containerd's "
                                         "CNI directories (upgrades under load)"), platform)
    sourcevip.add_arguments(sub.add_parser("sourcevip", help="reserve kube-proxy's source VIP (overlay) in the pods' "
                                           "host-local store; print its flags"), platform)
    r = sub.add_parser("reclaim", help="release host-local reservations whose pod has no HNS endpoint (what CNI GC does)")
    r.add_argument("--cni-conf", default=defaults["cni_conf"], help="config file or directory (default %(default)s)")
    r.add_argument("--min-age", type=float, default=300.0, metavar="SECONDS",
                   help="only reservations at least this old: an ADD in flight has no endpoint yet (default %(default)s)")
    r.add_argument("--dry-run", action="store_true", help="only list what would be released")
    return p


def render_table(checks: list, out: TextIO) -> None:
    width = max((len(c.id) for c in checks), default=0)
    for c in checks:
        out.write(f"{c.status.upper():<4}  {c.id:<{width}}  {c.message}\n")
        if c.status != "ok" and c.fix:
            out.write(f"{'':<4}  {'':<{width}}  fix: {c.fix}\n")
    failed = sum(c.status == "fail" for c in checks)
    warned = sum(c.status == "warn" for c in checks)
    out.write(f"\n{len(checks)} checks: {failed} failed, {warned} warnings\n")


def main(argv: Sequence[str], stdout: TextIO, stderr: TextIO, env: Mapping[str, str],
         platform: str = sys.platform, cwd: str | None = None) -> int:
    """0: no check failed (warnings allowed); 1: a check failed; 2: bad usage."""
    from . import checks, facts
    defaults = facts.default_paths(platform)
    try:
        args = build_parser(defaults, platform).parse_args(list(argv))
    except UsageError as exc:
        stderr.write(f"{exc}\n")
        return 2
    except SystemExit as exc:  # --help
        return int(exc.code or 0)
    if args.command == "install":
        from . import install
        return install.run(args, stdout, platform, cwd or os.getcwd())
    if args.command == "sourcevip":
        from . import sourcevip
        return sourcevip.run(args, stdout, env, platform, cwd or os.getcwd(), stderr=stderr)
    if args.command == "reclaim":
        from . import reclaim
        opts = {**defaults, "cni_conf": args.cni_conf}
        facts_ = facts.gather(opts, env, platform, cwd or os.getcwd())
        return reclaim.run(facts_, platform, args.min_age, args.dry_run, stdout, stderr, env)
    opts = {"cni_conf": args.cni_conf, "subnet_env": args.subnet_env or defaults["subnet_env"],
            "subnet_env_given": bool(args.subnet_env), "net_conf": args.net_conf or defaults["net_conf"],
            "net_conf_given": bool(args.net_conf), "source_vip": args.source_vip,
            "cni_bin_dir": args.cni_bin_dir, "reach": args.reach}
    results = checks.run(facts.gather(opts, env, platform, cwd or os.getcwd()))
    if args.output == "json":
        json.dump({"checks": [{"id": c.id, "status": c.status, "message": c.message, "fix": c.fix} for c in results]},
                  stdout, indent=2)
        stdout.write("\n")
    else:
        render_table(results, stdout)
    return 1 if any(c.status == "fail" for c in results) else 0


def entry() -> None:
    """Console script ``wincni``."""
    sys.exit(main(sys.argv[1:], sys.stdout, sys.stderr, os.environ))


if __name__ == "__main__":
    entry()
