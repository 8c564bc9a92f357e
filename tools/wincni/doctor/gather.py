"""Gathering the node's facts for ``wincni doctor``: the imperative shell, every read in one place.

Every file is read by the parser the plugins themselves use, and every failure becomes a
``Problem`` (message + fix) in the facts, never an exception: the checks decide what it means.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any, Mapping

from basics.inputfile import Input
from basics.jsonci import get_ci
from tools.wincni.doctor.facts import Facts, Inventory
from tools.wincni.doctor.live import read_live
from tools.wincni.node.podnetwork import (
    delegate_conf,
    endpoint_conf,
    endpoint_policies,
    find_conf,
    flannel_conf,
    flavor_of,
    read_backend,
    read_conf,
    read_lease,
)
from tools.wincni.node.source import LIVE, LiveNode, Problem, _quoted


def gather(opts: Mapping[str, str], env: Mapping[str, str], platform: str, cwd: str, source: LiveNode = LIVE) -> Facts:
    """Every read the doctor makes, in the order each needs the one before; each reader returns
    values or a ``Problem``, and the facts are built once at the end. ``source``: the node itself,
    or a bundle of it (then what only the node can say is left unread)."""
    conf_path = find_conf(opts["cni_conf"], source, platform)
    conf, conf_problem = read_conf(conf_path, opts["cni_conf"], source, platform)
    plugin = str(conf.get("type") or "") if conf is not None else ""
    fconf, subnet_env_path, net_conf_path = None, opts["subnet_env"], opts["net_conf"]
    if conf is not None and plugin == "flannel":
        fconf, conf_problem = flannel_conf(conf_path, conf, platform, cwd)
        if fconf is not None:  # the files flannel itself will open, unless the operator points elsewhere
            subnet_env_path = opts["subnet_env"] if opts.get("subnet_env_given") else fconf.subnet_file
            net_conf_path = opts["net_conf"] if opts.get("net_conf_given") else fconf.net_conf
    backend, backend_problem = read_backend(net_conf_path, source)
    lease, lease_problem = read_lease(subnet_env_path, plugin, source)
    delegate_type, delegate = "", None
    if conf is not None and conf_problem is None:
        delegate_type, delegate, conf_problem = delegate_conf(conf_path, conf, fconf, lease, backend)
    name = str(conf.get("name") or "") if conf is not None else ""
    flavor = flavor_of(delegate_type)
    netconf, ipam_dir = None, ""
    if delegate is not None and conf_problem is None:
        netconf, ipam_dir, conf_problem = endpoint_conf(conf_path, delegate, delegate_type, flavor, name, platform, cwd)
    quick = bool(opts.get("quick"))
    hns = read_hns(env, name, endpoints=not quick, source=source)
    network = hns.get("network")
    source_vip, source_vip_problem = read_source_vip(opts["source_vip"], source)
    reservations, ages, store_problem = source.store(ipam_dir if not quick else "", platform)
    sandboxes = read_sandboxes(source, env, ipam_dir if not quick and store_problem is None else "", platform)
    policies: tuple[dict, ...] = ()
    if netconf is not None:
        policies, policy_problem = endpoint_policies(conf_path, flavor, netconf, network, hns.get("features"))
        if policy_problem is not None:
            netconf, conf_problem = None, policy_problem
    live = (
        read_live(opts, conf, conf_path, ipam_dir, fconf, (plugin, delegate_type), env, platform) if source.live else {}
    )
    return Facts(
        conf_path=conf_path,
        conf_problem=conf_problem,
        plugin=plugin,
        name=name,
        delegate_type=delegate_type,
        netconf=netconf,
        flavor=flavor,
        ipam_dir=ipam_dir,
        flannel_dir=getattr(fconf, "data_dir", ""),
        bin_dir=opts["cni_bin_dir"],
        subnet_env_path=subnet_env_path,
        lease=lease,
        lease_problem=lease_problem,
        net_conf_path=net_conf_path,
        backend=backend,
        backend_problem=backend_problem,
        **hns,
        policies=policies,
        source_vip_path=opts["source_vip"],
        source_vip=source_vip,
        source_vip_problem=source_vip_problem,
        reservations=reservations,
        store_problem=store_problem,
        reach=opts.get("reach") or "",
        young=young_of(ages),
        windows=platform == "win32",
        cni_version=str(conf.get("cniVersion") or "") if conf is not None else "",
        containerd_version=opts.get("containerd_version"),
        replayed=source.replayed,
        sandboxes=sandboxes,
        **live,
    )


def read_hns(env: Mapping[str, str], name: str, endpoints: bool = True, source: LiveNode = LIVE) -> dict[str, Any]:
    """HNS's side of the facts, by field: version, features, the network named ``name``, its
    endpoints and the stale ones among them, and the node's ``Inventory`` (unless not
    ``endpoints``: the readiness probe's few calls); or only ``hns_problem``."""
    from libhns.errors import EnvError, HnsError

    try:
        hcn, hnscall = source.clients(env)
        version, features = hnscall.version(), hnscall.features()
        network = hcn.get_network_by_name(name) if name else None
        found, stale, inventory = (), (), None
        if endpoints:
            from libhns.objects import same_id
            from plugins.winnet.hnsapi import HnsV1Api
            from plugins.winnet.stale import left_behind

            every = hnscall.list_endpoints()  # once: the V1 view also says which sandbox holds each
            inventory = read_inventory(hcn, hnscall, every)
            if network is not None:
                # the pods' side: remote endpoints are kube-proxy's (proxychecks judges them)
                eps = [ep for ep in every if same_id(ep.virtual_network, network.id) and not ep.is_remote]
                found = tuple((ep.name or "", tuple(ep.ip_addresses)) for ep in eps)
                v1 = HnsV1Api(hcn=hcn, hnscall=hnscall, container_id="", netns="")
                stale = tuple((ep.name, ep.id, tuple(ep.ip_addresses)) for ep in left_behind(v1, eps, name))
    except EnvError as err:
        return {"hns_problem": Problem(f"cannot query HNS: {err}", "fix or unset the variable")}
    except (HnsError, OSError) as err:
        fix = "replay a bundle that holds it" if source.replayed else "is the hns service running? (Get-Service hns)"
        return {"hns_problem": Problem(f"cannot query HNS: {err}", fix)}
    return {
        "hns_version": version,
        "features": features,
        "network": network,
        "endpoints": found,
        "stale_endpoints": stale,
        "inventory": inventory,
    }


def read_inventory(hcn: Any, hnscall: Any, endpoints: list) -> Inventory | None:
    """The node's networks, load balancers and policy lists beside ``endpoints``; None when HNS
    will not list the first two (the checks of the pods' network do not need them)."""
    from libhns.errors import HnsError

    try:
        found = Inventory(tuple(hcn.list_networks()), tuple(endpoints), tuple(hcn.list_load_balancers()))
    except HnsError:
        return None
    try:
        return replace(found, policy_lists=tuple(hnscall.list_policy_lists()))
    except HnsError:
        return found  # HNS without V1 policy lists: kube-proxy's check of them says so


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
        return None, _quoted(
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
