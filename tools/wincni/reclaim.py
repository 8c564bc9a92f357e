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
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, TextIO

from plugins.cni import ownership

from .holdings import Delegate, Endpoint, Reservation

WHO = "wincni reclaim"
#: Frees per pass by default: a node's worth of leaked pods, in a pass of a few seconds.
MAX_PER_PASS = 100
ENDPOINT, RESERVATION, DELEGATE = "endpoint", "reservation", "delegate"


@dataclass(frozen=True)
class Seen:
    """One read of the node: what ``plan`` decides from. ``runtime``: the sandbox IDs the runtime
    lists; None when it could not be asked (the rule alone)."""

    network: str
    reservations: tuple[Reservation, ...] = ()
    endpoints: tuple[Endpoint, ...] = ()
    delegates: tuple[Delegate, ...] = ()
    runtime: frozenset[str] | None = None


@dataclass(frozen=True)
class Free:
    kind: str  # ENDPOINT, RESERVATION or DELEGATE
    name: str  # the endpoint's name, the reserved IP, the saved config's key
    pod: str  # the sandbox (container ID) it was for
    why: str

    def same(self, other: "Free") -> bool:
        return (self.kind, self.name, self.pod) == (other.kind, other.name, other.pod)


def plan(seen: Seen, min_age: float) -> tuple[list[Free], dict[tuple[str, str], str]]:
    """(what may be freed, in the order to free it; why each thing of ours stays, by (kind, name)).
    Endpoints come first, then reservations, then saved configs: a pass cut short by its bound
    never frees a reservation while the endpoint that would have kept it stays."""
    net = seen.network
    listed = seen.runtime if seen.runtime is not None else frozenset()
    young = {r.owner for r in seen.reservations if r.age < min_age} | {d.key for d in seen.delegates if d.age < min_age}
    gone = "no namespace or container holds it" + (
        ", and the runtime does not list it" if seen.runtime is not None else ""
    )
    frees: list[Free] = []
    kept: dict[tuple[str, str], str] = {}
    live: set[str] = set()
    for ep in seen.endpoints:
        pod = ownership.pod_of(ep.name, net)
        why = (
            ownership.endpoint_kept(ep.name, net, ep.in_use)
            or (ownership.NODE_OWNED if ownership.pinned(pod) else "")
            or (ownership.RUNTIME_LISTS if pod in listed else "")
            or (ownership.IN_FLIGHT if pod in young else "")
        )
        if not why:
            frees.append(Free(ENDPOINT, ep.name, pod, f"its sandbox {pod} is gone ({gone})"))
        elif pod:
            live.add(pod)
            kept[(ENDPOINT, ep.name)] = why
    holders = set(live)
    for r in seen.reservations:
        why = ownership.reservation_kept(r.owner, live, r.age, min_age, r.sandbox_alive) or (
            ownership.RUNTIME_LISTS if r.owner in listed else ""
        )
        if not why:
            frees.append(
                Free(
                    RESERVATION,
                    r.ip,
                    r.owner,
                    f"reserved {r.age:.0f} s ago for {r.owner or 'no container'}, which has no HNS endpoint on {net}",
                )
            )
        else:
            holders.add(r.owner)
            kept[(RESERVATION, r.ip)] = why
    for d in seen.delegates:
        why = ownership.delegate_kept(d.key, holders, d.age, min_age) or (
            ownership.RUNTIME_LISTS if d.key in listed else ""
        )
        if not why:
            frees.append(Free(DELEGATE, d.key, d.key, f"its pod {d.key} holds no endpoint or reservation on {net}"))
        else:
            kept[(DELEGATE, d.key)] = why
    return frees, kept


@dataclass
class Outcome:
    """One pass: what was (or would be) freed, what the re-check kept and why, what the bound left."""

    freed: list[Free] = field(default_factory=list)
    kept: list[tuple[Free, str]] = field(default_factory=list)
    deferred: int = 0


