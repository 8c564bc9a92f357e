"""``wincni doctor``'s checks: each a pure function of ``Facts`` -> ``Check``, so tests feed facts directly.

Address-space questions are ``addresses.AddressSet`` membership.
"""

from __future__ import annotations

import os
from typing import Any, Callable

from . import addresses
from .facts import Facts, Problem
from .verdict import FAIL, OK, SKIP, WARN, Check, command_line


def command(f: Facts, program: str, *args: str) -> str:
    """One command line for ``run``: ``command_line`` on the node ``f`` describes."""
    return command_line(f.windows, f.tools, program, *args)


def _no_config(f: Facts, id_: str) -> Check | None:
    """The check needs to know which config the pods use: not checked when it could not be read."""
    return _skipped(id_, "no CNI config") if f.conf_problem and not f.plugin else None


def _skipped(id_: str, needs: str, fix: str = "fix the failure above first") -> Check:
    return Check(id_, SKIP, f"not checked: {needs}", fix)


def _failed(id_: str, problem: Problem) -> Check:
    return Check(id_, FAIL, problem.message, problem.fix)


def config(f: Facts) -> Check:
    if f.conf_problem:
        return _failed("config", f.conf_problem)
    if f.netconf is None:
        return Check(
            "config",
            WARN,
            f"{f.conf_path}: flannel config valid; its delegate not checked (no subnet.env)",
            "see the subnet-env check",
        )
    return Check("config", OK, f"{f.conf_path}: {f.plugin} config {f.name!r} is valid (delegate {f.delegate_type})")


def plugins(f: Facts) -> Check:
    if f.bin_files is None:
        return Check(
            "plugins",
            FAIL,
            f"CNI bin dir {f.bin_dir} cannot be read",
            "pass --cni-bin-dir with the folder the runtime runs the plugins from (containerd's "
            "config.toml bin_dir, or bin_dirs on containerd 2.1+)",
        )
    if skipped := _no_config(f, "plugins"):
        return skipped
    wanted = [p for p in (f.plugin, f.delegate_type, "host-local") if p]
    missing = [p for p in dict.fromkeys(wanted) if p not in f.bin_files and f"{p}.exe" not in f.bin_files]
    if missing:
        return Check(
            "plugins",
            FAIL,
            f"{', '.join(missing)} not found in {f.bin_dir}",
            f"copy {', '.join(m + '.exe' for m in missing)} from the wincni bundle into {f.bin_dir}",
        )
    if f.bin_audit:
        return Check(
            "plugins",
            FAIL,
            "; ".join(f.bin_audit) + ": the runtime runs them as SYSTEM/root",
            f"wincni install --from <the release zip> --cni-bin-dir {f.bin_dir} --cni-conf-dir "
            f"{os.path.dirname(f.conf_path)} (it takes the folder over, removes what no administrator "
            "laid and replaces what it cannot vouch for)",
        )
    return Check("plugins", OK, f"{', '.join(dict.fromkeys(wanted))} present in {f.bin_dir}")


def hns_network(f: Facts) -> Check:
    if f.hns_problem:
        return _failed("hns-network", f.hns_problem)
    if not f.name:
        return _skipped("hns-network", "the config names no network")
    section = getattr(f.netconf, "network", None)
    if section is not None:
        standalone = _standalone(f, section)
        if standalone is not None:
            return standalone
    if f.network is None:
        return Check(
            "hns-network",
            FAIL,
            f"no HNS network named {f.name!r} (Get-HnsNetwork)",
            "restart flanneld: it creates the network only when it starts, so one an HNS restart dropped stays "
            'gone until then; if its log says "Waiting for the Network to be created", '
            f"check Backend.name in {f.net_conf_path} and the host adapter; or "
            + config_of(f).origin.edit('set "name" to the network flanneld made'),
        )
    types = f.flavor.network_types if f.flavor is not None else ()
    if types and not any(f.network.is_type(t) for t in types):
        return Check(
            "hns-network",
            FAIL,
            f"HNS network {f.name} is {f.network.network_type}; {f.delegate_type} needs {' or '.join(types)}",
            _retype(f),
        )
    mgmt = f.network.management_ip
    if f.delegate_type == "win-overlay" and not mgmt:
        return Check(
            "hns-network",
            FAIL,
            f"overlay network {f.name} has no ProviderAddress (management IP)",
            "HNS sets it from the host adapter's IP: give the adapter the node IP, then restart flanneld "
            "so it creates the network again",
        )
    return Check(
        "hns-network", OK, f"{f.name} is {f.network.network_type}" + (f", management IP {mgmt}" if mgmt else "")
    )


