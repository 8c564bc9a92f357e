"""Standalone mode: the ``network`` config section, and finding or creating the HNS network.

With flannel, flanneld creates the network before any pod starts. Without it (static routes, a
lab node, containerd outside Kubernetes), and after an HNS restart dropped a non-persistent
network, the first ADD creates it from this section, as flanneld would. The rules:

- Once per node: find-or-create runs under a node-wide file lock per network name, and an
  already-exists answer from HNS (a creator outside the lock) means: use that network.
- Ready before use: the creating ADD sets the network up completely (management IP, then
  flanneld's HostRoute on HCN Overlay or host endpoint on L2Bridge) before releasing the lock;
  a set-up that fails deletes the network again, so no half-made network is ever found.
- Never replaced: a network of the name that differs from the section is a code-7 error naming
  both; nothing here deletes a network it did not just create.
- Cheap once it exists: one lookup under the lock, the same HNS calls as with flanneld's network.

``wanted_network``, ``ipam_outside``, ``document`` and ``mismatch`` are pure; ``ensure`` is
the only I/O, through the plugin's ``EndpointApi``, with the clock injectable for tests.
"""

from __future__ import annotations

import os
import time

from basics import ipaddr
from libhns.policies import HOST_ROUTE

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, Mapping

    from .hnsapi import EndpointApi

from plugins.cni import log
from plugins.cni.errors import INVALID_CONFIG, IO_FAILURE, TRY_AGAIN_LATER, CniError

#: Linux flannel's VXLAN settings; Windows nodes on the same overlay must use them (VNI >= 4096).
FLANNEL_VNI_MIN = 4096
FLANNEL_VXLAN_PORT = 4789
_VNI_MAX = (1 << 24) - 1
#: How long ADD waits for the management IP of a network (flanneld waits up to 30 s for cbr0's).
MANAGEMENT_IP_TIMEOUT = 30.0
_POLL = 0.25
_INTEROP = (
    "Windows VXLAN needs a VNI of 4096 or more and UDP port 4789, and the Linux flannel nodes on "
    'the same overlay must use the same VNI and port (net-conf.json Backend "VNI": 4096, "Port": 4789) '
    "or they cannot reach this node's pods"
)


class WantedNetwork:
    """The network the ``network`` section describes (validated)."""

    __slots__ = ("name", "type", "subnets", "adapter", "vni", "vxlan_port", "dr_mac", "persistent")

    def __init__(
        self,
        name: str,
        type_: str,
        subnets: tuple,
        adapter: str = "",
        vni: int | None = None,
        vxlan_port: int | None = None,
        dr_mac: str = "",
        persistent: bool = False,
    ) -> None:
        self.name = name
        self.type = type_
        self.subnets = subnets  # libhns.networks.NewSubnet, at most one per IP family
        self.adapter = adapter
        self.vni = vni
        self.vxlan_port = vxlan_port
        self.dr_mac = dr_mac
        self.persistent = persistent

    @property
    def overlay(self) -> bool:
        return self.type == "Overlay"


def _bad(field: str, msg: str, hint: str) -> CniError:
    return CniError(INVALID_CONFIG, f"network.{field}: {msg}", hint)


def _listed(value: Any) -> list:
    return [] if value is None else list(value) if isinstance(value, list) else [value]


