"""Gathering the node's facts for ``wincni doctor``: the imperative shell, every read in one place.

Every file is read by the parser the plugins themselves use, and every failure becomes a
``Problem`` (message + fix) in the facts, never an exception: the checks decide what it means.
"""
from __future__ import annotations

import json
import ntpath
import os
import types
from dataclasses import dataclass, field
from typing import Any, Mapping

from plugins.cni.config import get_ci

# Where a Windows node keeps things (the Kubernetes Windows guide, flanneld, kube-proxy); off
# Windows the Linux places, so the same flags drive the simulator.
WINDOWS_PATHS = {"cni_conf": r"C:\k\cni\config", "subnet_env": r"C:\run\flannel\subnet.env",
                 "net_conf": r"C:\etc\kube-flannel\net-conf.json", "source_vip": r"C:\k\SourceVip.json",
                 "cni_bin_dir": r"C:\k\cni"}
POSIX_PATHS = {"cni_conf": "/etc/cni/net.d", "subnet_env": "/run/flannel/subnet.env",
               "net_conf": "/etc/kube-flannel/net-conf.json", "source_vip": "/var/lib/kube-proxy/SourceVip.json",
               "cni_bin_dir": "/opt/cni/bin"}
FLAVORS = {"win-bridge": "plugins.win_bridge.flavor", "win-overlay": "plugins.win_overlay.flavor"}


@dataclass(frozen=True)
class Problem:
    message: str
    fix: str


@dataclass
class Facts:
    """What the checks look at; ``None`` with a ``*_problem`` means "could not be read"."""
    conf_path: str = ""
    conf_problem: Problem | None = None
    plugin: str = ""  # the config's "type" (flannel, win-bridge, win-overlay)
    name: str = ""  # the config's "name" = the HNS network
    delegate_type: str = ""  # the plugin that talks to HNS
    netconf: Any = None  # plugins.winnet.netconf.NetConf of the effective win-bridge/win-overlay config
    flavor: Any = None  # plugins.winnet.lifecycle.Flavor of that plugin
    ipam_dir: str = ""  # host-local's store directory for this network
    bin_dir: str = ""
    bin_files: frozenset[str] | None = None
    subnet_env_path: str = ""
    lease: Any = None  # plugins.flannel.subnet_env.Lease
    lease_problem: Problem | None = None
    net_conf_path: str = ""
    backend: Any = None  # plugins.flannel.netconf.Backend
    backend_problem: Problem | None = None
    hns_problem: Problem | None = None
    hns_version: tuple[int, int] | None = None
    features: Any = None  # libhns.client.Features
    network: Any = None  # libhns.objects.HostComputeNetwork
    endpoints: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)  # (name, IPs) on the network
    policies: tuple[dict, ...] = ()  # the endpoint policies the plugin would apply (user + automatic), V1 form
    source_vip_path: str = ""
    source_vip: tuple[str, ...] | None = None  # its addresses; None when absent
    source_vip_problem: Problem | None = None
    reservations: list[tuple[str, str]] | None = None  # host-local (IP, container ID)
    store_problem: Problem | None = None
    reach: str = ""
    simulated: bool = False  # the plugins would run on the HNS simulator on Windows (security.py)
    open_dirs: list[tuple[str, str, str]] = field(default_factory=list)  # (what, folder, who else may write it)


def default_paths(platform: str) -> dict[str, str]:
    return dict(WINDOWS_PATHS if platform == "win32" else POSIX_PATHS)


def find_conf(path: str) -> str:
    """A directory means the kubelet's pick: the first ``*.conf``/``*.conflist`` in lexical order."""
    if not os.path.isdir(path):
        return path
    names = sorted(n for n in os.listdir(path) if n.endswith((".conf", ".conflist", ".json")))
    return os.path.join(path, names[0]) if names else os.path.join(path, "*.conf")