def _retype(f: Facts) -> str:
    """The side to change is the one the others disagree with: the config, unless net-conf.json's
    Backend.Type asks for its plugin too; then the network, made for another backend, is the odd one."""
    from plugins.flannel.netconf import DELEGATES

    config = config_of(f)
    wanted = DELEGATES.get(f.backend.type) if f.backend is not None else None
    if config.hns_fits and wanted != f.delegate_type:
        fit = config.hns_fits[0]
        return f"{fit} runs on {f.network.network_type} networks: " + config.origin.edit(
            f'set the delegate\'s "type" to "{fit}"', 'set the delegate\'s "type" to "__DELEGATE_TYPE__"'
        )
    return (
        f"flanneld made {f.name} for another backend: remove the HNS network (pods on it lose their network), then "
        f"restart flanneld so it creates the network {f.net_conf_path} asks for"
    )


def _standalone(f: Facts, section: Any) -> Check | None:
    """Standalone mode (a ``network`` section): a missing network is the first ADD's to create;
    an existing one must be what the section describes. None: judge it as usual."""
    from plugins.cni.errors import CniError
    from plugins.winnet.network import ipam_outside, mismatch, wanted_network

    try:
        wanted = wanted_network(section, f.name, f.flavor.network_types[0], f.flavor.ipv6)
    except CniError as err:
        return Check("hns-network", FAIL, f"the config's {err.msg}", err.details)
    outside = ipam_outside(wanted, f.netconf.ipam)
    if outside is not None:
        return Check("hns-network", FAIL, f"the config's {outside.msg}", outside.details)
    if f.network is None:
        return Check(
            "hns-network",
            OK,
            f"no HNS network {f.name!r} yet: the first ADD creates it "
            f"(standalone mode, {wanted.type} {', '.join(s.prefix for s in wanted.subnets)})",
        )
    problem = mismatch(wanted, f.network)
    if problem is not None:
        return Check("hns-network", FAIL, problem.msg, problem.details)
    return None


def subnet_env(f: Facts) -> Check:
    if f.lease_problem:
        return _failed("subnet-env", f.lease_problem)
    if skipped := _no_config(f, "subnet-env"):
        return skipped
    if f.lease is None:
        return Check(
            "subnet-env", OK, f"{f.subnet_env_path} absent: not needed by a {f.plugin or 'non-flannel'} config"
        )
    subnet = f.lease.subnet
    if f.network is None:
        return Check("subnet-env", OK, f"FLANNEL_SUBNET={subnet} (no HNS network to compare with)")
    hns = addresses.AddressSet(s.prefix for s in f.network.subnets)
    if subnet is None or (lease := addresses.network(str(subnet))) is None or lease not in hns:
        return Check(
            "subnet-env",
            FAIL,
            f"FLANNEL_SUBNET={subnet} is not inside HNS network {f.name}'s subnets "
            f"({', '.join(s.prefix for s in f.network.subnets) or 'none'})",
            f"the node got a new lease: remove the HNS network (pods on it lose their network), then restart "
            f"flanneld so it creates {f.name} with the new subnet",
            command(f, "hnsctl", "network", "delete", f.network.id),
        )
    return _earlier_lease(f, hns) or Check(
        "subnet-env", OK, f"FLANNEL_SUBNET={subnet} lies inside HNS network {f.name}"
    )


