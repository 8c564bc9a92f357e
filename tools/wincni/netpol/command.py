"""``wincni netpol``: the NetworkPolicy node agent, a long-running command (the DaemonSet's
``netpol`` HostProcess container when turned on; docs/NETWORKPOLICY.md).

It reads the pods' network once the way the other commands do (``node.podnetwork.read_pods``:
the network's name, the config's ``apiVersion`` and ``hnsTimeout``), opens that HNS API, and
runs ``Agent.run`` over ``ClusterWatch`` (the service account of the pod,
``kubeapi.InCluster.from_env``) and ``NodeEndpoints``, writing the state ADD reads
(``lifecycle.netpol_state``). Each sync that set, failed or left out anything is one line on
stderr. SIGTERM or SIGINT (and CTRL_BREAK on Windows) stop it between syncs. ``--once`` lists
once, makes one sync and exits: what the doctor's fix for drift runs where the agent's service
account is.

Exit statuses: 0 stopped by a signal (``--once``: every apply done); 1 it could not start (no
node name, the config or HNS unreadable, no service account; ``--once``: the lists or an apply
failed); 2 a usage error.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any, Sequence

from basics.cli import Manual
from tools.wincni.cli.context import Context

MANUAL = Manual(
    does="Keep the ACLs of this node's pod endpoints equal to what the cluster's NetworkPolicies want: "
    "list+watch NetworkPolicies, Pods and Namespaces through the pod's service account, set each endpoint "
    "whose ACLs differ (one HNS call; none when they are equal) and write the state ADD reads so a new pod "
    "is protected from its first packet. Runs until stopped. Run it in a HostProcess container (deploy/'s "
    "netpol component), with KUBERNETES_SERVICE_HOST/PORT and a service-account token (found under "
    "CONTAINER_SANDBOX_MOUNT_POINT there).",
    elevated=True,
    exits=(
        (0, "stopped by SIGTERM/SIGINT (or CTRL_BREAK), or --once done"),
        (
            1,
            "could not start (no node name, the CNI config or HNS unreadable, no service account), or --once "
            "failed: one line on stderr",
        ),
        (2, "a usage error"),
    ),
    examples=(
        "wincni netpol --node-name $env:NODE_NAME --node-address 10.0.0.4",
        "wincni netpol --once --node-name $env:NODE_NAME",
    ),
)


@dataclass(frozen=True)
class NetpolOptions:
    node_name: str
    node_addresses: tuple[str, ...]
    cni_conf: str = ""
    refused: str = ""  # why --containerd-config could not be read
    state: str = ""  # the state file ADD reads
    once: bool = False  # one list, one sync, exit
    resync: float = 300.0  # seconds between reads of HNS that no event asked for


def add_arguments(p: argparse.ArgumentParser, platform: str) -> None:
    from tools.wincni.cli import flags

    p.add_argument(
        "--node-name",
        metavar="NAME",
        help="this node's name in the API server (default: the NODE_NAME environment variable, the downward API's "
        "spec.nodeName)",
    )
    p.add_argument(
        "--node-address",
        action="append",
        type=_address,
        default=[],
        metavar="IP",
        help="an address of this node that may always reach its pods (kubelet's probes); repeat for more "
        "(default: NODE_IP, the downward API's status.hostIP); flanneld's host endpoint is always added",
    )
    p.add_argument(
        "--once",
        action="store_true",
        help="list once, set what differs, write the state and exit (0 when every apply was done): a repair now "
        "rather than at the running agent's next resync",
    )
    p.add_argument(
        "--resync",
        type=_resync,
        default=NetpolOptions.resync,
        metavar="SECONDS",
        help="read HNS again this often even without an event, which repairs an HNS restart or ACLs changed by "
        "someone else (default: %(default)g)",
    )
    flags.cni_conf(p)
    flags.containerd_config(p, platform)


def _resync(text: str) -> float:
    """``--resync``'s type: ``flags.seconds``, above 0 (0 would read HNS without pause)."""
    from tools.wincni.cli import flags

    try:
        value = flags.seconds(text)
    except argparse.ArgumentTypeError:
        value = 0.0
    if value == 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds above 0")
    return value


def _address(text: str) -> str:
    import ipaddress

    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an IP address") from None


def options(args: argparse.Namespace, ctx: Context) -> NetpolOptions:
    from plugins.winnet.lifecycle import netpol_state
    from tools.wincni.node.dirs import where
    from tools.wincni.node.flagfile import FlagFileError

    refused, conf = "", args.cni_conf or ""
    if not conf:
        try:
            conf = where(args.containerd_config, ctx.platform, ctx.env, strict=True).conf_dir
        except FlagFileError as exc:
            refused = str(exc)
    addresses = list(args.node_address)
    if not addresses and ctx.env.get("NODE_IP"):
        addresses.append(ctx.env["NODE_IP"])
    return NetpolOptions(
        node_name=args.node_name or ctx.env.get("NODE_NAME", ""),
        node_addresses=tuple(addresses),
        cni_conf=conf,
        refused=refused,
        state=netpol_state(ctx.env, ctx.platform),
        once=args.once,
        resync=args.resync,
    )


class CannotStart(Exception):
    """Why the agent cannot start, and what to do: one line on stderr, exit 1."""


