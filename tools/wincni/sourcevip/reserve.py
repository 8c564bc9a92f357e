"""Waiting for the pods' HNS network, then reserving kube-proxy's source VIP in host-local's store."""

from __future__ import annotations

from typing import Any, Callable, Mapping, TextIO

from plugins.cni.ownership import PINNED_PREFIX
from plugins.ipam_host_local.allocator import Owner

OWNER = Owner(PINNED_PREFIX + "source-vip", "sourcevip")


POLL_S = 1.0


PROGRESS_S = 5.0


class SourceVipError(Exception):
    """Cannot reserve: the message names what is missing and what to do (exit status 1)."""

    status = 1


class NotNeeded(SourceVipError):
    """The network takes no source VIP (L2Bridge): nothing to do, and saying so is a usage error (2)."""

    status = 2


def wait_for_network(
    name: str,
    ipam_of: Callable[[], Mapping[str, Any] | None],
    env: Mapping[str, str],
    timeout: float,
    clock: Callable[[], float],
    sleep: Callable[[float], None],
    stderr: TextIO | None = None,
    lease: str = "",
) -> tuple[Any, Mapping[str, Any], set[str]]:
    """Poll until the HNS network has its management IP and the pods' IPAM is known, all within
    ``timeout`` (each HNS call is given what is left, at most ``PROGRESS_S``, so a hung HNS is
    reported too); (network, IPAM, addresses HNS gives to endpoints on it). A line on ``stderr``
    at the first miss and every ``PROGRESS_S`` after says what it waits for."""
    from libhns.client import open_clients
    from libhns.deadline import Limits
    from libhns.errors import EnvError, HnsError

    start = clock()
    deadline = start + timeout
    said = start - PROGRESS_S
    missing = ""
    while True:
        now = clock()
        if missing and now >= deadline:
            raise SourceVipError(
                f"{missing} not there after {timeout:g} s: is flanneld running on this node? "
                '(its log: "Waiting for the Network to be created")'
            )
        if missing and stderr is not None and now - said >= PROGRESS_S:
            said = now
            stderr.write(f"wincni sourcevip: waiting for {missing}{_where(lease, name)}, {deadline - now:.0f} s more\n")
            stderr.flush()
        if missing:
            sleep(min(POLL_S, deadline - now))
        left = deadline - clock()
        if missing and left <= 0:
            continue  # the wait is over: say what was missing, not what a call given no time could not do
        left = max(left, 0.001)  # --timeout 0: one look
        hns_error = None
        try:
            client, _ = open_clients(env, Limits(call=min(PROGRESS_S, left), command=left))
            network = client.get_network_by_name(name)
            if network is not None and not network.is_type("Overlay"):
                raise NotNeeded(
                    f"HNS network {name!r} is {network.network_type} (host-gw): kube-proxy needs no source "
                    "VIP there; run it without --source-vip (nothing was reserved)"
                )
            endpoints = client.list_endpoints(network.id) if network else []
            taken = {ip: (ep.name or "", ep.is_remote) for ep in endpoints for ip in ep.ip_addresses}
        except EnvError as err:
            raise SourceVipError(f"cannot query HNS: {err}") from None
        except (HnsError, OSError) as err:
            network, hns_error = None, err  # HNS restarting, or hung: as good as not there yet
        ipam = ipam_of()
        if network is not None and network.management_ip and ipam is not None:
            return network, ipam, taken
        missing = (
            "flanneld's lease (subnet.env)"
            if ipam is None
            else f"an answer from HNS ({hns_error})"
            if hns_error is not None
            else f"HNS network {name!r}"
            if network is None
            else f"the management IP of HNS network {name!r}"
        )


def _where(lease: str, name: str) -> str:
    return f" (lease {lease}, network {name})" if lease else f" (network {name})"


def reserve(
    name: str, ipam: Mapping[str, Any], platform: str, taken: Mapping[str, tuple[str, bool]] | None = None
) -> tuple[Any, list[str], str]:
    """(IPConfig, addresses released as stale, store directory). Idempotent: the address
    already reserved to OWNER in the current subnet is returned again, unless HNS now gives it
    to an endpoint other than kube-proxy's own for it (``taken``: address -> the endpoint's name
    and whether it is remote; ``ownership.source_vip_endpoint``); a new one is never an address
    an endpoint holds."""
    from plugins.cni import ownership
    from plugins.cni.errors import IO_FAILURE, CniError
    from plugins.ipam_host_local import config
    from plugins.ipam_host_local.allocator import allocate_all
    from plugins.ipam_host_local.store import open_store

    cfg = config.load({"name": name, "ipam": dict(ipam)}, {}, "1.0.0", platform)
    v4 = [s for s in cfg.range_sets if s.ranges[0].subnet.version == 4][:1]
    if not v4:
        raise SourceVipError(f"the pods' IPAM for {name} has no IPv4 range: kube-proxy's source VIP is IPv4")
    try:
        with open_store(cfg.directory, platform) as store:
            taken = taken or {}
            lost = {ip for ip, holder in taken.items() if not ownership.source_vip_endpoint(*holder)}
            stale = [ip for ip in store.owned_by(OWNER) if not v4[0].contains(ip) or str(ip) in lost]
            for ip in stale:  # from an earlier FLANNEL_SUBNET, or an address an endpoint holds
                store.release(ip)
                ownership.freed(
                    "wincni sourcevip",
                    f"its reservation of {ip} in {cfg.directory}",
                    "an endpoint holds it" if str(ip) in lost else "outside the current FLANNEL_SUBNET",
                )
            [allocation] = allocate_all(v4, _Avoiding(store, taken), OWNER)
    except OSError as exc:
        raise CniError(IO_FAILURE, f"cannot use host-local's store {cfg.directory}: {exc.strerror or exc}") from None
    return allocation.ip_config(), [str(ip) for ip in stale], cfg.directory


class _Avoiding:
    """host-local's store, refusing the addresses HNS gives to endpoints (as if reserved)."""

    def __init__(self, store: Any, taken: Mapping[str, Any]) -> None:
        self.store, self.taken = store, taken

    def reserve(self, owner: Owner, ip: Any, range_id: int) -> bool:
        return str(ip) not in self.taken and self.store.reserve(owner, ip, range_id)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)