def _earlier_lease(f: Facts, hns: addresses.AddressSet) -> Check | None:
    """Pods holding addresses of an earlier lease: flanneld deletes its network when it comes back
    with another subnet, and HNS deletes the pods' endpoints with it, so those pods have no network
    and their addresses stay reserved until their DEL. None when there are none (or the store was
    not read: ``--quick``)."""
    from plugins.cni import ownership

    outside = [
        (ip, cid)
        for ip, cid in f.reservations or ()
        if not ownership.pinned(cid) and (a := addresses.address(ip)) is not None and a not in hns
    ]
    if not outside:
        return None
    pods = sorted({cid for _, cid in outside})
    return Check(
        "subnet-env",
        FAIL,
        f"FLANNEL_SUBNET={f.lease.subnet}, but {len(pods)} pod(s) hold addresses of an earlier lease, outside "
        f"HNS network {f.name}: " + ", ".join(f"{ip} ({cid or '?'})" for ip, cid in sorted(outside)),
        f"their endpoints went with the old network, so they have no network: remove their pod sandboxes "
        f"(crictl rmp -f {' '.join(pods)}); their DEL releases the addresses and the kubelet starts them "
        f"again with addresses of {f.lease.subnet}",
    )


def config_of(f: Facts) -> Any:
    """The judge's view (``judge.Config``) of the config the facts hold, weighed against this
    node: flanneld's lease, the HNS network of its name, the install that manages it."""
    from plugins.registry import ENDPOINT_PLUGINS

    from . import judge
    from .facts import flavor_of

    cluster = f.lease.first_ipv4_network if f.lease is not None else None
    network = f.network
    return judge.Config(
        origin=judge.Origin(f.conf_path, f.install, f.windows, f.tools),
        name=f.name,
        delegate_type=f.delegate_type,
        policies=f.policies,
        backend=f.backend,
        cluster=str(cluster) if cluster is not None else "",
        management_ip=(network.management_ip or "") if network is not None else "",
        hns_type=network.network_type if network is not None else "",
        hns_fits=tuple(
            p for p in ENDPOINT_PLUGINS if network is not None and any(map(network.is_type, flavor_of(p).network_types))
        ),
    )


def exceptions(f: Facts) -> Check:
    from . import judge

    if f.netconf is None:
        return _skipped("exceptions", "no valid delegate config")
    return judge.exceptions(config_of(f))


def reach(f: Facts) -> Check | None:
    from . import judge

    if not f.reach:
        return None
    ip = addresses.address(f.reach)  # the parser took only an IP address
    if f.netconf is None:
        return _skipped("reach", "no valid delegate config")
    config = config_of(f)
    internal = addresses.AddressSet(c for _, c in judge.must_not_nat(config))
    if ip in judge.excepted_set(config.policies):
        if ip in internal:
            return Check("reach", OK, f"traffic to {ip} keeps the pod IP (cluster-internal)")
        return Check(
            "reach",
            FAIL,
            f"traffic to {ip} is not SNAT'ed: it leaves with the pod IP, which nothing outside the cluster routes back",
            config.origin.edit(f"remove the entry covering {ip} from the OutBoundNAT policy's ExceptionList"),
        )
    if ip in internal:
        return Check(
            "reach",
            FAIL,
            f"traffic to {ip} (cluster-internal) is SNAT'ed to the node IP",
            config.origin.edit(f"add a range covering {ip} to the OutBoundNAT policy's ExceptionList"),
        )
    return Check("reach", OK, f"traffic to {ip} is SNAT'ed to the node IP (right for destinations outside the cluster)")


def net_conf(f: Facts) -> Check:
    from . import judge

    if f.backend_problem:
        return _failed("net-conf", f.backend_problem)
    if skipped := _no_config(f, "net-conf"):
        return skipped
    if f.backend is None:
        status = WARN if f.plugin == "flannel" else OK
        origin = config_of(f).origin
        return Check(
            "net-conf",
            status,
            f"{f.net_conf_path} not found: Backend name/type not cross-checked",
            "pass --net-conf with flanneld's net-conf.json (the kube-flannel-cfg ConfigMap's)"
            + ("" if origin.renders_itself else ", or " + origin.edit('set "netConf" to where it is'))
            if status == WARN
            else "",
        )
    return judge.net_conf(config_of(f))


