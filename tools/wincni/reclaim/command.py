"""``wincni reclaim``: the node's sweep, what CNI GC would do, by the node's one ownership rule.

No runtime on Windows sends CNI GC (containerd has no GC call; CRI-O, which has one, has no
Windows build), so leaked endpoints and addresses stay until the range runs dry. This frees,
by ``plugins.cni.ownership``: HNS endpoints of ours whose sandbox is gone, host-local
reservations whose pod has no endpoint, and flannel's saved delegate configs of pods that hold
neither; nothing younger than ``--min-age`` (an ADD in flight), nothing the node owns, and,
where the runtime answers CRI's ListPodSandbox, nothing of a sandbox it lists.

Once, or ``--every`` SECONDS (the DaemonSet's ``sweep`` container; 0 turns it off): each pass
is ``plan`` (pure: what the rule frees from what was read) then ``act`` (under host-local's
store lock, each candidate read again and planned again alone just before it is freed, so an
ADD or DEL that got there first wins), at most ``--max`` frees a pass. Every freeing is logged
with who and why (``ownership.freed``: stderr and the debug log).
"""

from __future__ import annotations

import io
import time
from dataclasses import dataclass
from typing import Any, Callable, TextIO

from basics.cli import Manual
from plugins.cni import ownership
from tools.wincni.cli.context import Context
from tools.wincni.reclaim.plan import DELEGATE, ENDPOINT, MAX_PER_PASS, RESERVATION, WHO, PassResult, act
from tools.wincni.reclaim.runtime import Runtime

MANUAL = Manual(
    does="Free what no pod holds, by the node's one ownership rule: HNS endpoints of ours whose sandbox is "
    "gone, host-local reservations with no endpoint, flannel's saved configs of pods that hold neither; "
    "never anything younger than --min-age or of a sandbox the runtime lists. --every: the node's sweep "
    "(the DaemonSet's sweep container).",
    elevated=True,
    exits=(
        (0, "done, or nothing to free (--every: stopped)"),
        (1, "HNS or a store could not be read: nothing more freed"),
        (2, "a usage error"),
    ),
    examples=("wincni reclaim --dry-run",),
)


@dataclass(frozen=True)
class ReclaimOptions:
    cni_conf: str = ""  # the pods' config, or the folder the runtime picks it from
    refused: str = ""  # why --containerd-config could not be read: each pass fails saying so
    min_age: float = ownership.IN_FLIGHT_SECONDS
    risk: str = ""  # what a --min-age below the in-flight age risks (allowed by --force)
    dry_run: bool = False
    limit: int = MAX_PER_PASS
    runtime_endpoint: str = ""  # crictl's spelling; "" or "none": do not ask the runtime
    output: str = "table"
    every: float | None = None  # seconds between passes (the DaemonSet's sweep); None: once

    @property
    def quiet(self) -> bool:
        """A pass that freed and kept nothing says nothing (the --every loop's log)."""
        return self.every is not None


def add_arguments(p: Any, platform: str) -> None:
    from basics.cli import add_output
    from tools.wincni.cli import flags
    from tools.wincni.cli.flags import seconds
    from tools.wincni.node.cri import default_endpoint

    flags.cni_conf(p)

    p.add_argument(
        "--min-age",
        type=seconds,
        default=ownership.IN_FLIGHT_SECONDS,
        metavar="SECONDS",
        help="only what is at least this old: an ADD in flight has no endpoint yet (default %(default)s; "
        "less needs --force)",
    )
    p.add_argument(
        "--force", action="store_true", help="allow a --min-age below the default, at the risk of ADDs in flight"
    )
    p.set_defaults(refuse=p.error)
    p.add_argument("--dry-run", action="store_true", help="only list what would be freed")
    p.add_argument(
        "--every",
        type=seconds,
        metavar="SECONDS",
        help="sweep again every SECONDS, for ever, reporting to stderr (the DaemonSet's sweep container); "
        "0: the sweep is off (it says so and waits)",
    )
    p.add_argument(
        "--max",
        type=_count,
        default=MAX_PER_PASS,
        metavar="N",
        help="free at most N things a pass; the rest waits for the next (default %(default)s)",
    )
    p.add_argument(
        "--runtime-endpoint",
        type=_endpoint,
        default=default_endpoint(platform),
        metavar="URL",
        help="the runtime's CRI socket: a sandbox it lists is kept (default %(default)s; none: do not ask)",
    )
    add_output(p, "what was (or would be) freed, what was kept and why, and what the runtime said")
    flags.containerd_config(p, platform)


