"""What NetworkPolicy lets each pod receive and send, pure.

For each pod and direction: whether a policy isolates it (a policy of its namespace selects it and
lists the direction in ``policyTypes``) and, if so, the ``Grant``s the selecting policies' rules
add up to (their union; ingress and egress are independent). A grant is a protocol, port ranges
and peer addresses: a pod peer is its address, an ipBlock its CIDR less ``except``. A named port
is resolved per destination pod from its container ports (ingress: the subject's own; egress: each
peer pod's; an address no pod holds has no names, so a named port never reaches it). ``endPort``
makes a range. A pod reaching itself by its own address is not subject to policy (loopback).

What HNS cannot express is refused by name: a ``Refusal`` record naming the policy, the field and
why, and the traffic it would have allowed stays denied (the pod stays isolated in that direction:
SCTP never silently becomes allow-all or TCP).

``allows`` answers one packet over the same model, for comparing with single-packet oracles.
"""

from __future__ import annotations

import functools
import ipaddress
from dataclasses import dataclass

from plugins.netpol import addresses
from plugins.netpol.resources import Cluster, Pod, Policy, PolicyPort, Rule

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Iterable

INGRESS, EGRESS = "ingress", "egress"
#: The protocols HNS ACLs filter by port (IANA 6 and 17); SCTP (132) has no port match there and
#: the Windows data plane does not carry it (Azure NPM and Calico refuse it as well).
EXPRESSIBLE = ("TCP", "UDP")


@dataclass(frozen=True)
class Grant:
    """Traffic a direction lets through: ``protocol`` (None: every protocol), ``ports`` as
    ``(first, last)`` ranges (None: every port), ``peers`` the other side's addresses as CIDRs
    (None: every address)."""

    protocol: str | None
    ports: tuple[tuple[int, int], ...] | None
    peers: tuple | None

    def admits(self, ip, port: int, protocol: str) -> bool:
        if self.protocol is not None and self.protocol != protocol:
            return False
        if self.ports is not None and not any(first <= port <= last for first, last in self.ports):
            return False
        return self.peers is None or addresses.contains(self.peers, ip)


@dataclass(frozen=True)
class Refusal:
    """A part of a policy HNS cannot express, left out (the traffic it allowed stays denied)."""

    pod: str
    direction: str
    policy: str
    field: str
    reason: str


@dataclass(frozen=True)
class Direction:
    """One direction of one pod: ``isolated`` by some policy, and then open only to ``grants``."""

    isolated: bool
    grants: tuple[Grant, ...]

    def admits(self, ip, port: int, protocol: str) -> bool:
        return not self.isolated or any(g.admits(ip, port, protocol) for g in self.grants)


OPEN = Direction(False, ())


@dataclass(frozen=True)
class Access:
    """What ``pod`` may receive (``ingress``) and send (``egress``), and what was refused."""

    pod: Pod
    ingress: Direction
    egress: Direction
    refusals: tuple[Refusal, ...]


def access(cluster: Cluster, pod: Pod, memo: dict | None = None) -> Access:
    """The access of one pod of ``cluster``; ``memo`` keeps the peers resolved for other pods of
    the same cluster (``node_access`` shares one)."""
    memo = {} if memo is None else memo
    refusals: list[Refusal] = []
    ingress = _direction(cluster, pod, INGRESS, refusals, memo)
    egress = _direction(cluster, pod, EGRESS, refusals, memo)
    return Access(pod, ingress, egress, tuple(refusals))


def node_access(cluster: Cluster, node: str, memo: dict | None = None) -> tuple[Access, ...]:
    """The access of every pod with an address on ``node``, in pod order (namespace, name).
    ``memo``: the peers already resolved and each pod's access, valid while the cluster's pods
    and namespaces are the same (a peer's pods do not depend on the policies; a pod's access
    depends on the policies of its own namespace alone)."""
    pods = sorted((p for p in cluster.pods if p.node == node and p.ip is not None), key=lambda p: p.key)
    memo = {} if memo is None else memo
    out = []
    for pod in pods:
        policies = cluster.policies_in(pod.namespace)
        kept = memo.get(("access", pod.key))
        if kept is None or kept[0] != policies:
            kept = memo[("access", pod.key)] = (policies, access(cluster, pod, memo))
        out.append(kept[1])
    return tuple(out)