def vxlan(f: Facts) -> Check:
    if skipped := _no_config(f, "vxlan"):
        return skipped
    if not f.delegate_type:
        return _skipped("vxlan", "no delegate config")
    if f.delegate_type != "win-overlay":
        return Check("vxlan", OK, f"no VXLAN to check: the delegate is {f.delegate_type}")
    if f.netconf is None or f.flavor is None:
        return _skipped("vxlan", "no valid delegate config")
    if f.network is None:
        return _skipped("vxlan", "no HNS network")
    problems = f.flavor.network_problems(f.network)
    if problems:
        return Check(
            "vxlan",
            FAIL,
            "; ".join(problems),
            f"remove the network, then restart flanneld (after fixing {f.net_conf_path}: see net-conf) so "
            "it creates the network again",
            command(f, "hnsctl", "network", "delete", f.network.id),
        )
    peers = (
        "Linux flannel peers agree"
        if f.backend is not None and not f.backend.unset
        else "Linux flannel peers agree only if net-conf.json sets them (see net-conf)"
    )
    return Check("vxlan", OK, f"VNI {f.network.vsid}, UDP port {f.network.vxlan_port or 4789}: {peers}")


def _sourcevip(f: Facts, status: str, problem: str) -> Check:
    """What ``wincni sourcevip`` mends: it reserves an address of the current subnet in host-local's
    store for the node and writes the file kube-proxy's start reads (kube-proxy only reads it at start)."""
    return Check(
        "source-vip",
        status,
        problem,
        f"then restart kube-proxy so it starts with the address {f.source_vip_path} holds",
        command(f, "wincni", "sourcevip", "--cni-conf", f.conf_path, "--out", f.source_vip_path),
    )


def source_vip(f: Facts) -> Check:
    if f.source_vip_problem:
        return _sourcevip(f, FAIL, f.source_vip_problem.message)
    if f.source_vip is None:
        if skipped := _no_config(f, "source-vip"):
            return skipped
        if f.delegate_type == "win-overlay":
            return _sourcevip(f, WARN, f"{f.source_vip_path} not found; kube-proxy (overlay) needs a source VIP")
        return Check("source-vip", OK, f"{f.source_vip_path} not present (only overlay kube-proxy uses it)")
    if f.lease is None or f.lease.subnet is None:
        return _skipped("source-vip", "no FLANNEL_SUBNET")
    subnet = addresses.AddressSet([str(f.lease.subnet)])
    outside = [a for a in f.source_vip if (ip := addresses.address(a)) is None or ip not in subnet]
    if outside or not f.source_vip:
        return _sourcevip(
            f,
            FAIL,
            f"{f.source_vip_path} holds {', '.join(outside) or 'no address'}, outside "
            f"FLANNEL_SUBNET {f.lease.subnet} (left from an earlier pod subnet)",
        )
    inside = f"source VIP {', '.join(f.source_vip)} lies inside {f.lease.subnet}"
    return _source_vip_reserved(f, inside) or Check("source-vip", OK, inside)


def _source_vip_reserved(f: Facts, inside: str) -> Check | None:
    """What ``wincni sourcevip`` guarantees: host-local holds the address for the node, so no pod
    gets it and GC keeps it, and no HNS endpoint holds it but the one kube-proxy makes for it
    (``ownership.source_vip_endpoint``). None when that holds or the store was not read."""
    from plugins.cni import ownership

    for vip in f.source_vip:
        user = next((n for n, ips in f.endpoints if vip in ips and not ownership.source_vip_endpoint(n)), None)
        if user is not None:
            return _sourcevip(f, FAIL, f"source VIP {vip} is also HNS endpoint {user}'s address")
    if f.reservations is None or not f.ipam_dir or f.delegate_type != "win-overlay":
        return None  # on L2Bridge kube-proxy uses no source VIP
    holders = dict(f.reservations)
    pods = {ownership.pod_of(name, f.name) for name, _ in f.endpoints} - {None}
    for vip in f.source_vip:
        holder = holders.get(vip)
        if holder in pods:
            return _sourcevip(f, FAIL, f"source VIP {vip} is also pod {holder}'s address")
        if holder is None:
            return _sourcevip(
                f, WARN, f"{inside}, but {f.ipam_dir} does not reserve it: host-local can give it to a pod"
            )
        if not ownership.pinned(holder):
            return _sourcevip(
                f, WARN, f"{inside}, reserved for {holder!r}, which host-local's GC releases (no runtime lists it)"
            )
    return Check("source-vip", OK, f"{inside}, reserved in {f.ipam_dir} for the node")


