"""Gathering the node's facts for ``wincni doctor``: the imperative shell, every read in one place.

Every file is read by the parser the plugins themselves use, and every failure becomes a
``Problem`` (message + fix) in the facts, never an exception: the checks decide what it means.
"""

from __future__ import annotations

import json
import ntpath
import os
from dataclasses import dataclass, replace
from typing import Any, Mapping

from basics.inputfile import Input
from basics.jsonci import get_ci
from libhns.backend import simulated_on_windows
from plugins.registry import ENDPOINT_PLUGINS, flavor_module

# Where a Windows node keeps things (the Kubernetes Windows guide, flanneld, kube-proxy); off
# Windows the Linux places, so the same flags drive the simulator.
# The CNI folders are containerd.locate's to say.
WINDOWS_PATHS = {
    "subnet_env": r"C:\run\flannel\subnet.env",
    "net_conf": r"C:\etc\kube-flannel\net-conf.json",
    "source_vip": r"C:\k\SourceVip.json",
}
POSIX_PATHS = {
    "subnet_env": "/run/flannel/subnet.env",
    "net_conf": "/etc/kube-flannel/net-conf.json",
    "source_vip": "/var/lib/kube-proxy/SourceVip.json",
}


@dataclass(frozen=True)
class Problem:
    message: str
    fix: str


@dataclass(frozen=True)
class Facts:
    """What the checks look at, built once by ``gather`` (or by hand in a test); ``None`` with a
    ``*_problem`` means "could not be read"."""

    conf_path: str = ""
    conf_problem: Problem | None = None
    plugin: str = ""  # the config's "type" (flannel, win-bridge, win-overlay)
    name: str = ""  # the config's "name" = the HNS network
    delegate_type: str = ""  # the plugin that talks to HNS
    netconf: Any = None  # plugins.winnet.config.NetConf of the effective win-bridge/win-overlay config
    flavor: Any = None  # plugins.winnet.lifecycle.Flavor of the delegate plugin, when it is one of ours (even if its config does not load)
    ipam_dir: str = ""  # host-local's store directory for this network
    flannel_dir: str = ""  # flannel's dataDir (its saved delegate configs); "" without flannel
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
    endpoints: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (name, IPs) of the local endpoints on the network
    stale_endpoints: tuple[tuple[str, str, tuple[str, ...]], ...] = ()  # ours, no live sandbox: (name, ID, IPs)
    policies: tuple[dict, ...] = ()  # the endpoint policies the plugin would apply (winnet.policies.endpoint_policies)
    source_vip_path: str = ""
    source_vip: tuple[str, ...] | None = None  # its addresses; None when absent
    source_vip_problem: Problem | None = None
    reservations: tuple[tuple[str, str], ...] | None = None  # host-local (IP, container ID)
    store_problem: Problem | None = None
    reach: str = ""
    simulated: bool = False  # the plugins would run on the HNS simulator on Windows
    open_dirs: tuple[tuple[str, str, str], ...] = ()  # (what, folder, who else may write it)
    bin_audit: tuple[str, ...] = ()  # what in the bin dir no administrator vouches for (trust.audit)
    young: frozenset[str] = frozenset()  # reserved too recently to call stale: an ADD may be in flight
    windows: bool = False  # the node's platform: how a fix command is quoted and named
    tools: str = ""  # the folder of the running frozen wincni (hnsctl beside it); "" = found on PATH
    installed_build: str = ""  # the build the bin dir's install manifest names; "" = none (build_problem says why)
    build_problem: str = ""
    running_build: str = ""  # this wincni's (``running_build``)
    install: tuple[str, ...] | None = (
        None  # the arguments of the wincni install that laid the config (() unrecorded); None: nobody manages it
    )
    cni_version: str = ""  # the config's cniVersion
    containerd_version: int | None = None  # config.toml's (containerd.CniDirs.version); None: not read
    status: tuple[int, str, str] | None = (
        None  # the plugin's STATUS answer (code, msg, details), 0 ready; None: not asked
    )
    replayed: str = ""  # the bundle these facts were read from ("" on the live node)
    inventory: Any = None  # Inventory: every HNS object of the node, by kind; None: not read
    sandboxes: tuple | None = None  # sandboxes.PodSandbox of each recorded reservation; None: not read


