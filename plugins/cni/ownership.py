"""The one ownership rule: what on a node is in use, and who may free what, after how long.

Reclaim (``wincni reclaim``), the runtime's GC (host-local, flannel, win-bridge/win-overlay), the
doctor and the stale-endpoint cleanup of ADD (``plugins/winnet/stale.py``) all ask this module;
none decides on its own. Pure: callers read the store and HNS and pass what they saw.

In use — freed by nobody but its owner:
1. a reservation of ours whose pod has a live endpoint (HNS holds ``<container>_<network>``), or
   whose sandbox still exists (the namespace or pause container host-local recorded at its ADD):
   a pod whose endpoint is gone still runs, without a network, until it is recreated, and its DEL
   then releases the address; whatever its age, so reclaim never hands a running pod's address
   to another. The doctor reports such a pod at once (``sandbox_lost_endpoint``): being in use
   is about freeing, not about whether the pod is well;
2. an ADD in flight: a reservation younger than ``IN_FLIGHT_SECONDS`` (an ADD reserves before it
   creates the endpoint; a retried ADD that reuses its reservation renews its age);
3. an owner in the reserved ``_wincni-`` namespace (``PINNED_PREFIX``: the node's own, e.g.
   kube-proxy's source VIP), which only the tool that made it frees (``wincni sourcevip``, when the
   pod subnet changed or a named endpoint took the address: kube-proxy's own endpoint for it,
   unnamed, holds it by right, ``source_vip_endpoint``);
4. flanneld's own endpoints (``<network>_ep``, any host endpoint) and every endpoint not named
   ``<sandbox>_<network>``: never ours to delete;
5. an endpoint attached to a namespace or a container that exists, whatever network it is on;
6. a temporary file (``.<name>.<pid>.tmp``) its writer may still be writing: the writer is alive
   and the file younger than ``IN_FLIGHT_SECONDS`` (PIDs are reused: age bounds the guess). No
   list of attachments speaks for it, so not even the runtime's GC frees it. host-local writes
   only under its store's lock, which its GC holds too: it leaves nothing half-written a GC meets.

A reservation whose file names no owner (empty, NULs an unclean shutdown left, garbage, a link or
a FIFO: host-local's store calls it malformed and warns) is no pod's: nothing of 1 or 3 can hold
it, so it is an ADD in flight (2) while young and free to release after; every host-local writer
fills a reservation under the store's lock, so none is still being written when GC or the sweep
holds that lock.

Who frees what:
- a pod's DEL: that pod's reservation and endpoint;
- the runtime's GC: reservations, saved configs and endpoints of attachments the runtime no longer
  lists (it knows its pods), except 3 and 4;
- the runtime's GC and a pod's DEL (its sandbox's only): temporary files that are not 6, what
  a writer killed before it renamed or removed them left;
- the node's sweep (``wincni reclaim``, once or ``--every`` minute from the DaemonSet: no
  runtime on Windows sends GC), at least ``--min-age`` old (default ``IN_FLIGHT_SECONDS``; below
  it only with ``--force``, which breaks 2): endpoints of ours that are none of 4-5 (their sandbox
  is gone) and whose pod holds no reservation or saved config young enough to be an ADD in
  flight; reservations that are none of 1-3; saved delegate configs of pods that hold neither an
  endpoint nor a reservation any more. Where the runtime's pod list is had (CRI's
  ListPodSandbox), a sandbox it lists keeps all three, whatever their age (``RUNTIME_LISTS``: the
  runtime still owes that pod a DEL); the list only ever keeps, so a runtime that lies cannot
  make the sweep free anything. Each is checked again under the store's lock just before it goes;
- an ADD: an endpoint of ours on its own address or name that is none of 4-5.
Each freeing says who freed what and why (``freed``).

Whose ACLs the NetworkPolicy agent sets (``acl_target``): our pods' endpoints only (local, named
``<sandbox>_<network>``, not the node's pinned owners); never flanneld's host endpoint, nor
kube-proxy's remote endpoints and its source VIP endpoint (unnamed), nor anything else on the
network. It never frees anything.
"""

from __future__ import annotations

from . import log

#: Container IDs no runtime passes (CNI IDs start with a letter or digit): the node's own owners.
PINNED_PREFIX = "_wincni-"
#: Longer than any ADD may hold a reservation without its endpoint: the command deadline (100 s)
#: plus the undo window (10 s), well rounded up. ``wincni reclaim``'s default ``--min-age``.
IN_FLIGHT_SECONDS = 300.0
#: Why each kind of thing is kept (the words reclaim, GC and the doctor print).
LIVE_ENDPOINT = "its pod has a live HNS endpoint"
IN_FLIGHT = "young enough to be an ADD in flight"
NODE_OWNED = "owned by the node (the reserved _wincni- namespace)"
ATTACHED = "in use by a sandbox that still exists (a namespace or a running container)"
SANDBOX_ALIVE = (
    "its pod's sandbox still exists (a namespace or a running container): the pod must be recreated, "
    "and its DEL releases it"
)
FLANNELD = "flanneld's own endpoint"
NOT_OURS = "not created by this plugin (its name is not <sandbox>_<network>)"
WRITING = "a live process may still be writing it"
RUNTIME_LISTS = "its sandbox is one the runtime lists (CRI ListPodSandbox): the runtime's DEL frees it"
HELD = "its pod still holds an endpoint or a reservation"


def pinned(container_id: str) -> bool:
    return container_id.startswith(PINNED_PREFIX)