def run(options: NetpolOptions, ctx: Context) -> int:
    import threading

    from plugins.cni import log

    log.configure("wincni", stderr=ctx.stderr)
    try:
        agent = build(options, ctx)
    except CannotStart as exc:
        ctx.stderr.write(f"wincni netpol: {exc}\n")
        return 1
    if options.once:
        return once(agent, ctx.stderr)
    stop = threading.Event()
    restore = _on_signals(stop, agent.watch.stop, agent.watch.changed)
    try:
        agent.watch.start()
        ctx.stderr.write(
            f"wincni netpol: node {options.node_name}, network {agent.endpoints.network}, "
            f"state {options.state}: watching\n"
        )
        ctx.stderr.flush()
        agent.run(lambda sync: _report(sync, ctx.stderr), stop)
    finally:
        agent.watch.stop.set()
        restore()
    ctx.stderr.write("wincni netpol: stopped\n")
    return 0


def once(agent: Any, err: Any) -> int:
    """One list of each kind, one sync: 0 when every apply was done."""
    from tools.wincni.netpol.kubeapi import ApiError

    try:
        for reflector in agent.watch.reflectors.values():
            reflector.relist()
    except ApiError as exc:
        err.write(f"wincni netpol: the API server: {exc}\n")
        return 1
    sync = agent.sync()
    _report(sync, err)
    return 1 if sync.failures else 0


def build(options: NetpolOptions, ctx: Context) -> Any:
    """The agent over this node's API server, HNS and state; ``CannotStart`` saying what is missing."""
    from libhns.errors import EnvError, HnsError
    from plugins.winnet.hnsapi import open_api
    from tools.wincni.netpol.agent import Agent
    from tools.wincni.netpol.kubeapi import ApiError, InCluster  # ssl: wincni.exe has it (specs/wincni.spec)
    from tools.wincni.netpol.node_endpoints import NodeEndpoints
    from tools.wincni.netpol.state import StateFile
    from tools.wincni.netpol.watch import ClusterWatch
    from tools.wincni.node.paths import default_paths
    from tools.wincni.node.podnetwork import read_pods

    if not options.node_name:
        raise CannotStart("no node name: pass --node-name, or set NODE_NAME (the downward API's spec.nodeName)")
    if options.refused:
        raise CannotStart(f"{options.refused} (fix it, or pass --cni-conf)")
    defaults = default_paths(ctx.platform)
    pods = read_pods(options.cni_conf, defaults["subnet_env"], defaults["net_conf"], ctx.platform, ctx.cwd)
    if pods.conf_problem is not None or pods.netconf is None:
        problem = pods.conf_problem
        raise CannotStart(f"{problem.message} ({problem.fix})" if problem else f"{pods.conf_path}: no endpoint config")
    try:
        api = InCluster.from_env(ctx.env)
        api.token()
        api.context()
    except ApiError as exc:
        raise CannotStart(f"the API server: {exc}") from None
    netconf = pods.netconf
    try:
        # unset apiVersion: HCN, as under containerd (the only runtime with HostProcess containers)
        hns = open_api(netconf.api_version or 2, ctx.env, netconf.hns_timeout, "wincni-netpol", "")
        addresses = node_addresses(hns, pods.name, options.node_addresses)
    except (HnsError, EnvError) as exc:
        raise CannotStart(f"HNS: {exc}") from None
    endpoints = NodeEndpoints(hns, pods.name, addresses)
    return Agent(ClusterWatch(api), endpoints, StateFile(options.state), options.node_name, ctx.clock, options.resync)


def node_addresses(api: Any, network: str, given: Sequence[str]) -> list[str]:
    """``given`` and the addresses of flanneld's host endpoint (``<network>_ep``), through which
    the node reaches its pods on the pod network."""
    found = list(given)
    net = api.network(network)
    for ep in api.survey(net) if net is not None else []:
        if ep.name == f"{network}_ep" and not ep.is_remote:
            found += [str(ip) for ip in ep.ip_addresses if str(ip) not in found]
    return found


def _report(sync: Any, err: Any) -> None:
    """One line for a sync that set, failed or left out anything (an unchanged pass says nothing)."""
    from tools.wincni.netpol import plan as P

    if not (sync.counts.get(P.APPLY) or sync.failures or sync.refused):
        return
    counts = ", ".join(f"{n} {action}" for action, n in sync.counts.items())
    line = f"wincni netpol: sync in {sync.seconds:.3f}s: {counts}"
    if sync.failures:
        line += "; failed: " + "; ".join(f"{f.endpoint}: {f.error}" for f in sync.failures)
    if sync.refused:
        line += f"; left out {len(sync.refused)}: " + "; ".join(sync.refused)
    err.write(line + "\n")
    err.flush()


def _on_signals(*events: Any) -> Any:
    """SIGTERM, SIGINT (and CTRL_BREAK's SIGBREAK) set each of ``events`` (the loop's stop, the
    watch's stop, and ``changed``, which wakes the loop); the restore of the old handlers.
    Only the main thread can set a handler: elsewhere (a test's thread) nothing is changed."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def handler(signum: int, frame: Any) -> None:
        for event in events:
            event.set()

    names = [n for n in ("SIGTERM", "SIGINT", "SIGBREAK") if hasattr(signal, n)]
    old = {n: signal.signal(getattr(signal, n), handler) for n in names}

    def restore() -> None:
        for n, h in old.items():
            signal.signal(getattr(signal, n), h)

    return restore