def act(holdings: Any, runtime: frozenset[str] | None, min_age: float, limit: int, dry_run: bool) -> Outcome:
    """Read, plan and free, all under host-local's store lock. ``holdings``: ``holdings.Holdings``
    or a test's fake of it. HNS and flannel's store are read before the lock is taken (an ADD
    waits on it meanwhile only for the store's part), then each candidate again under it."""
    network = holdings.network
    endpoints, delegates = tuple(holdings.endpoints()), tuple(holdings.delegates())
    out = Outcome()
    with holdings.locked() as store:
        seen = Seen(network, tuple(store.reservations()), endpoints, delegates, runtime)
        frees, _ = plan(seen, min_age)
        out.deferred = max(0, len(frees) - limit)
        for f in frees[:limit]:
            again, kept = plan(_seen_of(f.pod, holdings, store, runtime), min_age)
            if not any(f.same(g) for g in again):
                out.kept.append((f, kept.get((f.kind, f.name)) or "it is gone, or its owner changed"))
                continue
            if not dry_run:
                _free(f, holdings, store)
            out.freed.append(f)
    return out


def _seen_of(pod: str, holdings: Any, store: Any, runtime: frozenset[str] | None) -> Seen:
    """What the node holds for ``pod`` now: its reservations (the lock is held), its endpoint and
    its saved config, read again."""
    ep = holdings.endpoint(f"{pod}_{holdings.network}") if pod else None
    saved = holdings.delegate(pod) if pod else None
    return Seen(
        holdings.network,
        tuple(store.reservations(pod)),
        (ep,) if ep is not None else (),
        (saved,) if saved is not None else (),
        runtime,
    )


def _free(f: Free, holdings: Any, store: Any) -> None:
    if f.kind == ENDPOINT:
        holdings.remove_endpoint(f.name)
        ownership.freed(WHO, f"HNS endpoint {f.name}", f.why)
    elif f.kind == RESERVATION:
        store.release(f.name)
        ownership.freed(WHO, f"the reservation of {f.name} in {holdings.ipam_dir}", f.why)
    else:
        holdings.remove_delegate(f.name)
        ownership.freed(WHO, f"saved delegate config {f.name} in {holdings.data_dir}", f.why)


# ---------------------------------------------------------------------------- the shell


@dataclass(frozen=True)
class Options:
    min_age: float = ownership.IN_FLIGHT_SECONDS
    dry_run: bool = False
    limit: int = MAX_PER_PASS
    runtime_endpoint: str = ""  # crictl's spelling; "" or "none": do not ask the runtime
    output: str = "table"
    quiet: bool = False  # a pass that freed and kept nothing says nothing (the --every loop's log)


class Runtime:
    """The runtime's pod list for each pass, or None and why."""

    def __init__(self, endpoint: str, ask: Callable[[str], Iterable[Any]] | None = None) -> None:
        self.endpoint = "" if endpoint == "none" else endpoint
        self.ask = ask
        self.state = ""
        self.news = ""

    def pods(self) -> tuple[frozenset[str] | None, str]:
        """(the sandbox IDs or None, what to say about it)."""
        if not self.endpoint:
            return self._now("off", None, "runtime not asked (--runtime-endpoint none): the ownership rule alone")
        from . import cri

        try:
            listed = frozenset(s.id for s in (self.ask or cri.list_sandboxes)(self.endpoint))
        except cri.CriError as exc:
            note = f"runtime's pod list not available at {self.endpoint} ({exc}): the ownership rule alone"
            return self._now("unavailable", None, note)
        return self._now("listed", listed, f"runtime lists {len(listed)} sandbox(es) at {self.endpoint}: kept")

    def _now(self, state: str, listed: frozenset[str] | None, note: str) -> tuple[frozenset[str] | None, str]:
        self.news = note if state != self.state else ""  # said once per change: a loop logs no noise
        self.state = state
        return listed, note


def add_arguments(p: Any, platform: str) -> None:
    """reclaim's flags but --cni-conf and --containerd-config (``__main__``'s, shared)."""
    from basics.cli import add_output

    from .cri import default_endpoint
    from .sourcevip import seconds

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
        from .cri.transport import parse_endpoint

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
    from . import facts as facts_mod
    from .holdings import Holdings

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
