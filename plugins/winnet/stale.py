"""Endpoints a gone sandbox left in HNS, and when an ADD may remove them.

A crash, a reboot or a kubelet restart leaves endpoints behind that hold a pod's name or an
address host-local now hands to another pod, and HNS then refuses the new pod (kubernetes
#68511, Windows-Containers #631). What may go is the node's one ownership rule
(``plugins.cni.ownership.endpoint_kept``): an endpoint is *stale* when nothing alive holds it
(``EndpointApi.in_use``: no existing namespace, no running compute system). A stale endpoint of
the pod's own name is replaced, on whatever network it is (``addaction.decide`` says so); a
stale endpoint of ours (``<sandbox>_<network>``) on the address HNS refused is removed and the
create retried once; anything else — attached to a live sandbox on any network, flanneld's, or
not ours — is never touched: code 11 names it. Every removal is logged (stderr, which the runtime keeps) with the
endpoint's name, ID, addresses and why.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

from plugins.cni import log, ownership
from plugins.cni.errors import TRY_AGAIN_LATER, CniError

_RELEASED = "the pod's IPAM reservation was released; "


def remove(api: Any, ep: Any, why: str, who: str = "ADD") -> None:
    """Detach and delete ``ep``, saying so."""
    addresses = ", ".join(ep.ip_addresses) or "no address"
    ownership.freed(who, f"stale HNS endpoint {ep.name} ({ep.id}, {addresses})", why)
    log.event("stale-endpoint-removed", endpoint=ep.name, id=ep.id, ips=list(ep.ip_addresses), why=why)
    api.remove_stale(ep)


def left_alone(ep: Any, pod: str, kept: str, elsewhere: bool) -> CniError:
    """Code 11 naming the endpoint that holds the pod's name and why it stays (``kept``); the
    caller releases the pod's reservation."""
    where = f" exists on another network ({ep.network_id}) and" if elsewhere else ""
    return CniError(
        TRY_AGAIN_LATER,
        f"HNS endpoint {ep.name} ({ep.id}) for {pod}{where} is {kept}; it was left alone",
        _RELEASED + f"delete that endpoint if it is a leftover (hnsctl endpoint delete {ep.id}), "
        "then the runtime's retry succeeds",
    )


def clear_addresses(api: Any, network: Any, network_name: str, addresses: list[str], pod: str) -> bool:
    """After HNS refused ``addresses`` as in use: remove the stale endpoints of ours holding them
    and return True (the caller creates once more); False when no endpoint on the network holds
    them (the refusal was about something else). CniError 11 naming the holder when it is in use
    or not ours."""
    wanted = set(addresses)
    holders = [ep for ep in api.endpoints_of(network) if wanted & set(ep.ip_addresses)]
    for ep in holders:
        ip = ", ".join(sorted(wanted & set(ep.ip_addresses)))
        problem = ownership.endpoint_kept(ep.name or "", network_name, api.in_use(ep))
        if not problem:
            continue
        raise CniError(
            TRY_AGAIN_LATER,
            f"address {ip} for {pod} is held by HNS endpoint {ep.name} ({ep.id}), which is {problem}; "
            "it was left alone",
            _RELEASED + "if that endpoint is a leftover, delete it "
            f"(hnsctl endpoint delete {ep.id}) or run the network's GC, then the runtime's retry succeeds",
        )
    for ep in holders:
        remove(
            api,
            ep,
            f"it holds {', '.join(sorted(wanted & set(ep.ip_addresses)))}, which IPAM assigned to {pod}, "
            "and its sandbox is gone",
        )
    return bool(holders)


def left_behind(api: Any, endpoints: list[Any], network_name: str) -> list[Any]:
    """Those of ``endpoints`` (V1 view: it shows both namespaces and V1 containers) that are ours
    and that no live sandbox holds (for ``wincni doctor``)."""
    held = api.in_use_each(endpoints)
    return [ep for ep, used in zip(endpoints, held) if not ownership.endpoint_kept(ep.name or "", network_name, used)]
