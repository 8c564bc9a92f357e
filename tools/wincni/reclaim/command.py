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
from typing import Any, Callable, Mapping, TextIO

from plugins.cni import ownership
from tools.wincni.reclaim.plan import DELEGATE, ENDPOINT, MAX_PER_PASS, RESERVATION, WHO, Outcome, act
from tools.wincni.reclaim.runtime import Runtime


@dataclass(frozen=True)
class Options:
    min_age: float = ownership.IN_FLIGHT_SECONDS
    dry_run: bool = False
    limit: int = MAX_PER_PASS
    runtime_endpoint: str = ""  # crictl's spelling; "" or "none": do not ask the runtime
    output: str = "table"
    quiet: bool = False  # a pass that freed and kept nothing says nothing (the --every loop's log)


def add_arguments(p: Any, platform: str) -> None:
    """reclaim's flags but --cni-conf and --containerd-config (``__main__``'s, shared)."""
    from basics.cli import add_output
    from tools.wincni.node.cri import default_endpoint
    from tools.wincni.sourcevip.command import seconds

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


def command(
    args: Any, gather: Callable[[], Any], platform: str, env: Mapping[str, str], cwd: str, out: TextIO, err: TextIO
) -> int:
    """``wincni reclaim`` once, or ``--every`` SECONDS. ``gather``: the facts, read again each pass
    (a pass after flanneld made the network anew sees the new one)."""
    opts = Options(args.min_age, args.dry_run, args.max, args.runtime_endpoint, args.output, args.every is not None)
    runtime = Runtime(opts.runtime_endpoint)

    def one_pass(report_to: TextIO, log_to: TextIO) -> int:
        facts = gather()
        return run(facts, node_of(facts, platform, env, cwd), runtime, opts, report_to, log_to)

    if args.every is None:
        return one_pass(out, err)
    return every(args.every, one_pass, err)


def node_of(facts: Any, platform: str, env: Mapping[str, str], cwd: str) -> Any:
    """The real ``Holdings`` of the network the facts name (flannel's saved configs when its
    plugin is flannel)."""
    from tools.wincni.doctor import gather as facts_mod
    from tools.wincni.reclaim.holdings import Holdings

    data_dir = ""
    if facts.plugin == "flannel":
        conf, _ = facts_mod.read_conf(facts.conf_path, facts.conf_path)
        fconf, _ = facts_mod.flannel_conf(facts.conf_path, conf, platform, cwd) if conf is not None else (None, None)
        data_dir = getattr(fconf, "data_dir", "") or ""
    return Holdings(facts.name, facts.ipam_dir, data_dir, platform, env)


def run(facts: Any, node: Any, runtime: Runtime, opts: Options, out: TextIO, err: TextIO) -> int:
    """One pass. 0: done (or nothing to do); 1: HNS or a store could not be read, nothing (more) freed."""
    from libhns.errors import EnvError, HnsError
    from plugins.cni import log
    from plugins.cni.errors import CniError

    log.configure("wincni", stderr=err)
    doc: dict[str, Any] = {"network": facts.name, "store": facts.ipam_dir, "dryRun": opts.dry_run, "released": []}
    if facts.conf_problem or facts.hns_problem:
        problem = facts.conf_problem or facts.hns_problem
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


def report(outcome: Outcome, node: Any, opts: Options, doc: dict[str, Any], runtime_news: str, out: TextIO) -> None:
    """As one JSON document (``-o json``) or as table lines."""
    done = outcome.freed
    if opts.quiet and not (done or outcome.kept or runtime_news):
        return
    by_kind = {k: [f for f in done if f.kind == k] for k in (ENDPOINT, RESERVATION, DELEGATE)}
    if opts.output == "json":
        import json

        doc["released"] = [{"ip": f.name, "containerID": f.pod} for f in by_kind[RESERVATION]]
        doc["removed"] = [
            {"kind": f.kind, "name": f.name, "pod": f.pod, "why": f.why} for f in done if f.kind != RESERVATION
        ]
        if outcome.kept:
            doc["kept"] = [{"kind": f.kind, "name": f.name, "why": why} for f, why in outcome.kept]
        doc["deferred"] = outcome.deferred
        json.dump(doc, out, indent=2)
        out.write("\n")
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
        import json

        json.dump({**doc, "error": message, "fix": fix}, out, indent=2)
        out.write("\n")
    else:
        err.write(f"{WHO}: {message}\n  fix: {fix}\n")