def allows(cluster: Cluster, src_ip: str, dst_ip: str, port: int, protocol: str) -> tuple[bool, bool]:
    """``(ingress, egress)`` for one packet: whether the destination pod's ingress and the source
    pod's egress let it through (an address no pod holds has no policy: its side allows). A pod
    reaching its own address is loopback, allowed both ways."""
    src, dst = ipaddress.ip_address(src_ip), ipaddress.ip_address(dst_ip)
    if src == dst:
        return True, True
    src_pod, dst_pod = cluster.pod_at(src), cluster.pod_at(dst)
    ingress = dst_pod is None or _direction(cluster, dst_pod, INGRESS, [], {}).admits(src, port, protocol)
    egress = src_pod is None or _direction(cluster, src_pod, EGRESS, [], {}).admits(dst, port, protocol)
    return ingress, egress


# ---------------------------------------------------------------- one direction
#
# Inside, peers are address spans ``(family, first, last)`` (``addresses.spans``), merged and
# turned into CIDRs once per grant at the end: CIDR objects by the thousand cost seconds.


def _selecting(cluster: Cluster, pod: Pod, direction: str) -> list[Policy]:
    return [
        pol
        for pol in cluster.policies_in(pod.namespace)
        if getattr(pol, direction) is not None and pol.selector.matches(pod.labels)
    ]


def _direction(cluster: Cluster, pod: Pod, direction: str, refusals: list[Refusal], memo: dict) -> Direction:
    policies = _selecting(cluster, pod, direction)
    if not policies:
        return OPEN
    grants: list[tuple] = []
    for pol in policies:
        for i, rule in enumerate(getattr(pol, direction)):
            where = f"spec.{direction}[{i}]"
            grants.extend(_rule_grants(cluster, pod, pol, rule, direction, where, refusals, memo))
    return Direction(True, _normal(grants))


def _rule_grants(
    cluster: Cluster,
    pod: Pod,
    pol: Policy,
    rule: Rule,
    direction: str,
    where: str,
    refusals: list[Refusal],
    memo: dict,
) -> list[tuple]:
    """The grants of one rule as ``(protocol, ports, spans)``: each usable port entry × the
    peers (no ports: one grant of every protocol and port)."""
    targets = [_target(cluster, pol.namespace, peer, memo) for peer in rule.peers] or [(None, None)]
    if not rule.ports:
        return [(None, None, _union(targets))]
    out = []
    for j, pp in enumerate(rule.ports):
        if pp.protocol not in EXPRESSIBLE:
            refusals.append(
                Refusal(
                    pod.key,
                    direction,
                    pol.key,
                    f"{where}.ports[{j}].protocol",
                    f"{pp.protocol} cannot be expressed as an HNS ACL (only TCP and UDP): its traffic stays denied",
                )
            )
            continue
        if not isinstance(pp.port, str):
            out.append((pp.protocol, _numeric(pp), _union(targets)))
        elif direction == INGRESS:  # the subject is the destination: its own port names
            number = pod.named_port(pp.port, pp.protocol)
            if number is not None:
                out.append((pp.protocol, ((number, number),), _union(targets)))
        else:  # resolved per destination pod, the same for every subject: once per peers and port
            key = ("named", pol.namespace, rule.peers, pp)
            if key not in memo:
                memo[key] = _named_egress(cluster, pp, targets)
            out.extend(memo[key])
    return out


def _numeric(pp: PolicyPort) -> tuple[tuple[int, int], ...] | None:
    if pp.port is None:
        return None
    return ((pp.port, pp.end_port if pp.end_port is not None else pp.port),)


def _named_egress(cluster: Cluster, pp: PolicyPort, targets) -> list[tuple]:
    """Egress to a named port: each destination pod among the peers, on its own port of that
    name (pods whose port of that name has one number share a grant)."""
    by_number: dict[int, list] = {}
    for peer_pods, spans in targets:
        candidates = peer_pods if peer_pods is not None else _pods_within(cluster, spans)
        for p in candidates:
            number = p.named_port(pp.port, pp.protocol)
            if number is not None:
                by_number.setdefault(number, []).append(_span(p))
    return [(pp.protocol, ((n, n),), addresses.merge(spans)) for n, spans in sorted(by_number.items())]