def gather(opts: Mapping[str, str], env: Mapping[str, str], platform: str, cwd: str) -> Facts:
    facts = Facts(bin_dir=opts["cni_bin_dir"], reach=opts.get("reach") or "",
                  subnet_env_path=opts["subnet_env"], net_conf_path=opts["net_conf"],
                  source_vip_path=opts["source_vip"])
    facts.bin_files = _listdir(facts.bin_dir)
    conf = _read_conf(facts, opts["cni_conf"])
    fconf = None
    if conf is not None and facts.plugin == "flannel":
        fconf = _flannel(facts, conf, opts, platform, cwd)
    _lease_and_backend(facts)
    delegate = _delegate(facts, conf, fconf)
    if delegate is not None:
        _validate_delegate(facts, delegate, platform, cwd)
    _hns(facts, env)
    if facts.flavor is not None:
        facts.policies = tuple(_flavor_policies(facts.flavor, facts))
    _source_vip(facts)
    _store(facts, platform)
    from . import security
    security.gather(facts, env, platform, fconf)
    return facts


def _read_conf(facts: Facts, where: str) -> dict | None:
    from plugins.cni.config import check_name, decode
    from plugins.cni.errors import CniError
    facts.conf_path = find_conf(where)
    raw = _read(facts.conf_path)
    if isinstance(raw, Problem):
        facts.conf_problem = Problem(f"CNI config: {raw.message}", f"the kubelet reads the first *.conf/*.conflist in "
                                     f"{os.path.dirname(facts.conf_path) or '.'}; pass --cni-conf FILE")
        return None
    try:
        conf = decode(raw)
        if isinstance(get_ci(conf, "plugins"), list):  # a conflist: the first plugin does the networking
            first = conf["plugins"][0] if conf["plugins"] and isinstance(conf["plugins"][0], dict) else {}
            conf = {"name": conf.get("name"), "cniVersion": conf.get("cniVersion"), **first}
        facts.name = check_name(conf)
    except CniError as err:
        facts.conf_problem = Problem(f"{facts.conf_path}: {err.msg}", err.details)
        return None
    facts.plugin = str(conf.get("type") or "")
    return conf


def _flannel(facts: Facts, conf: dict, opts: Mapping[str, str], platform: str, cwd: str) -> Any:
    from plugins.cni.errors import CniError
    from plugins.flannel.config import FlannelConf
    try:
        fconf = FlannelConf.from_conf(conf, platform, cwd)
    except CniError as err:
        facts.conf_problem = Problem(f"{facts.conf_path}: {err.msg}", err.details)
        return None
    # The files flannel itself will open, unless the operator points elsewhere.
    if not opts.get("subnet_env_given"):
        facts.subnet_env_path = fconf.subnet_file
    if not opts.get("net_conf_given"):
        facts.net_conf_path = fconf.net_conf
    return fconf


def _lease_and_backend(facts: Facts) -> None:
    from plugins.cni.errors import CniError
    from plugins.flannel import netconf, subnet_env
    try:
        facts.backend = netconf.load(facts.net_conf_path)
    except CniError as err:
        facts.backend_problem = Problem(err.msg, err.details)
    try:
        facts.lease = subnet_env.load(facts.subnet_env_path)
    except subnet_env.LeaseError as err:
        if err.problem is subnet_env.Problem.MISSING and facts.plugin != "flannel":
            return  # a win-bridge/win-overlay config without flannel (start.ps1 style) needs no lease
        facts.lease_problem = Problem(err.reason, "flanneld writes it once it has a lease and the HNS network: check "
                                      "that flanneld runs and its log (\"Waiting for the Network to be created\")")


def _delegate(facts: Facts, conf: dict | None, fconf: Any) -> dict | None:
    """The config the HNS-facing plugin runs with: flannel's delegate as flannel builds it, or the config itself."""
    from plugins.cni.errors import CniError
    from plugins.flannel import delegate
    if conf is None or facts.conf_problem:
        return None
    if fconf is None:
        facts.delegate_type = facts.plugin
        return conf
    if facts.lease is None:
        facts.delegate_type = fconf.delegate.get("type") or ""
        return None
    try:
        doc = delegate.build(fconf, facts.lease, None)  # net-conf.json is judged by its own check
        if "type" not in fconf.delegate and facts.backend is not None:
            doc["type"] = facts.backend.delegate_type()
    except CniError as err:
        facts.conf_problem = Problem(f"{facts.conf_path}: {err.msg}", err.details)
        return None
    facts.delegate_type = doc["type"]
    return doc


