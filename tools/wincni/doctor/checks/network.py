"""Checks of the pods' HNS network, flanneld's lease and HNS's features."""

from __future__ import annotations

from typing import Any

from tools.wincni.doctor.checks.common import command, failed, no_config, not_checked
from tools.wincni.doctor.checks.config import config_of
from tools.wincni.doctor.facts import NodeFacts
from tools.wincni.judge import addresses
from tools.wincni.judge.verdict import FAIL, OK, WARN, Check


def hns_network(f: NodeFacts) -> Check:
    if f.hns_problem:
        return failed("hns-network", f.hns_problem)
    if not f.name:
        return not_checked("hns-network", "the config names no network")
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


def _retype(f: NodeFacts) -> str:
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


def _standalone(f: NodeFacts, section: Any) -> Check | None:
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


def subnet_env(f: NodeFacts) -> Check:
    if f.lease_problem:
        return failed("subnet-env", f.lease_problem)
    if skipped := no_config(f, "subnet-env"):
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


def _earlier_lease(f: NodeFacts, hns: addresses.AddressSet) -> Check | None:
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


def vxlan(f: NodeFacts) -> Check:
    if skipped := no_config(f, "vxlan"):
        return skipped
    if not f.delegate_type:
        return not_checked("vxlan", "no delegate config")
    if f.delegate_type != "win-overlay":
        return Check("vxlan", OK, f"no VXLAN to check: the delegate is {f.delegate_type}")
    if f.netconf is None or f.flavor is None:
        return not_checked("vxlan", "no valid delegate config")
    if f.network is None:
        return not_checked("vxlan", "no HNS network")
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


def hns_features(f: NodeFacts) -> Check:
    if f.features is None:
        return not_checked("hns-features", "HNS not reachable")
    if skipped := no_config(f, "hns-features"):
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


def stale_endpoints(f: NodeFacts) -> Check:
    """Endpoints of ours that no live sandbox holds: they keep an address (and a name) from new pods."""
    if f.hns_problem or f.network is None:
        return not_checked("stale-endpoints", "no HNS network")
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