def hns_features(f: Facts) -> Check:
    if f.features is None:
        return _skipped("hns-features", "HNS not reachable")
    if skipped := _no_config(f, "hns-features"):
        return skipped
    needs = []
    if f.netconf is not None and f.netconf.loopback_dsr:
        needs.append(("loopbackDSR", "dsr"))
    dual = (f.lease is not None and f.lease.ipv6_subnet is not None) or (
        f.network is not None and any(":" in s.prefix for s in f.network.subnets)
    )
    if dual:
        needs.append(("dual-stack", "dual_stack"))
    if (f.backend is not None and f.backend.type == "vxlan" and f.backend.port) or (
        f.network is not None and f.network.vxlan_port is not None
    ):
        needs.append(("VXLAN port policy", "vxlan_port"))
    lacking = [what for what, feature in needs if not getattr(f.features, feature)]
    version = ".".join(map(str, f.hns_version or ()))
    if lacking:
        where = {
            "dual-stack": f"remove the IPv6 subnet from {f.net_conf_path}",
            "VXLAN port policy": f"remove Backend.Port from {f.net_conf_path}",
        }
        removals = [where[w] for w in lacking if w in where]
        if "loopbackDSR" in lacking:
            removals.append(config_of(f).origin.edit('remove "loopbackDSR" from the delegate'))
        return Check(
            "hns-features",
            FAIL,
            f"HNS {version} does not support {', '.join(lacking)}",
            "update Windows to a build whose HNS supports it, or " + "; ".join(removals),
        )
    return Check(
        "hns-features",
        OK,
        f"HNS {version} supports " + (", ".join(w for w, _ in needs) or "everything the config uses"),
    )


def ipam_store(f: Facts) -> Check:
    if f.store_problem:
        return _failed("ipam-store", f.store_problem)
    if f.reservations is None or f.network is None:
        return _skipped("ipam-store", "no host-local store or HNS network")
    from plugins.cni import ownership

    suffix = f"_{f.name}"
    pods = {pod: ips for name, ips in f.endpoints if (pod := ownership.pod_of(name, f.name))}
    held = {cid for _, cid in f.reservations}
    owner = dict(f.reservations)
    orphans = [f"{ip} reserved for {cid or '?'} which has no endpoint" for ip, cid in orphan_reservations(f)]
    bad = [cid for cid, ips in pods.items() if cid not in held or any(owner.get(ip) != cid for ip in ips)]
    stale = [
        f"endpoint {cid}{suffix} ({', '.join(ips)}) has no reservation" for cid, ips in pods.items() if cid not in held
    ]
    stale += [
        f"endpoint {cid}{suffix} holds {ip}, which host-local reserves for {owner[ip] or '?'}"
        if ip in owner
        else f"endpoint {cid}{suffix} holds {ip}, which host-local has not reserved (it may hand it to another pod)"
        for cid, ips in pods.items()
        if cid in held
        for ip in ips
        if owner.get(ip) != cid
    ]
    stale += [c for c in ownership.conflicts(list(f.reservations), list(f.endpoints), f.name) if c not in stale]
    if stale:
        return Check(
            "ipam-store",
            WARN,
            "; ".join(orphans + stale),
            "an endpoint whose pod is gone is the stale-endpoints check's to remove; for a live pod, remove "
            f"its pod sandbox ({', '.join(bad)}; crictl rmp): the kubelet starts it again with an address "
            "host-local reserves"
            + (f"; then the reservations go with wincni reclaim --cni-conf {f.conf_path}" if orphans else ""),
        )
    if orphans:
        return Check(
            "ipam-store",
            WARN,
            "; ".join(orphans),
            "the node's sweep (the DaemonSet's sweep container: no Windows runtime sends CNI GC) releases them; "
            "this releases now every reservation older than "
            f"{_minutes()} whose pod has no HNS endpoint",
            command(f, "wincni", "reclaim", "--cni-conf", f.conf_path),
        )
    own = sum(ownership.pinned(cid) for _, cid in f.reservations)
    waiting = sum(cid not in pods and not ownership.pinned(cid) for _, cid in f.reservations)
    return Check(
        "ipam-store",
        OK,
        f"{len(f.reservations) - own - waiting} reservation(s) in {f.ipam_dir} match the "
        "HNS endpoints"
        + (f", and {own} of the node's own (kube-proxy's source VIP)" if own else "")
        + (
            f"; {waiting} younger than {_minutes()} have no endpoint yet (an ADD in flight, or stale once older)"
            if waiting
            else ""
        ),
    )