def _endpoint(text: str) -> str:
    if text != "none":
        from tools.wincni.node.cri.transport import parse_endpoint

        try:
            parse_endpoint(text)
        except ValueError as exc:
            import argparse

            raise argparse.ArgumentTypeError(f"{exc}, or none") from None
    return text


def _count(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        import argparse

        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of 1 or more")
    return int(text)


def options(args: Any, ctx: Context) -> ReclaimOptions:
    """UsageError: a --min-age below the in-flight age without --force. A --containerd-config
    that cannot be read is each pass's failure (the sweep goes on, and says it once)."""
    from tools.wincni.node.dirs import where
    from tools.wincni.node.flagfile import FlagFileError

    risk = _min_age_risk(args)
    try:
        found, refused = where(args.containerd_config, ctx.platform, ctx.env, strict=True), ""
    except FlagFileError as exc:
        found, refused = None, str(exc)
    return ReclaimOptions(
        cni_conf=args.cni_conf or (found.conf_dir if found is not None else ""),
        refused=refused,
        min_age=args.min_age,
        risk=risk,
        dry_run=args.dry_run,
        limit=args.max,
        runtime_endpoint=args.runtime_endpoint,
        output=args.output,
        every=args.every,
    )


def _min_age_risk(args: Any) -> str:
    """What ``--min-age`` risks by the ownership rule: a usage error unless ``--force``."""
    from plugins.cni.ownership import IN_FLIGHT_SECONDS, min_age_risk

    risk = min_age_risk(args.min_age)
    if risk and not args.force:
        args.refuse(
            f"--min-age {args.min_age:g} is below the in-flight age ({IN_FLIGHT_SECONDS:g} s) and needs --force: {risk}"
        )
    return risk


def run(options: ReclaimOptions, ctx: Context) -> int:
    """``wincni reclaim`` once, or ``--every`` SECONDS; the pods' network read again each pass (a
    pass after flanneld made the network anew sees the new one)."""
    if options.risk:
        ctx.stderr.write(f"wincni reclaim: warning: --min-age {options.min_age:g} with --force: {options.risk}\n")
    runtime = Runtime(options.runtime_endpoint)

    def one_pass(report_to: TextIO, log_to: TextIO) -> int:
        pods, problem = read_pods_of(options, ctx)
        return sweep(pods, problem, holdings_of(pods, ctx), runtime, options, report_to, log_to)

    if options.every is None:
        return one_pass(ctx.stdout, ctx.stderr)
    return every(options.every, one_pass, ctx.stderr, ctx.sleep, ctx.clock)


def read_pods_of(options: ReclaimOptions, ctx: Context) -> tuple[Any, Any]:
    """(the pods' network, why this pass cannot go on or None): the config as the plugins read
    it, and HNS asked whether it answers."""
    from tools.wincni.node.hns import read_hns
    from tools.wincni.node.paths import default_paths
    from tools.wincni.node.podnetwork import PodNetwork, read_pods
    from tools.wincni.node.source import Problem

    if options.refused:
        return PodNetwork(""), Problem(options.refused, "fix it, or pass --cni-conf")
    defaults = default_paths(ctx.platform)
    pods = read_pods(options.cni_conf, defaults["subnet_env"], defaults["net_conf"], ctx.platform, ctx.cwd)
    hns = read_hns(ctx.env, pods.name, endpoints=False)  # whether HNS answers, before anything is read under a lock
    return pods, pods.conf_problem or hns.get("hns_problem")


def holdings_of(pods: Any, ctx: Context) -> Any:
    """The real ``Holdings`` of the pods' network (flannel's saved configs when its plugin is flannel)."""
    from tools.wincni.reclaim.holdings import Holdings

    return Holdings(pods.name, pods.ipam_dir, pods.flannel_dir, ctx.platform, ctx.env)


def sweep(pods: Any, problem: Any, node: Any, runtime: Runtime, opts: ReclaimOptions, out: TextIO, err: TextIO) -> int:
    """One pass. 0: done (or nothing to do); 1: HNS or a store could not be read, nothing (more) freed."""
    from libhns.errors import EnvError, HnsError
    from plugins.cni import log
    from plugins.cni.errors import CniError

    log.configure("wincni", stderr=err)
    doc: dict[str, Any] = {"network": pods.name, "store": pods.ipam_dir, "dryRun": opts.dry_run, "released": []}
    if problem:
        _fail(problem.message, problem.fix, doc, opts.output, out, err)
        return 1
    listed, note = runtime.pods()
    doc["runtime"] = note
    try:
        outcome = act(node, listed, opts.min_age, opts.limit, opts.dry_run)
    except (EnvError, HnsError, OSError, CniError) as exc:
        _fail(
            f"stopped: {getattr(exc, 'msg', exc)}",
            "run it again once HNS and the stores answer",
            doc,
            opts.output,
            out,
            err,
        )
        return 1
    report(outcome, node, opts, doc, runtime.news, out)
    return 0


def report(
    outcome: PassResult, node: Any, opts: ReclaimOptions, doc: dict[str, Any], runtime_news: str, out: TextIO
) -> None:
    """As one JSON document (``-o json``) or as table lines."""
    done = outcome.freed
    if opts.quiet and not (done or outcome.kept or runtime_news):
        return
    by_kind = {k: [f for f in done if f.kind == k] for k in (ENDPOINT, RESERVATION, DELEGATE)}
    if opts.output == "json":
        from tools.wincni.cli.output import json_doc

        doc["released"] = [{"ip": f.name, "containerID": f.pod} for f in by_kind[RESERVATION]]
        doc["removed"] = [
            {"kind": f.kind, "name": f.name, "pod": f.pod, "why": f.why} for f in done if f.kind != RESERVATION
        ]
        if outcome.kept:
            doc["kept"] = [{"kind": f.kind, "name": f.name, "why": why} for f, why in outcome.kept]
        doc["deferred"] = outcome.deferred
        json_doc(out, doc)
        return
    if runtime_news:
        out.write(f"{runtime_news}\n")
    would = "would " if opts.dry_run else ""
    for f in done if not opts.quiet else ():  # the loop's log has each freeing from ownership.freed
        if f.kind == RESERVATION:
            out.write(f"{'would release' if opts.dry_run else 'released'} {f.name} ({f.why})\n")
        else:
            what = "HNS endpoint" if f.kind == ENDPOINT else "saved delegate config"
            out.write(f"{would}{'remove' if opts.dry_run else 'removed'} {what} {f.name} ({f.why})\n")
    for f, why in outcome.kept:
        out.write(
            f"kept {f.name}: {why} (checked again just before {'release' if f.kind == RESERVATION else 'removal'})\n"
        )
    if by_kind[ENDPOINT] or by_kind[DELEGATE]:
        out.write(
            f"{len(by_kind[ENDPOINT])} endpoint(s) and {len(by_kind[DELEGATE])} saved config(s) "
            f"{'would be removed' if opts.dry_run else 'removed'} on {node.network}\n"
        )
    out.write(
        f"{len(by_kind[RESERVATION])} reservation(s) {'would be released' if opts.dry_run else 'released'} in {node.ipam_dir}\n"
    )
    if outcome.deferred:
        out.write(f"{outcome.deferred} more left for the next pass (--max {opts.limit})\n")


def every(
    interval: float,
    one_pass: Callable[[TextIO, TextIO], int],
    err: TextIO,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> int:
    """The DaemonSet's sweep: ``one_pass`` every ``interval`` seconds, all it says to ``err`` (the
    container's log; stdout stays empty), whatever one pass met; a failure said by the pass before
    is not said again. 0 turns it off: said once, then this waits for ever, as a DaemonSet's
    container must not exit. Returns only when ``sleep`` raises (a test's way out)."""
    if not interval:
        err.write(f"{WHO}: the sweep is turned off (--every 0): nothing is freed on this node\n")
        err.flush()
        while True:
            sleep(3600)
    failed = ""
    while True:
        started = clock()
        said = io.StringIO()
        rc = one_pass(said, said)
        text = said.getvalue()
        if not (rc and text == failed):
            err.write(text)
            err.flush()
        failed = text if rc else ""
        sleep(max(0.0, interval - (clock() - started)))


def _fail(message: str, fix: str, doc: dict[str, Any], output: str, out: TextIO, err: TextIO) -> None:
    if output == "json":
        from tools.wincni.cli.output import json_doc

        json_doc(out, {**doc, "error": message, "fix": fix})
    else:
        err.write(f"{WHO}: {message}\n  fix: {fix}\n")