@dataclass(frozen=True)
class Inventory:
    """Every HNS object of the node, not only the pods' network's, for the metrics and the checks
    of kube-proxy's state: V2 networks and load balancers, and V1 endpoints (the view that also
    says which sandbox holds each; ``is_remote`` marks another node's pod). ``policy_lists``: the
    V1 documents of ``GET /policylists/``, None where HNS does not serve them."""

    networks: tuple = ()
    endpoints: tuple = ()
    load_balancers: tuple = ()
    policy_lists: tuple | None = None

    @property
    def remote_endpoints(self) -> tuple:
        return tuple(e for e in self.endpoints if e.is_remote)

    @property
    def unreferenced_remote_endpoints(self) -> tuple:
        """Remote endpoints no load balancer lists (networkhealth.ps1's StaleRemoteEndpoints):
        kube-proxy deletes one when its last load balancer goes, so these were left behind. On
        overlay kube-proxy also makes one for each Service VIP, which that Service's load
        balancer serves as a frontend: that one is in use, and so it is before the Service has a
        load balancer (none while no endpoint of it is ready): it holds this node's provider
        address, and kube-proxy deletes it with the Service."""
        from libhns.objects import same_id

        used = [e for lb in self.load_balancers for e in lb.backend_ids]
        vips = {v for lb in self.load_balancers for v in lb.vips}
        own = [(n.id, n.management_ip) for n in self.networks if n.management_ip]
        return tuple(
            r
            for r in self.remote_endpoints
            if not any(same_id(r.id, e) for e in used)
            and not vips.intersection(r.ip_addresses)
            and not any(same_id(r.network_id, id_) and r.provider_address == pa for id_, pa in own)
        )


class LiveNode:
    """Where ``gather`` reads on the node itself: the files the flags name (``flagfile.read``),
    HNS through the backend ``LIBHNS_BACKEND`` picks, host-local's store through its own reader.
    ``replay.Bundle`` answers the same questions from a bundle, and says ``live`` False for the
    reads only the node can answer (who may write its folders, the plugins' STATUS, …)."""

    live = True
    replayed = ""

    def configs(self, path: str) -> list[str] | None:
        """The CNI configs in the folder ``path``, sorted; None when it is not a folder."""
        if not os.path.isdir(path):
            return None
        return sorted(n for n in os.listdir(path) if n.endswith(CONF_SUFFIXES))

    def exists(self, path: str) -> bool:
        return os.path.lexists(path)

    def read(self, flag: str, path: str, cap: int) -> Input | Problem | None:
        return _input(flag, path, cap)

    def clients(self, env: Mapping[str, str]) -> tuple[Any, Any]:
        from libhns.client import open_clients

        return open_clients(env)

    def store(
        self, ipam_dir: str, platform: str
    ) -> tuple[tuple[tuple[str, str], ...] | None, dict[str, float], Problem | None]:
        return read_store(ipam_dir, platform)

    def sandbox_records(self, ipam_dir: str, platform: str) -> list[tuple[str, str, str, str]] | None:
        """host-local's sandbox records (IP, container ID, ifname, CNI_NETNS) of reservations that
        hold them: none before the first ADD made the store's folder (as ``read_store``); None
        when no store is named. Read without the store's lock: each record is renamed into place
        whole, and one that does not match its reservation is left out."""
        from plugins.ipam_host_local.store import DiskStore

        if not ipam_dir:
            return None
        if not os.path.isdir(ipam_dir):
            return []
        found = DiskStore(ipam_dir, platform).sandboxes()
        return sorted((ip, owner.container_id, owner.ifname, netns) for ip, (owner, netns) in found.items())


LIVE = LiveNode()
CONF_SUFFIXES = (".conf", ".conflist", ".json")


def default_paths(platform: str) -> dict[str, str]:
    return dict(WINDOWS_PATHS if platform == "win32" else POSIX_PATHS)


def find_conf(path: str, source: LiveNode = LIVE, platform: str = "") -> str:
    """A directory means the runtime's pick: the first ``*.conf``/``*.conflist``/``*.json`` in
    lexical order (``dir/*.conf`` when there is none). ``platform``: the node's, whose paths these
    are (a bundle of a Windows node replays anywhere)."""
    names = source.configs(path)
    if names is None:
        return path
    return node_path(platform).join(path, names[0] if names else NO_CONF)


def node_path(platform: str) -> Any:
    """The path module of the node ``platform`` names (``ntpath`` for Windows, else this OS's)."""
    return ntpath if platform == "win32" else os.path


NO_CONF = "*.conf"