def wanted_network(section: Mapping[str, Any], name: str, network_type: str, ipv6: bool) -> WantedNetwork:
    """Validate the schema-checked section for a ``network_type`` network (code 7 naming the field)."""
    from libhns.networks import NewSubnet

    overlay = network_type == "Overlay"
    if not overlay:
        for field in ("vni", "vxlanPort", "drMac"):
            if field in section:
                raise _bad(
                    field,
                    f"applies to Overlay (VXLAN) networks, not {network_type}",
                    "remove it, or use win-overlay for a VXLAN network",
                )
    nets = [ipaddr.ip_network(s, strict=False) for s in _listed(section.get("subnet"))]
    if len({n.version for n in nets}) != len(nets):
        raise _bad("subnet", "lists two subnets of the same IP family", "give one IPv4 and at most one IPv6 subnet")
    if any(n.version == 6 for n in nets) and not ipv6:
        raise _bad(
            "subnet",
            f"{network_type} networks have no IPv6 (dual-stack) support on Windows",
            "give this network an IPv4 subnet only",
        )
    gateways: dict[int, str] = {}
    for gw in _listed(section.get("gateway")):
        ip = ipaddr.ip_address(gw)
        net = next((n for n in nets if n.version == ip.version), None)
        if net is None or ip not in net or ip.version in gateways:
            what = (
                f"is a second IPv{ip.version} gateway"
                if ip.version in gateways
                else f"is not in the subnet {net or 'of its IP family'}"
            )
            raise _bad(
                "gateway",
                f"{gw} {what}",
                "give one gateway per subnet, an address of that subnet (default: the subnet's .1)",
            )
        gateways[ip.version] = str(ip)
    vni = None
    if overlay:
        vni = int(section.get("vni", FLANNEL_VNI_MIN))
        if not FLANNEL_VNI_MIN <= vni <= _VNI_MAX:
            what = f"is below {FLANNEL_VNI_MIN}" if vni < FLANNEL_VNI_MIN else f"is above {_VNI_MAX} (24 bits)"
            raise _bad("vni", f"{vni} {what}", f"use 4096 (the default) up to {_VNI_MAX}: {_INTEROP}")
        port = int(section.get("vxlanPort", FLANNEL_VXLAN_PORT))
        if port != FLANNEL_VXLAN_PORT:
            raise _bad("vxlanPort", f"{port} is not {FLANNEL_VXLAN_PORT}", f"remove it or set 4789: {_INTEROP}")
    subnets = tuple(NewSubnet(str(n), gateways.get(n.version, ""), vni) for n in nets)
    return WantedNetwork(
        name,
        network_type,
        subnets,
        adapter=section.get("adapter") or "",
        vni=vni,
        vxlan_port=FLANNEL_VXLAN_PORT if overlay else None,
        dr_mac=str(section.get("drMac") or "").replace(":", "-").upper(),
        persistent=bool(section.get("persistent")),
    )


def ipam_outside(wanted: WantedNetwork, ipam: Any) -> CniError | None:
    """An IPAM range (host-local's ``subnet`` or ``ranges``) outside the network's subnets: HNS
    would refuse every endpoint with 0x803B002F after the address was taken, so say it first."""
    if not isinstance(ipam, dict):
        return None
    found = [("ipam.subnet", ipam.get("subnet"))]
    ranges = ipam.get("ranges")
    for i, rset in enumerate(ranges if isinstance(ranges, list) else ()):
        for j, r in enumerate(rset if isinstance(rset, list) else ()):
            found.append((f"ipam.ranges[{i}][{j}].subnet", r.get("subnet") if isinstance(r, dict) else None))
    nets = [ipaddr.ip_network(s.prefix) for s in wanted.subnets]
    for field, text in found:
        try:
            want = ipaddr.ip_network(text, strict=False) if isinstance(text, str) else None
        except ValueError:
            want = None
        if want is None:
            continue  # absent, or the IPAM plugin's to reject
        if not any(n.version == want.version and want.subnet_of(n) for n in nets):
            return CniError(
                INVALID_CONFIG,
                f"{field}: {want} is outside network.subnet {', '.join(s.prefix for s in wanted.subnets)}",
                "pod addresses must come from the network's subnet: make the two agree",
            )
    return None


def document(wanted: WantedNetwork, feature: Callable[[str], bool]) -> dict[str, Any]:
    """The V2 HostComputeNetwork for ``wanted`` (the V1 adapter derives its form from it);
    ``feature`` answers HNS feature questions for the API in use, asked only when the network
    needs one."""
    from libhns.networks import NON_PERSISTENT, network_document

    if any(s.version == 6 for s in wanted.subnets) and not feature("dual_stack"):
        raise _bad(
            "subnet",
            "an IPv6 subnet needs dual-stack support, which this HNS version lacks",
            "dual-stack needs HNS 11.10 or newer (Windows Server 2022 / build 19041+); give an IPv4 subnet only",
        )
    # VxlanPort is an HCN policy (HNS >= 10.3); HNSCall networks and older HNS use 4789 anyway.
    port = wanted.vxlan_port if wanted.overlay and feature("vxlan_port") else None
    return network_document(
        wanted.name,
        wanted.type,
        wanted.subnets,
        adapter=wanted.adapter,
        vxlan_port=port,
        dr_mac=wanted.dr_mac,
        flags=0 if wanted.persistent else NON_PERSISTENT,
    )


