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

import ipaddress
from dataclasses import dataclass

from plugins.netpol import addresses
from plugins.netpol.cluster import Cluster, Pod, Policy, PolicyPort, Rule

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


def access(cluster: Cluster, pod: Pod) -> Access:
    """The access of one pod of ``cluster``."""
    refusals: list[Refusal] = []
    ingress = _direction(cluster, pod, INGRESS, refusals)
    egress = _direction(cluster, pod, EGRESS, refusals)
    return Access(pod, ingress, egress, tuple(refusals))


def node_access(cluster: Cluster, node: str) -> tuple[Access, ...]:
    """The access of every pod with an address on ``node``, in pod order (namespace, name)."""
    pods = sorted((p for p in cluster.pods if p.node == node and p.ip is not None), key=lambda p: p.key)
    return tuple(access(cluster, p) for p in pods)


def allows(cluster: Cluster, src_ip: str, dst_ip: str, port: int, protocol: str) -> tuple[bool, bool]:
    """``(ingress, egress)`` for one packet: whether the destination pod's ingress and the source
    pod's egress let it through (an address no pod holds has no policy: its side allows). A pod
    reaching its own address is loopback, allowed both ways."""
    src, dst = ipaddress.ip_address(src_ip), ipaddress.ip_address(dst_ip)
    if src == dst:
        return True, True
    src_pod, dst_pod = cluster.pod_at(src), cluster.pod_at(dst)
    ingress = dst_pod is None or _direction(cluster, dst_pod, INGRESS, []).admits(src, port, protocol)
    egress = src_pod is None or _direction(cluster, src_pod, EGRESS, []).admits(dst, port, protocol)
    return ingress, egress


# ---------------------------------------------------------------- one direction


def _selecting(cluster: Cluster, pod: Pod, direction: str) -> list[Policy]:
    return [
        pol
        for pol in cluster.policies
        if pol.namespace == pod.namespace and getattr(pol, direction) is not None and pol.selector.matches(pod.labels)
    ]


def _direction(cluster: Cluster, pod: Pod, direction: str, refusals: list[Refusal]) -> Direction:
    policies = _selecting(cluster, pod, direction)
    if not policies:
        return OPEN
    grants: list[Grant] = []
    for pol in policies:
        for i, rule in enumerate(getattr(pol, direction)):
            where = f"spec.{direction}[{i}]"
            grants.extend(_rule_grants(cluster, pod, pol, rule, direction, where, refusals))
    return Direction(True, normalise(grants))


def _rule_grants(
    cluster: Cluster, pod: Pod, pol: Policy, rule: Rule, direction: str, where: str, refusals: list[Refusal]
) -> list[Grant]:
    """The grants of one rule: each usable port entry × the peers (any port: one grant)."""
    targets = _targets(cluster, pol, rule)  # (pod or None, networks) per peer; None: every address
    if not rule.ports:
        return [Grant(None, None, _union(targets))]
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
            out.append(Grant(pp.protocol, _numeric(pp), _union(targets)))
        elif direction == INGRESS:  # the subject is the destination: its own port names
            number = pod.named_port(pp.port, pp.protocol)
            if number is not None:
                out.append(Grant(pp.protocol, ((number, number),), _union(targets)))
        else:
            out.extend(_named_egress(cluster, pp, targets))
    return out


def _numeric(pp: PolicyPort) -> tuple[tuple[int, int], ...] | None:
    if pp.port is None:
        return None
    return ((pp.port, pp.end_port if pp.end_port is not None else pp.port),)


def _named_egress(cluster: Cluster, pp: PolicyPort, targets) -> list[Grant]:
    """Egress to a named port: each destination pod among the peers, on its own port of that name."""
    out = []
    for peer_pods, networks in targets:
        candidates = peer_pods if peer_pods is not None else _pods_within(cluster, networks)
        for p in candidates:
            number = p.named_port(pp.port, pp.protocol)
            if number is not None:
                out.append(Grant(pp.protocol, ((number, number),), (_host(p.ip),)))
    return out


def _pods_within(cluster: Cluster, networks) -> list[Pod]:
    return [p for p in cluster.pods if p.ip is not None and (networks is None or addresses.contains(networks, p.ip))]


def _host(ip):
    return ipaddress.ip_network(ip)


def _targets(cluster: Cluster, pol: Policy, rule: Rule) -> list[tuple[list[Pod] | None, tuple | None]]:
    """Per peer: (the pods it selects, or None for an ipBlock) and their networks; no peers: one
    target of every address."""
    if not rule.peers:
        return [(None, None)]
    out = []
    for peer in rule.peers:
        if peer.ip_block is not None:
            out.append((None, addresses.subtract(peer.ip_block.cidr, peer.ip_block.excepts)))
            continue
        pods = [
            p
            for p in cluster.pods
            if p.ip is not None
            and (
                p.namespace == pol.namespace
                if peer.namespaces is None
                else peer.namespaces.matches(cluster.namespace_labels(p.namespace))
            )
            and peer.pods.matches(p.labels)
        ]
        out.append((pods, tuple(_host(p.ip) for p in pods)))
    return out


def _union(targets) -> tuple | None:
    if any(networks is None for _, networks in targets):
        return None
    return addresses.collapse(n for _, networks in targets for n in networks)


# ---------------------------------------------------------------- normal form


def _key(grant: Grant) -> tuple:
    peers = () if grant.peers is None else tuple(addresses.order(n) for n in grant.peers)
    return (grant.protocol or "", grant.ports or (), grant.peers is not None, peers)


def normalise(grants: Iterable[Grant]) -> tuple[Grant, ...]:
    """The same traffic in a normal form, so equal access compares equal and renders the same
    rules: grants of one protocol and ports merge their peers, grants of one protocol and peers
    merge their ports, until nothing merges; a grant with no peer goes; sorted."""
    current = [g for g in grants if g.peers is None or g.peers]
    while True:
        merged = _merge_ports(_merge_peers(current))
        if len(merged) == len(current):
            return tuple(sorted(merged, key=_key))
        current = merged


def _merge_peers(grants: list[Grant]) -> list[Grant]:
    groups: dict = {}
    for g in grants:
        ports = None if g.ports is None else addresses.merge_ranges(g.ports)
        groups.setdefault((g.protocol, ports), []).append(g.peers)
    return [
        Grant(protocol, ports, None if None in sets else addresses.collapse(n for p in sets for n in p))
        for (protocol, ports), sets in groups.items()
    ]


def _merge_ports(grants: list[Grant]) -> list[Grant]:
    groups: dict = {}
    for g in grants:
        groups.setdefault((g.protocol, g.peers), []).append(g.ports)
    return [
        Grant(protocol, None if None in sets else addresses.merge_ranges(r for p in sets for r in p), peers)
        for (protocol, peers), sets in groups.items()
    ]