def first_plugin(conf: dict) -> dict:
    """A conflist's first plugin (the one doing the networking) with the list's name and version;
    a single-plugin config as it is."""
    if not isinstance(get_ci(conf, "plugins"), list):
        return conf
    first = conf["plugins"][0] if conf["plugins"] and isinstance(conf["plugins"][0], dict) else {}
    return {"name": conf.get("name"), "cniVersion": conf.get("cniVersion"), **first}


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


def read_live(
    opts: Mapping[str, Any],
    conf: dict | None,
    conf_path: str,
    ipam_dir: str,
    fconf: Any,
    plugins: tuple[str, str],
    env: Mapping[str, str],
    platform: str,
) -> dict[str, Any]:
    """The facts only the node itself can give, as Facts fields: who may write its folders, what
    its bin dir holds and who laid it, the plugins' STATUS answer, the runtime's environment."""
    quick = bool(opts.get("quick"))
    bin_files = _listdir(opts["cni_bin_dir"])
    return {
        "open_dirs": read_open_dirs(
            {
                "CNI bin dir": opts["cni_bin_dir"],
                "CNI conf dir": os.path.dirname(conf_path),
                "IPAM data dir": os.path.dirname(ipam_dir) if ipam_dir else "",
                "flannel data dir": getattr(fconf, "data_dir", ""),
            }
        ),
        "bin_files": bin_files,
        "status": read_status(conf, opts["cni_bin_dir"], env, platform) if conf is not None and not quick else None,
        "simulated": simulated_on_windows(env, platform),
        "tools": frozen_dir(),
        "bin_audit": read_bin_audit(
            opts["cni_bin_dir"], bin_files, os.path.dirname(conf_path), *plugins, digests=not quick
        ),
        **(read_install(opts["cni_bin_dir"], conf_path) if not quick else {}),  # reading it may fix its mode
        "running_build": running_build(),
    }


#: The version STATUS is asked at whatever the config says: no earlier one has the command.
STATUS_VERSION = "1.1.0"


def read_status(conf: dict, bin_dir: str, env: Mapping[str, str], platform: str) -> tuple[int, str, str] | None:
    """What the config's plugin answers CNI STATUS now, as the runtime would get it: run in-process
    through the plugin's own ``skel``, its delegates found in ``bin_dir``; (code, msg, details),
    code 0 when ready; None for a plugin not ours. STATUS writes and locks nothing; the config's
    ``logFile`` is left out, so the doctor appends to no debug log."""
    import importlib
    import io

    from basics import jsontext
    from plugins.cni import skel
    from plugins.registry import PLUGINS, entry_module

    doc = {k: v for k, v in first_plugin(conf).items() if k != "logFile"}
    if doc.get("type") not in PLUGINS:
        return None
    if isinstance(doc.get("delegate"), dict):
        doc["delegate"] = {k: v for k, v in doc["delegate"].items() if k != "logFile"}
    doc["cniVersion"] = STATUS_VERSION
    plugin = importlib.import_module(entry_module(doc["type"])).PLUGIN
    out = io.StringIO()
    run_env = {**env, "CNI_COMMAND": "STATUS", "CNI_PATH": bin_dir}
    if skel.run(plugin, run_env, io.BytesIO(jsontext.dumps(doc).encode()), out, io.StringIO(), platform) == 0:
        return (0, "", "")
    try:
        err = json.loads(out.getvalue())
        return (int(err["code"]), str(err.get("msg", "")), str(err.get("details", "") or ""))
    except (ValueError, KeyError, TypeError):
        return (999, f"STATUS printed no CNI error: {out.getvalue()[:200]!r}", "")


def running_build() -> str:
    """This wincni's build ID; from a source checkout its version and commit, the start of the ID
    a bundle built from it carries (``specs/wincni.plugin``)."""
    from plugins.cni.buildinfo import VERSION, build, commit

    return build() or "-".join(x for x in (VERSION, commit()[:12]) if x)


def frozen_dir() -> str:
    """The folder of the running frozen wincni (the package it lays, the programs the fix
    commands run); "" from source (they are then found on PATH)."""
    import sys

    return os.path.dirname(os.path.abspath(sys.executable)) if getattr(sys, "frozen", False) else ""


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
        return None, _quoted(Problem(f"{path}: {err.msg}", err.details), "--cni-conf", found)
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
        return None, _quoted(Problem(err.msg, err.details), "--net-conf", found)


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
    return None, _quoted(problem, "--subnet-env", found)


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