def mismatch(wanted: WantedNetwork, network: Any) -> CniError | None:
    """An existing network of this name that the section does not describe: an error naming both."""
    have = sorted(str(ipaddr.ip_network(s.prefix, strict=False)) for s in network.subnets)
    want = sorted(s.prefix for s in wanted.subnets)
    differs = not network.is_type(wanted.type) or have != want
    if not differs and wanted.overlay and network.vsid is not None and network.vsid != wanted.vni:
        have.append(f"VNI {network.vsid}")
        want.append(f"VNI {wanted.vni}")
        differs = True
    if not differs:
        return None
    return CniError(
        INVALID_CONFIG,
        f"HNS network {wanted.name} exists as {network.network_type} {', '.join(have) or '(no subnet)'}, "
        f'but the "network" section describes {wanted.type} {", ".join(want)}',
        f"the plugin never replaces a network: delete it (hnsctl network delete {wanted.name}, or "
        "Remove-HnsNetwork) or make the section match it",
    )


def lock_path(name: str, directory: str) -> str:
    """One lock file per network name, shared by every plugin process on the node, in the
    admin-only folder ``directory`` (created, or checked, here)."""
    from plugins.cni.lock import secure_dir

    try:
        secure_dir(directory)
    except OSError as exc:
        raise CniError(
            IO_FAILURE,
            f"cannot create the network lock folder {directory}: {exc.strerror or exc}",
            "it must be a local folder only administrators can write (WINCNI_LOCK_DIR)",
        ) from exc
    from plugins.cni.names import CHARS

    safe = "".join(c if c in CHARS else "_" for c in name)  # skel has checked it is a name: belt and braces
    return os.path.join(directory, f"network-{safe}.lock")


def ensure(
    api: EndpointApi,
    wanted: WantedNetwork,
    feature: Callable[[str], bool],
    locks: str,
    *,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    timeout: float = MANAGEMENT_IP_TIMEOUT,
) -> Any:
    """Find or create the network under the node-wide lock. A network this call creates is set
    up completely before the lock is let go (management IP, then flanneld's HostRoute or host
    endpoint), so the ADDs queued behind it find it ready; if that fails it is deleted again in
    the undo window (its own deadline: the command's may be what failed), and the next ADD starts
    over. A marker beside the lock says a set-up is under way: a network found with it (its ADD
    was killed, or could not delete it) is half made, and is deleted and made again. A network of
    another shape is a code-7 error."""
    from plugins.cni.lock import FileLock

    lock = lock_path(wanted.name, locks)
    marker = lock[: -len(".lock")] + ".setup"
    with FileLock(lock):
        network = api.network(wanted.name)
        if network is not None and os.path.exists(marker):
            if not _discard(api, wanted, network, "an earlier ADD was stopped while setting it up"):
                raise CniError(
                    TRY_AGAIN_LATER,
                    f"HNS network {wanted.name} is half set up and could not be deleted yet",
                    "the next ADD tries again; or delete it: hnsctl network delete " + wanted.name,
                )
            network = None
        if network is None:
            _mark(marker)
            network, ours = _create(api, wanted, document(wanted, feature))
            if ours:
                try:
                    network = _set_up(api, wanted, network, feature, clock, sleep, timeout)
                except BaseException:
                    with api.undo_window():
                        if _discard(api, wanted, network, "its set-up failed"):
                            _unmark(marker)
                    raise
            _unmark(marker)
            if ours:
                return network
        problem = mismatch(wanted, network)
        if problem is not None:
            raise problem
        if not network.management_ip and api.shows_management_ip(network):
            network = _wait_for_management_ip(api, network, wanted.name, clock, sleep, timeout)
    return network


def _mark(path: str) -> None:
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | getattr(os, "O_BINARY", 0), 0o600))