def _span(pod: Pod) -> tuple[int, int, int]:
    return (pod.ip.version, int(pod.ip), int(pod.ip))


def _pods_within(cluster: Cluster, spans) -> list[Pod]:
    if spans is None:
        return [p for p in cluster.pods if p.ip is not None]
    return [
        p
        for p in cluster.pods
        if p.ip is not None and any(f == p.ip.version and a <= int(p.ip) <= b for f, a, b in spans)
    ]


def _target(cluster: Cluster, namespace: str, peer, memo: dict) -> tuple[list[Pod] | None, tuple | None]:
    """A peer's (pods, or None for an ipBlock) and their address spans, resolved once per
    namespace and peer."""
    key = (namespace, peer)
    found = memo.get(key)
    if found is None:
        found = memo[key] = _resolve(cluster, namespace, peer)
    return found


def _resolve(cluster: Cluster, namespace: str, peer) -> tuple[list[Pod] | None, tuple]:
    if peer.ip_block is not None:
        block = peer.ip_block
        return None, addresses.cut(addresses.spans([block.cidr]), addresses.spans(block.excepts))
    if peer.namespaces is None:
        names = [namespace]
    else:
        names = [n for n in cluster.namespaces_of_pods() if peer.namespaces.matches(cluster.namespace_labels(n))]
    pods = [p for n in names for p in cluster.pods_in(n) if p.ip is not None and peer.pods.matches(p.labels)]
    return pods, addresses.merge(_span(p) for p in pods)


def _union(targets) -> tuple | None:
    if any(spans is None for _, spans in targets):
        return None
    return addresses.merge(s for _, spans in targets for s in spans)


# ---------------------------------------------------------------- normal form


def normalise(grants: Iterable[Grant]) -> tuple[Grant, ...]:
    """The same traffic in a normal form, so equal access compares equal and renders the same
    rules: grants of one protocol and ports merge their peers, grants of one protocol and peers
    merge their ports, until nothing merges; a grant with no peer goes; sorted."""
    return _normal([(g.protocol, g.ports, None if g.peers is None else addresses.spans(g.peers)) for g in grants])


def _normal(raw: list[tuple]) -> tuple[Grant, ...]:
    current = [(protocol, ports, None if spans is None else addresses.merge(spans)) for protocol, ports, spans in raw]
    current = [g for g in current if g[2] is None or g[2]]
    while True:
        merged = _merge_ports(_merge_peers(current))
        if len(merged) == len(current):
            break
        current = merged
    merged.sort(key=lambda g: (g[0] or "", g[1] or (), g[2] is not None, g[2] or ()))
    return tuple(Grant(protocol, ports, _networks(spans)) for protocol, ports, spans in merged)


@functools.lru_cache(maxsize=4096)
def _networks(spans: tuple | None) -> tuple | None:
    """Spans as CIDRs; the pods of one node share most peer sets, so each is converted once."""
    return None if spans is None else addresses.networks(spans)


def _merge_peers(grants: list[tuple]) -> list[tuple]:
    groups: dict = {}
    for protocol, ports, spans in grants:
        ports = None if ports is None else addresses.merge_ranges(ports)
        groups.setdefault((protocol, ports), []).append(spans)
    return [(protocol, ports, _merged(sets)) for (protocol, ports), sets in groups.items()]


def _merged(sets: list) -> tuple | None:
    if None in sets:
        return None
    return sets[0] if len(sets) == 1 else addresses.merge(s for p in sets for s in p)


def _merge_ports(grants: list[tuple]) -> list[tuple]:
    groups: dict = {}
    for protocol, ports, spans in grants:
        groups.setdefault((protocol, spans), []).append(ports)
    return [
        (protocol, None if None in sets else addresses.merge_ranges(r for p in sets for r in p), spans)
        for (protocol, spans), sets in groups.items()
    ]