def read_bin_audit(
    bin_dir: str, files: frozenset[str] | None, conf_dir: str, *plugins: str, digests: bool = True
) -> tuple[str, ...]:
    """``files``: the bin dir's listing, already read for ``Facts.bin_files``. ``digests`` off
    (--quick, the readiness probe every 30 s): who may write the folder and the launchers, without
    hashing every contents folder (16 MiB each) against the manifest."""
    from .trust import audit

    names = [n for p in dict.fromkeys((*plugins, "host-local")) if p for n in (p, f"{p}.exe") if n in (files or ())]
    return audit(bin_dir, conf_dir, names, digests=digests)


def read_install(bin_dir: str, conf_path: str) -> dict:
    """What ``wincni install``'s manifest in ``bin_dir`` (believed as install believes it) says of
    this node, as Facts fields: the build it laid (else ``build_problem``, why none can be named)
    and, when it names ``conf_path``, how install ran (``install``: its arguments, () when the
    manifest does not record them; left None when no install manages the config, which the
    operator then edits where it is)."""
    from . import layout
    from .disk import Disk
    from .trust import read_manifest

    disk, path = Disk(), os.path.join(bin_dir, layout.MANIFEST)
    if not disk.exists(path):
        return {"build_problem": f"no {layout.MANIFEST} in {bin_dir}: the plugins were not laid by wincni install"}
    manifest, why = read_manifest(disk, path, os.path.dirname(conf_path), suspicious=False)
    found: dict = (
        {"installed_build": manifest.build} if manifest.build else {"build_problem": why or f"{path} names no build"}
    )
    if not why and manifest.conf and layout.same_file(manifest.conf, conf_path):
        found["install"] = manifest.install
    return found


def read_open_dirs(folders: Mapping[str, str]) -> tuple[tuple[str, str, str], ...]:
    """(what, folder, who else may write it) for each folder the plugins run from or trust that
    someone besides administrators may write (mode bits on Linux, the DACL on Windows)."""
    from basics.safefs import writable_by_others

    out = []
    for label, path in folders.items():
        try:
            who = writable_by_others(path) if path else None
        except OSError:
            who = None  # absent or unreadable: the other checks say so where it matters
        if who:
            out.append((label, path, who))
    return tuple(out)


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


def read_store(
    ipam_dir: str, platform: str
) -> tuple[tuple[tuple[str, str], ...] | None, dict[str, float], Problem | None]:
    """host-local's reservations (IP, container ID) for the network (None when unknown), and how
    many seconds ago each was made or renewed (``young_of`` says which an ADD may still own)."""
    import time

    from plugins.ipam_host_local.store import open_store

    if not ipam_dir or not os.path.isdir(ipam_dir):
        return (() if ipam_dir else None), {}, None
    try:
        with open_store(ipam_dir, platform) as store:
            found = tuple((str(ip), owner.container_id if owner else "") for ip, owner in store.allocations())
            now = time.time()
            return found, {ip: now - store.reserved_at(ip) for ip, _ in found}, None
    except OSError as err:
        return (
            None,
            {},
            Problem(
                f"cannot read host-local's store {ipam_dir}: {err}",
                "run the doctor as the user the runtime runs as (Administrator)",
            ),
        )


def read_sandboxes(source: LiveNode, env: Mapping[str, str], ipam_dir: str, platform: str) -> tuple | None:
    """Each recorded reservation's sandbox (``sandboxes.PodSandbox``) and whether it exists now
    (HNS's namespaces, HCS's compute systems); None without a store, or when its folder cannot be
    read (``read_store`` says why)."""
    from libhns.errors import EnvError, HnsError

    from .sandboxes import PodSandbox, exists, sandbox_of

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


def _listdir(path: str) -> frozenset[str] | None:
    try:
        return frozenset(os.listdir(path))
    except OSError:
        return None


def _input(flag: str, path: str, cap: int) -> Input | Problem | None:
    """The file ``path`` the flag names (``flagfile.read``: a FIFO, a device, a folder or another
    user's link is a problem naming the flag, never waited on); None when it does not exist."""
    from .flagfile import FlagFileError, read

    try:
        return read(flag, path, cap)
    except FlagFileError as err:
        return Problem(str(err), "")


def _quoted(problem: Problem, flag: str, found: Input | None) -> Problem:
    """``problem`` about the file ``found``, quoting nothing of it unless an administrator owns it."""
    from .flagfile import quote

    message = quote(problem.message, (flag, found))
    return problem if message == problem.message else Problem(message, "")