def _unmark(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _create(api: EndpointApi, wanted: WantedNetwork, doc: dict) -> tuple[Any, bool]:
    """(the network, whether this call created it)."""
    from libhns.errors import HnsError

    try:
        network = api.create_network(doc)
    except HnsError as err:
        # Already exists: a process outside our lock (hnsctl, flanneld, another user) was first.
        network = api.network(wanted.name)
        if network is None:
            raise
        log.event("network-create-lost", network=wanted.name, error=str(err))
        return network, False
    log.event(
        "network-created",
        network=wanted.name,
        id=network.id,
        type=wanted.type,
        subnets=[s.prefix for s in wanted.subnets],
        persistent=wanted.persistent,
    )
    return network, True


def _set_up(
    api: EndpointApi,
    wanted: WantedNetwork,
    network: Any,
    feature: Callable[[str], bool],
    clock: Callable[[], float],
    sleep: Callable[[float], None],
    timeout: float,
) -> Any:
    """What flanneld does once HNS has made the network, before any pod may use it."""
    network = _wait_for_management_ip(api, network, wanted.name, clock, sleep, timeout)
    if wanted.overlay:
        if feature("host_route"):  # HNS >= 9.2, and HCN only (HNSCall lacks it)
            api.add_network_policy(network, HOST_ROUTE)
    else:
        _host_endpoint(api, wanted, network)
    return network


def _host_endpoint(api: EndpointApi, wanted: WantedNetwork, network: Any) -> None:
    """flanneld's ``<name>_ep``: the host's vNIC on the bridge at the IPv4 subnet's .2, which
    win-bridge gives every pod as its gateway; made and host-attached through HNSCall on
    either API, as flanneld does. A stale endpoint of ours on that address (a gone sandbox's) is
    removed first, by the same rule as a pod's (``stale.clear_addresses``: code 11 for one in use)."""
    from libhns.errors import InvalidAddress
    from plugins.cni.ownership import host_endpoint_name  # only when a network is made

    v4 = next((s for s in wanted.subnets if s.version == 4), None)
    if v4 is None:
        return
    ip = str(ipaddr.ip_network(v4.prefix).network_address + 2)
    name = host_endpoint_name(wanted.name)
    try:
        ep = api.create_host_endpoint(network, name, ip)
    except InvalidAddress:
        from . import stale

        if not stale.clear_addresses(api, network, wanted.name, [ip], name):
            raise
        ep = api.create_host_endpoint(network, name, ip)
    log.event("network-host-endpoint", network=wanted.name, endpoint=ep.id, ip=ip)


def _discard(api: EndpointApi, wanted: WantedNetwork, network: Any, why: str) -> bool:
    """Delete a network this plugin made but could not set up, with its host endpoint (best
    effort: the error being raised is what counts); whether it is gone. A network that holds
    another endpoint is left: HNS deletes a network's endpoints with it, and that one may be in use."""
    from plugins.cni.ownership import freed, host_endpoint_name

    host = host_endpoint_name(wanted.name)
    try:
        others = [ep.name for ep in api.endpoints_of(network) if ep.name != host]
        if others:
            log.warning(f"HNS network {wanted.name} is left: it holds endpoint(s) {', '.join(others)}")
            return False
        if not wanted.overlay:
            api.delete_host_endpoint(host)
        api.delete_network(network)
    except Exception as err:  # noqa: BLE001 - report, keep the original error
        log.warning(f"could not delete the half-set-up HNS network {wanted.name}: {err}; the next ADD deletes it")
        return False
    freed("ADD", f"HNS network {wanted.name} ({network.id})", f"{why}; the next ADD makes it again")
    log.event("network-discarded", network=wanted.name, id=network.id)
    return True


def _wait_for_management_ip(
    api: Any, network: Any, name: str, clock: Callable[[], float], sleep: Callable[[float], None], timeout: float
) -> Any:
    """Poll until HNS reports the management IP, as flanneld does after creating a network."""
    start = clock()
    while True:
        ip = api.management_ip(network)
        elapsed = clock() - start
        if ip:
            log.event("network-ready", network=name, managementIP=ip, waited=f"{elapsed:.2f}s")
            return network
        if elapsed >= timeout:
            raise CniError(
                TRY_AGAIN_LATER,
                f"HNS network {name} has no management IP after {elapsed:.1f}s",
                "HNS has not bound the network to a host adapter: check that network.adapter "
                "names an adapter that is up (Get-NetAdapter)",
            )
        sleep(min(_POLL, timeout - elapsed))
        network = api.network(name)
        if network is None:
            raise CniError(
                TRY_AGAIN_LATER,
                f"HNS network {name} disappeared while waiting for its management IP",
                "something deleted it (an HNS restart?); the next ADD creates it again",
            )
