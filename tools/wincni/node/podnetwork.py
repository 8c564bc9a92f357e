"""The pods' network as the plugins themselves read it: the CNI config the runtime picks, flannel's delegate and lease, the endpoint plugin's config, its policies."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from basics.inputfile import Input
from basics.jsonci import get_ci
from plugins.registry import ENDPOINT_PLUGINS, flavor_module
from tools.wincni.node.paths import node_path
from tools.wincni.node.source import LIVE, LiveNode, Problem, quoted


def find_conf(path: str, source: LiveNode = LIVE, platform: str = "") -> str:
    """A directory means the runtime's pick: the first ``*.conf``/``*.conflist``/``*.json`` in
    lexical order (``dir/*.conf`` when there is none). ``platform``: the node's, whose paths these
    are (a bundle of a Windows node replays anywhere)."""
    names = source.configs(path)
    if names is None:
        return path
    return node_path(platform).join(path, names[0] if names else NO_CONF)


NO_CONF = "*.conf"


def first_plugin(conf: dict) -> dict:
    """A conflist's first plugin (the one doing the networking) with the list's name and version;
    a single-plugin config as it is."""
    if not isinstance(get_ci(conf, "plugins"), list):
        return conf
    first = conf["plugins"][0] if conf["plugins"] and isinstance(conf["plugins"][0], dict) else {}
    return {"name": conf.get("name"), "cniVersion": conf.get("cniVersion"), **first}


def read_conf(path: str, given: str, source: LiveNode = LIVE, platform: str = "") -> tuple[dict | None, Problem | None]:
    """The CNI config the runtime would use (``first_plugin`` of a conflist), with its name checked;
    ``given`` is --cni-conf as passed (a file or the folder ``path`` was picked from)."""
    from plugins.cni.config import check_name, decode
    from plugins.cni.errors import CniError
    from plugins.cni.skel import MAX_STDIN

    if not source.exists(given):
        return None, Problem(
            f"--cni-conf {given} does not exist",
            "pass --cni-conf with the pods' CNI config file, "
            "or the folder the runtime loads it from (containerd's config.toml conf_dir, where "
            "wincni install writes 10-flannel.conflist)",
        )
    if node_path(platform).basename(path) == NO_CONF and node_path(platform).dirname(path) == given:
        return None, Problem(
            f"{given} holds no *.conf, *.conflist or *.json file: pods get no network",
            f"run wincni install (it writes {os.path.join(given, '10-flannel.conflist')}), "
            "or pass --cni-conf with the folder or file that holds the config",
        )
    found = source.read("--cni-conf", path, MAX_STDIN)
    if not isinstance(found, Input):
        return None, Problem(
            f"CNI config: {found.message if found else f'{path} does not exist'}",
            "run the doctor as the user the runtime runs as "
            "(Administrator), or pass --cni-conf with a config you can read",
        )
    try:
        conf = first_plugin(decode(found.data))
        check_name(conf)
    except CniError as err:
        return None, quoted(Problem(f"{path}: {err.msg}", err.details), "--cni-conf", found)
    return conf, None


def flannel_conf(path: str, conf: dict, platform: str, cwd: str) -> tuple[Any, Problem | None]:
    from plugins.cni.errors import CniError
    from plugins.flannel.config import FlannelConf

    try:
        return FlannelConf.from_conf(conf, platform, cwd), None
    except CniError as err:
        return None, Problem(f"{path}: {err.msg}", err.details)


def read_backend(path: str, source: LiveNode = LIVE) -> tuple[Any, Problem | None]:
    """flanneld's net-conf.json as flannel parses it; None when it does not exist."""
    from plugins.cni.errors import CniError
    from plugins.flannel import netconf

    found = source.read("--net-conf", path, netconf.MAX_NET_CONF)
    if not isinstance(found, Input):
        return None, found
    try:
        return netconf.parse(found.data, path), None
    except CniError as err:
        return None, quoted(Problem(err.msg, err.details), "--net-conf", found)


def read_lease(path: str, plugin: str, source: LiveNode = LIVE) -> tuple[Any, Problem | None]:
    """flanneld's subnet.env as flannel parses it; without flannel, none is needed."""
    from plugins.flannel import subnet_env

    found = source.read("--subnet-env", path, subnet_env.MAX_LEASE)
    if isinstance(found, Problem):
        return None, found
    if found is None:
        if plugin != "flannel":
            return None, None  # a win-bridge/win-overlay config without flannel (start.ps1 style) needs no lease
        reason = f"{path} does not exist"
    else:
        try:
            return subnet_env.decode(found.data, path), None
        except subnet_env.LeaseError as err:
            reason = err.reason
    problem = Problem(
        reason,
        "flanneld writes it once it has a lease and the HNS network: check "
        'that flanneld runs and its log ("Waiting for the Network to be created")',
    )
    return None, quoted(problem, "--subnet-env", found)


def delegate_conf(
    path: str, conf: dict, fconf: Any, lease: Any, backend: Any
) -> tuple[str, dict | None, Problem | None]:
    """(the HNS-facing plugin, the config it runs with, a problem): flannel's delegate as
    flannel builds it, or the config itself."""
    from plugins.cni.errors import CniError

    if fconf is None:
        return str(conf.get("type") or ""), conf, None
    if lease is None:
        return fconf.delegate.get("type") or "", None, None
    try:
        doc = flannel_delegate(fconf, lease, backend)
    except CniError as err:
        return fconf.delegate.get("type") or "", None, Problem(f"{path}: {err.msg}", err.details)
    return doc["type"], doc, None


def flannel_delegate(fconf: Any, lease: Any, backend: Any) -> dict:
    """The delegate flannel builds, net-conf.json's rules left to the judge (``judge.net_conf``),
    so install and the doctor say the same about them; a type the config leaves out is the
    backend's, as flannel makes it."""
    from plugins.flannel import delegate

    doc = delegate.build(fconf, lease, None)
    if "type" not in fconf.delegate and backend is not None:
        doc["type"] = backend.delegate_type()
    return doc


def flavor_of(delegate_type: str) -> Any:
    """The ``Flavor`` of one of our endpoint plugins; None for any other type."""
    import importlib

    return importlib.import_module(flavor_module(delegate_type)).FLAVOR if delegate_type in ENDPOINT_PLUGINS else None


def endpoint_conf(
    path: str, doc: dict, delegate_type: str, flavor: Any, name: str, platform: str, cwd: str
) -> tuple[Any, str, Problem | None]:
    """(the NetConf the plugin would load, host-local's store directory, a problem)."""
    from plugins.cni.errors import CniError
    from plugins.ipam_host_local.config import default_data_dir
    from plugins.winnet.config import load

    if flavor is None:
        return (
            None,
            "",
            Problem(
                f"{path}: plugin type {delegate_type!r} is not a wincni plugin",
                f"use type flannel, {' or '.join(ENDPOINT_PLUGINS)}",
            ),
        )
    try:
        _, netconf = load(doc, "ADD", flavor.schema())
    except CniError as err:
        return None, "", Problem(f"{path}: {err.msg}", err.details)
    ipam = netconf.ipam if isinstance(netconf.ipam, dict) else {}
    data_dir = ipam.get("dataDir") if isinstance(ipam.get("dataDir"), str) else default_data_dir(platform, cwd)
    return netconf, node_path(platform).join(data_dir, name), None


def endpoint_policies(
    path: str, flavor: Any, netconf: Any, network: Any, features: Any
) -> tuple[tuple[dict, ...], Problem | None]:
    """(the policies a pod endpoint of this config gets, as the lifecycle builds them, a problem).
    No pod: no port mappings and no addresses (so no loopback DSR); without the network, no
    automatic policies; without HNS's features, every feature counts as there. The API is the one
    a pod without a namespace GUID gets, unless the config names one."""
    from plugins.cni.errors import CniError
    from plugins.winnet import policies
    from plugins.winnet.hnsapi import choose_api
    from plugins.winnet.policies import V1, V2

    form = V2 if choose_api(netconf.api_version, "") == 2 else V1
    has_feature = (lambda name: True) if features is None else (lambda name: bool(getattr(features, name)))
    try:
        return tuple(policies.endpoint_policies(flavor, netconf, network, (), (), form, has_feature)), None
    except CniError as err:
        return (), Problem(f"{path}: {err.msg}", err.details)


@dataclass(frozen=True)
class PodNetwork:
    """The pods' network as the plugins would run it, read once: the config the runtime picks,
    flannel's (its lease and net-conf.json, the delegate it builds), the endpoint plugin's config
    and host-local's store folder. A ``*_problem`` says why a part could not be read."""

    conf_path: str
    conf: dict | None = None
    conf_problem: Problem | None = None
    plugin: str = ""  # the config's "type" (flannel, win-bridge, win-overlay)
    name: str = ""  # the config's "name" = the HNS network
    fconf: Any = None  # plugins.flannel.config.FlannelConf, when the plugin is flannel
    subnet_env_path: str = ""
    lease: Any = None  # plugins.flannel.subnet_env.Lease
    lease_problem: Problem | None = None
    net_conf_path: str = ""
    backend: Any = None  # plugins.flannel.netconf.Backend
    backend_problem: Problem | None = None
    delegate_type: str = ""  # the plugin that talks to HNS
    flavor: Any = None  # its plugins.winnet.lifecycle.Flavor, when it is one of ours
    netconf: Any = None  # plugins.winnet.config.NetConf of the effective endpoint config
    ipam_dir: str = ""  # host-local's store folder for this network

    @property
    def flannel_dir(self) -> str:
        """flannel's dataDir (its saved delegate configs); "" without flannel."""
        return getattr(self.fconf, "data_dir", "") or ""


def read_pods(
    cni_conf: str,
    subnet_env: str,
    net_conf: str,
    platform: str,
    cwd: str,
    source: LiveNode = LIVE,
    subnet_env_given: bool = False,
    net_conf_given: bool = False,
) -> PodNetwork:
    """The ``PodNetwork`` of the config ``cni_conf`` names (a file, or the folder the runtime picks
    from), each read in the order it needs the one before. flannel's own subnetFile and netConf
    win over ``subnet_env`` / ``net_conf`` unless the operator named those (``*_given``)."""
    conf_path = find_conf(cni_conf, source, platform)
    conf, conf_problem = read_conf(conf_path, cni_conf, source, platform)
    plugin = str(conf.get("type") or "") if conf is not None else ""
    fconf, subnet_env_path, net_conf_path = None, subnet_env, net_conf
    if conf is not None and plugin == "flannel":
        fconf, conf_problem = flannel_conf(conf_path, conf, platform, cwd)
        if fconf is not None:  # the files flannel itself will open, unless the operator points elsewhere
            subnet_env_path = subnet_env if subnet_env_given else fconf.subnet_file
            net_conf_path = net_conf if net_conf_given else fconf.net_conf
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
    return PodNetwork(
        conf_path,
        conf,
        conf_problem,
        plugin,
        name,
        fconf,
        subnet_env_path,
        lease,
        lease_problem,
        net_conf_path,
        backend,
        backend_problem,
        delegate_type,
        flavor,
        netconf,
        ipam_dir,
    )
