"""Gathering the node's facts for ``wincni doctor``: the imperative shell, every read in one place.

Every file is read by the parser the plugins themselves use, and every failure becomes a
``Problem`` (message + fix) in the facts, never an exception: the checks decide what it means.
"""

from __future__ import annotations

import json
from typing import Mapping

from basics.inputfile import Input
from basics.jsonci import get_ci
from tools.wincni.doctor.facts import NodeFacts
from tools.wincni.doctor.live import read_live
from tools.wincni.doctor.options import NodeFiles
from tools.wincni.node.hns import read_hns
from tools.wincni.node.podnetwork import endpoint_policies, read_pods
from tools.wincni.node.source import LIVE, LiveNode, Problem, quoted


def gather(opts: NodeFiles, env: Mapping[str, str], platform: str, cwd: str, source: LiveNode = LIVE) -> NodeFacts:
    """Every read the doctor makes, in the order each needs the one before; each reader returns
    values or a ``Problem``, and the facts are built once at the end. ``source``: the node itself,
    or a bundle of it (then what only the node can say is left unread)."""
    pods = read_pods(
        opts.cni_conf, opts.subnet_env, opts.net_conf, platform, cwd, source, opts.subnet_env_given, opts.net_conf_given
    )
    conf, conf_path, conf_problem, netconf = pods.conf, pods.conf_path, pods.conf_problem, pods.netconf
    plugin, name, delegate_type, flavor, ipam_dir = (
        pods.plugin,
        pods.name,
        pods.delegate_type,
        pods.flavor,
        pods.ipam_dir,
    )
    quick = opts.quick
    hns = read_hns(env, name, endpoints=not quick, source=source)
    network = hns.get("network")
    source_vip, source_vip_problem = read_source_vip(opts.source_vip, source)
    reservations, ages, store_problem = source.store(ipam_dir if not quick else "", platform)
    sandboxes = read_sandboxes(source, env, ipam_dir if not quick and store_problem is None else "", platform)
    policies: tuple[dict, ...] = ()
    if netconf is not None:
        policies, policy_problem = endpoint_policies(conf_path, flavor, netconf, network, hns.get("features"))
        if policy_problem is not None:
            netconf, conf_problem = None, policy_problem
    live = (
        read_live(opts, conf, conf_path, ipam_dir, pods.fconf, (plugin, delegate_type), env, platform)
        if source.live
        else {}
    )
    return NodeFacts(
        conf_path=conf_path,
        conf_problem=conf_problem,
        plugin=plugin,
        name=name,
        delegate_type=delegate_type,
        netconf=netconf,
        flavor=flavor,
        ipam_dir=ipam_dir,
        flannel_dir=pods.flannel_dir,
        bin_dir=opts.cni_bin_dir,
        subnet_env_path=pods.subnet_env_path,
        lease=pods.lease,
        lease_problem=pods.lease_problem,
        net_conf_path=pods.net_conf_path,
        backend=pods.backend,
        backend_problem=pods.backend_problem,
        **hns,
        policies=policies,
        source_vip_path=opts.source_vip,
        source_vip=source_vip,
        source_vip_problem=source_vip_problem,
        reservations=reservations,
        store_problem=store_problem,
        reach=opts.reach,
        young=young_of(ages),
        windows=platform == "win32",
        cni_version=str(conf.get("cniVersion") or "") if conf is not None else "",
        containerd_version=opts.containerd_version,
        replayed=source.replayed,
        now=source.now(),
        sandboxes=sandboxes,
        files=read_files(opts.checked, source),
        **live,
    )


def read_source_vip(path: str, source: LiveNode = LIVE) -> tuple[tuple[str, ...] | None, Problem | None]:
    """kube-proxy's source VIP file: its addresses, None when it does not exist."""
    from plugins.cni.skel import MAX_STDIN

    found = source.read("--source-vip", path, MAX_STDIN)
    if not isinstance(found, Input):
        return None, found
    try:
        doc = json.loads(found.data.decode("utf-8-sig"))
        ip4 = get_ci(doc, "ip4") or {}
        found = [get_ci(ip4, "ip")] if isinstance(ip4, dict) and get_ci(ip4, "ip") else []
        found += [
            get_ci(e, "address") for e in get_ci(doc, "ips") or () if isinstance(e, dict) and get_ci(e, "address")
        ]
        return tuple(str(a).split("/")[0] for a in found), None
    except (ValueError, UnicodeDecodeError, AttributeError, TypeError, RecursionError) as err:
        return None, quoted(
            Problem(f"{path} is not a CNI result: {err}", "wincni sourcevip writes a fresh one"), "--source-vip", found
        )


def read_sandboxes(source: LiveNode, env: Mapping[str, str], ipam_dir: str, platform: str) -> tuple | None:
    """Each recorded reservation's sandbox (``sandboxes.PodSandbox``) and whether it exists now
    (HNS's namespaces, HCS's compute systems); None without a store, or when its folder cannot be
    read (``read_store`` says why)."""
    from libhns.errors import EnvError, HnsError
    from tools.wincni.node.sandboxes import PodSandbox, exists, sandbox_of

    try:
        records = source.sandbox_records(ipam_dir, platform)
    except OSError:
        return None
    if records is None:
        return None
    found = [PodSandbox(ip, cid, ifname, sandbox_of(cid, netns)) for ip, cid, ifname, netns in records]
    try:
        hcn, hnscall = source.clients(env)
        live = exists((p.sandbox for p in found if p.sandbox is not None), hcn, hnscall)
    except (EnvError, HnsError, OSError) as err:
        return tuple(PodSandbox(p.ip, p.container, p.ifname, p.sandbox, None, f"cannot ask HNS: {err}") for p in found)
    return tuple(PodSandbox(p.ip, p.container, p.ifname, p.sandbox, live.get(p.sandbox)) for p in found)


def young_of(ages: Mapping[str, float]) -> frozenset[str]:
    """The reservations younger than reclaim's default ``--min-age``, the ownership rule's
    ``IN_FLIGHT_SECONDS``: an ADD may still be creating their endpoint."""
    from plugins.cni.ownership import IN_FLIGHT_SECONDS

    return frozenset(ip for ip, age in ages.items() if age < IN_FLIGHT_SECONDS)


def read_files(checked: tuple[tuple[str, str], ...], source: LiveNode) -> dict:
    """Each ``CheckFile`` the checks read, by flag, as the source answers (recorded and replayed
    as any flag's file)."""
    from tools.wincni.doctor.checks.registry import FILES

    return {flag: source.read(flag, path, FILES[flag].cap) for flag, path in checked}