def orphan_reservations(f: Facts) -> list[tuple[str, str]]:
    """host-local's reservations (IP, container) whose pod has no endpoint, by reclaim's rule: a
    young one may be an ADD still creating its endpoint; pinned ones are the node's own."""
    from plugins.cni import ownership

    pods = {ownership.pod_of(name, f.name) for name, _ in f.endpoints} - {None}
    return [
        (ip, cid)
        for ip, cid in f.reservations or ()
        if cid not in pods and not ownership.pinned(cid) and ip not in f.young
    ]


def _minutes() -> str:
    from plugins.cni.ownership import IN_FLIGHT_SECONDS

    return f"{IN_FLIGHT_SECONDS / 60:g} minutes"


def build(f: Facts) -> Check:
    """The installed plugins' build against this wincni's: the DaemonSet's image lays its own build,
    so they differ on a node the image has not reached, or when another build's wincni asks."""
    if not f.installed_build:
        return _skipped("build", f.build_problem or "the install manifest was not read", "")
    same = f.installed_build == f.running_build or f.installed_build.startswith(f.running_build + "-")
    if not same:
        return Check(
            "build",
            WARN,
            f"the plugins in {f.bin_dir} are build {f.installed_build}; this wincni is {f.running_build}",
            "the DaemonSet's image lays its own build when its pod starts: roll it out to this node (or run "
            f"wincni install from the release this wincni came from); the installed build's own doctor is "
            f"the wincni in {f.bin_dir}",
        )
    return Check("build", OK, f"the plugins in {f.bin_dir} are build {f.installed_build}, this wincni's")


def stale_endpoints(f: Facts) -> Check:
    """Endpoints of ours that no live sandbox holds: they keep an address (and a name) from new pods."""
    if f.hns_problem or f.network is None:
        return _skipped("stale-endpoints", "no HNS network")
    if not f.stale_endpoints:
        return Check("stale-endpoints", OK, f"every pod endpoint on {f.name} belongs to a live sandbox")
    listed = [f"{name} ({id_}, {', '.join(ips) or 'no address'})" for name, id_, ips in f.stale_endpoints]
    return Check(
        "stale-endpoints",
        WARN,
        f"{len(listed)} endpoint(s) on {f.name} have no live sandbox: " + "; ".join(listed),
        "the runtime's CNI GC removes them; this deletes them, and the ipam-store check then names the "
        "reservations to release",
        command(f, "hnsctl", "endpoint", "delete", *(id_ for _, id_, _ in f.stale_endpoints)),
    )


def backend(f: Facts) -> Check:
    """Fails when the plugins would run on the simulator on Windows (README "Security model")."""
    if not f.simulated:
        return Check("backend", OK, "the plugins would not run on the HNS simulator")
    return Check(
        "backend",
        FAIL,
        "LIBHNS_BACKEND=sim: the plugins would run on the HNS simulator, so pods get no real network",
        "remove LIBHNS_BACKEND (and WINCNI_ALLOW_SIMULATOR) from containerd's environment "
        "(the Environment value of HKLM\\SYSTEM\\CurrentControlSet\\Services\\containerd) and the "
        "machine's (System Properties, Environment Variables), then restart containerd",
    )


def permissions(f: Facts) -> Check:
    """Warns when someone besides administrators may write a folder the plugins run from or trust."""
    if not f.open_dirs:
        return Check("permissions", OK, "only administrators may write the folders the plugins run from and trust")
    listed = "; ".join(f"{label} {path} is writable by {who}" for label, path, who in f.open_dirs)
    if f.windows:
        return Check(
            "permissions",
            WARN,
            listed,
            "the plugins run as SYSTEM from and with these folders: give each an admin-only ACL (wincni "
            "install and build.ps1 -Install do it for the bin dir): icacls <folder> /inheritance:r /grant:r "
            '"*S-1-5-18:(OI)(CI)F" "*S-1-5-32-544:(OI)(CI)F" "*S-1-5-32-545:(OI)(CI)RX" (SYSTEM, '
            "Administrators, Users by SID, as their names differ by language; quoted, or PowerShell reads "
            "(OI) as a command)",
        )
    modes = [path for _, path, who in f.open_dirs if who in ("its group", "every user", "its group and every user")]
    return Check(
        "permissions",
        WARN,
        listed,
        "the plugins run as root from and with these folders: only root may write them"
        + (
            ""
            if len(modes) == len(f.open_dirs)
            else "; give the others to root (chown root:root) and replace a symbolic link by the folder it points at"
        ),
        command_line(False, "", "chmod", "go-w", *modes) if len(modes) == len(f.open_dirs) else "",
    )