def pod_of(endpoint_name: str, network: str) -> str:
    """The sandbox of a ``<sandbox>_<network>`` endpoint name; "" for any other name."""
    suffix = "_" + network
    name = endpoint_name or ""
    return name[: -len(suffix)] if name.endswith(suffix) and len(name) > len(suffix) else ""


def source_vip_endpoint(endpoint_name: str, remote: bool) -> bool:
    """Whether an endpoint holding kube-proxy's reserved source VIP is kube-proxy's own: winkernel
    makes one for the address at start (newSourceVIP), local and named nothing, so it holds the
    address by right; a named endpoint (a pod's, flanneld's host endpoint) or a remote one took it."""
    return not endpoint_name and not remote


def acl_target(endpoint_name: str, network: str, remote: bool) -> bool:
    """Whether the NetworkPolicy agent may set this endpoint's ACLs: a local pod endpoint of ours."""
    sandbox = pod_of(endpoint_name, network)
    return bool(sandbox) and not remote and not pinned(sandbox)


def host_endpoint_name(network: str) -> str:
    """flanneld's (and standalone mode's) host vNIC on a bridge network."""
    return f"{network}_ep"


def reservation_kept(
    container_id: str,
    live_pods: "set[str] | frozenset[str]",
    age: float,
    min_age: float,
    sandbox_alive: bool = False,
) -> str:
    """Why a reservation must stay ("" when reclaim may release it): ``live_pods`` are the
    sandboxes with an endpoint on the network, ``age`` the reservation's in seconds,
    ``sandbox_alive`` whether the sandbox recorded at its ADD still exists."""
    if pinned(container_id):
        return NODE_OWNED
    if container_id and container_id in live_pods:
        return LIVE_ENDPOINT
    if sandbox_alive:
        return SANDBOX_ALIVE
    if age < min_age:
        return IN_FLIGHT
    return ""


def sandbox_lost_endpoint(container_id: str, live_pods: "set[str] | frozenset[str]", sandbox_alive: bool) -> bool:
    """A pod that runs without its network: the reservation is kept for its sandbox alone
    (``reservation_kept`` says ``SANDBOX_ALIVE`` whatever the age), its endpoint is gone."""
    return reservation_kept(container_id, live_pods, 0.0, 0.0, sandbox_alive) == SANDBOX_ALIVE


def delegate_kept(key: str, holders: "set[str]", age: float, min_age: float) -> str:
    """Why a saved delegate config must stay ("" when the sweep may remove it): ``holders`` are
    the sandboxes that keep an endpoint or a reservation; ``age`` is the file's, in seconds (an
    ADD saves it before its delegate reserves anything)."""
    if pinned(key):
        return NODE_OWNED
    if key in holders:
        return HELD
    if age < min_age:
        return IN_FLIGHT
    return ""


def min_age_risk(min_age: float) -> str:
    """What reclaiming reservations only ``min_age`` seconds old risks ("" when nothing): below
    ``IN_FLIGHT_SECONDS`` a reservation without an endpoint may be an ADD that has not made it yet."""
    if min_age >= IN_FLIGHT_SECONDS:
        return ""
    return (
        f"ADDs in flight may lose their address (a reservation younger than {IN_FLIGHT_SECONDS:g} s may be an "
        "ADD whose endpoint does not exist yet: its pod then runs on an address host-local gives the next pod)"
    )


def gc_keeps(container_id: str, ifname: str, valid: "set[tuple[str, str]]") -> bool:
    """The runtime's GC: keep what it lists (an id-only legacy reservation while any of that
    container's attachments is listed) and what belongs to the node."""
    if pinned(container_id):
        return True
    if not ifname:
        return any(cid == container_id for cid, _ in valid)
    return (container_id, ifname) in valid


def temporary_kept(age: float, writer_alive: bool) -> str:
    """Why a temporary file must stay ("" when it may go): ``age`` in seconds since it was
    written, ``writer_alive`` whether the PID in its name runs (maybe a stranger that reuses it)."""
    return WRITING if writer_alive and age < IN_FLIGHT_SECONDS else ""


def endpoint_kept(name: str, network: str, attached_alive: bool) -> str:
    """Why an endpoint must stay when an ADD or GC would remove it ("" when it may go)."""
    if attached_alive:
        return ATTACHED
    if name == host_endpoint_name(network):
        return FLANNELD
    if not pod_of(name, network):
        return NOT_OURS
    return ""


def conflicts(
    reservations: "list[tuple[str, str]]", endpoints: "list[tuple[str, tuple[str, ...]]]", network: str
) -> list[str]:
    """Addresses HNS gives to an endpoint that host-local reserves for someone else (the doctor):
    the next pod, or the reservation's owner, would meet that endpoint. kube-proxy's source VIP
    endpoint holds the node's own reservation rightly."""
    owner = dict(reservations)
    out = []
    for name, ips in endpoints:
        pod = pod_of(name, network)
        for ip in ips:
            if ip in owner and owner[ip] != pod and not (pinned(owner[ip]) and source_vip_endpoint(name, False)):
                out.append(f"endpoint {name} holds {ip}, which host-local reserves for {owner[ip] or '?'}")
    return out


def freed(who: str, what: str, why: str) -> None:
    """Every freeing, on stderr (kept by the runtime) and in the debug log: who freed what, why."""
    log.warning(f"{who}: removing {what}: {why}")
    log.event("freed", who=who, what=what, why=why)