def _validate_delegate(facts: Facts, doc: dict, platform: str, cwd: str) -> None:
    import importlib

    from plugins.cni.errors import CniError
    from plugins.ipam_host_local.config import default_data_dir
    from plugins.winnet.lifecycle import Lifecycle
    if facts.delegate_type not in FLAVORS:
        facts.conf_problem = Problem(f"{facts.conf_path}: plugin type {facts.delegate_type!r} is not a wincni plugin",
                                     f"use type flannel, win-bridge or win-overlay ({', '.join(FLAVORS)})")
        return
    flavor = importlib.import_module(FLAVORS[facts.delegate_type]).FLAVOR
    try:
        _, facts.netconf = Lifecycle(flavor).load(types.SimpleNamespace(conf=doc, command="ADD"))
    except CniError as err:
        facts.conf_problem = Problem(f"{facts.conf_path}: {err.msg}", err.details)
        return
    ipam = facts.netconf.ipam if isinstance(facts.netconf.ipam, dict) else {}
    data_dir = ipam.get("dataDir") if isinstance(ipam.get("dataDir"), str) else default_data_dir(platform, cwd)
    facts.ipam_dir = (ntpath if platform == "win32" else os.path).join(data_dir, facts.name)
    facts.flavor = flavor


def _flavor_policies(flavor: Any, facts: Facts) -> list[dict]:
    """The policies the plugin would hand HNS, automatic ones included, once the network is known."""
    user = [p for p in facts.netconf.policies if isinstance(p, dict)]
    if facts.network is None:
        return user
    return flavor.automatic_policies(user, facts.netconf, facts.network, (), "v1")


def _hns(facts: Facts, env: Mapping[str, str]) -> None:
    from libhns.client import HnsClient
    from libhns.errors import EnvError, HnsError
    try:
        client = HnsClient.from_env(env)
        facts.hns_version = client.version()
        facts.features = client.features()
        if facts.name:
            facts.network = client.get_network_by_name(facts.name)
        if facts.network is not None:
            facts.endpoints = [(ep.name or "", tuple(ep.ip_addresses)) for ep in client.list_endpoints(facts.network.id)]
    except EnvError as err:
        facts.hns_problem = Problem(f"cannot query HNS: {err}", "fix or unset the variable")
        return
    except (HnsError, OSError) as err:
        facts.hns_problem = Problem(f"cannot query HNS: {err}", "is the hns service running? (Get-Service hns)")
        return


def _source_vip(facts: Facts) -> None:
    raw = _read(facts.source_vip_path)
    if isinstance(raw, Problem):
        if not os.path.exists(facts.source_vip_path):
            return
        facts.source_vip_problem = raw
        return
    try:
        doc = json.loads(raw.decode("utf-8-sig"))
        ip4 = get_ci(doc, "ip4") or {}
        found = [get_ci(ip4, "ip")] if isinstance(ip4, dict) and get_ci(ip4, "ip") else []
        found += [get_ci(e, "address") for e in get_ci(doc, "ips") or () if isinstance(e, dict) and get_ci(e, "address")]
        facts.source_vip = tuple(str(a).split("/")[0] for a in found)
    except (ValueError, UnicodeDecodeError, AttributeError, TypeError) as err:
        facts.source_vip_problem = Problem(f"{facts.source_vip_path} is not a CNI result: {err}",
                                           "delete it and restart kube-proxy; it writes a fresh one")


def _store(facts: Facts, platform: str) -> None:
    from plugins.ipam_host_local.store import open_store
    if not facts.ipam_dir or not os.path.isdir(facts.ipam_dir):
        facts.reservations = [] if facts.ipam_dir else None
        return
    try:
        with open_store(facts.ipam_dir, platform) as store:
            facts.reservations = [(str(ip), owner.container_id if owner else "") for ip, owner in store.allocations()]
    except OSError as err:
        facts.store_problem = Problem(f"cannot read host-local's store {facts.ipam_dir}: {err}",
                                      "run the doctor as the user the kubelet runs as (Administrator)")


def _listdir(path: str) -> frozenset[str] | None:
    try:
        return frozenset(os.listdir(path))
    except OSError:
        return None


def _read(path: str) -> bytes | Problem:
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        return Problem(f"{path} does not exist", "")
    except OSError as err:
        return Problem(f"cannot read {path}: {err.strerror or err}", "")