def runtime_status(f: Facts) -> Check:
    """containerd 2.x (config.toml version 3) asks every config of cniVersion 1.1.0 or later for
    CNI STATUS and starts only host-network pods while it fails: whether it asks here, and what
    the plugins answer now (``facts.read_status``)."""
    if skipped := _no_config(f, "runtime-status"):
        return skipped
    if f.status is None:
        return _skipped("runtime-status", f"STATUS of a {f.plugin or 'typeless'} config (not a wincni plugin)")
    from plugins.cni.version import at_least

    from .facts import STATUS_VERSION

    code, msg, details = f.status
    containerd = f"config.toml version {f.containerd_version}" if f.containerd_version else "no config.toml read"
    modern = (f.containerd_version or 0) >= 3
    try:
        asked = modern and at_least(f.cni_version, STATUS_VERSION)
    except ValueError:
        asked = False
    answer = "ready" if code == 0 else f"code {code}: {msg}"
    if code != 0:
        who = "containerd asks it, so this node takes no pods but host-network ones" if asked else containerd
        return Check("runtime-status", FAIL if asked else WARN, f"STATUS answers {answer} ({who})", details)
    if modern and not asked:
        return Check(
            "runtime-status",
            WARN,
            f"containerd 2.x ({containerd}) never asks the plugins' STATUS: the config's cniVersion "
            f"{f.cni_version or 'is unset'} is below {STATUS_VERSION} (STATUS answers {answer})",
            config_of(f).origin.edit(f'set "cniVersion" to "{STATUS_VERSION}"'),
        )
    if asked:
        return Check("runtime-status", OK, f"containerd 2.x asks STATUS ({containerd}); it answers {answer}")
    return Check("runtime-status", OK, f"STATUS answers {answer}; the runtime does not ask it ({containerd})")


ALL: tuple[Callable[[Facts], Check | None], ...] = (
    backend,
    config,
    plugins,
    hns_network,
    subnet_env,
    exceptions,
    reach,
    net_conf,
    vxlan,
    source_vip,
    hns_features,
    ipam_store,
    stale_endpoints,
    runtime_status,
    build,
    permissions,
)


# ``wincni doctor --quick`` (the DaemonSet's readiness probe): what decides whether a pod can get a
# network now, from reads alone; host-local's store (its lock and index are written) and the scan of
# every endpoint are left out.
QUICK = frozenset(
    {
        "backend",
        "config",
        "plugins",
        "hns-network",
        "subnet-env",
        "exceptions",
        "net-conf",
        "vxlan",
        "hns-features",
        "permissions",
    }
)


#: What the checks that only the node itself can answer need of it: replayed from a bundle
#: (``wincni doctor --replay``) each is not checked, saying so, and never passes.
LIVE_ONLY = {
    "backend": "the runtime's environment",
    "plugins": "the CNI bin dir's files and who laid them",
    "runtime-status": "the plugins' STATUS answer",
    "build": "the install manifest as the node's wincni judges it",
    "permissions": "who may write the node's folders",
}


def check_id(check: Callable[[Facts], Check | None]) -> str:
    return check.__name__.replace("_", "-")


def run(facts: Facts, quick: bool = False) -> list[Check]:
    chosen = [check for check in ALL if not quick or check_id(check) in QUICK]
    return [c for c in (_run_one(check, facts) for check in chosen) if c is not None]


def _run_one(check: Callable[[Facts], Check | None], facts: Facts) -> Check | None:
    needs = LIVE_ONLY.get(check_id(check)) if facts.replayed else None
    if needs is None:
        return check(facts)
    return Check(check_id(check), SKIP, f"not checked (replay): needs {needs}", "run wincni doctor on the node")
