"""A pod's NetworkPolicy access (``model.Access``) as HNS ACL rules on its endpoint, pure and in a
stable order: the same access and node addresses give the same rules in the same order, so a
caller can compare what it wants with what HNS holds and skip an apply that changes nothing (each
re-apply can reset live TCP connections on a real node).

The rules sit in the priority bands ``plugins.winnet.acls`` lays out (lower first, the first
match ends the walk; its comment is the layout), all ``Switch`` (VFP) rules unless said:

- ``NODE_PRIORITY`` (2000), Allow: in from the node's own addresses (kubelet probes; Azure NPM
  #1881 broke exactly this) and from the pod's own address, out to the pod's own address
  (loopback is not subject to policy);
- ``POLICY_PRIORITY`` (3000), Allow: one rule per grant of each isolated direction, per chunk of
  its peers and ports; the initiating direction only (HNS ACLs are stateful: a real ``vfpctrl``
  dump shows "terminating stateful" rules, so replies pass);
- ``ISOLATION_PRIORITY`` (4000), Block: ends an isolated direction;
- ``DEFAULT_PRIORITY`` (65500), Allow: a direction no policy isolates (once any ACL is on an
  endpoint HNS denies what no rule allows: Windows-Containers#616), and one ``Host`` (WFP) Allow
  each way, as Calico ("Required by l2bridge network") and Azure NPM add.

So no two rules of one priority have different actions. Address and port lists are cut at
``MAX_LIST`` entries per rule: Calico cuts at 4000 on Microsoft's advice of "a few thousand" and
runs so at scale, the only bound tried in the field; peers are collapsed into CIDRs first, so a
list is long only for scattered pods. A rule holds one address family. What the rules need of
HNS (address lists and port ranges: HNS 7.2, as hcsshim gates them) each ``AclRule`` lists in
``needs``; ``plugins.winnet.acls.unsupported`` names what a node's HNS lacks.
"""

from __future__ import annotations

import functools
import ipaddress

from plugins.netpol import addresses
from plugins.netpol.model import Access, Direction
from plugins.winnet.acls import (
    DEFAULT_PRIORITY,
    ISOLATION_PRIORITY,
    NODE_PRIORITY,
    POLICY_PRIORITY,
    AclRule,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Iterable, Sequence

#: The most addresses, or ports, one rule lists.
MAX_LIST = 4000
_PROTOCOLS = {"TCP": 6, "UDP": 17}
_DIRECTIONS = (("In", "ingress"), ("Out", "egress"))


def endpoint_rules(access: Access, node_addresses: Sequence) -> tuple[AclRule, ...]:
    """Every ACL rule ``access.pod``'s endpoint gets, ``node_addresses`` being the node's own
    (address objects or text), in priority order and within one priority in a fixed order."""
    own = addresses.collapse([_host(access.pod.ip)])
    node = addresses.collapse([_host(a) for a in node_addresses] + list(own))
    rules = [
        *_allows("In", NODE_PRIORITY, None, None, node),
        *_allows("Out", NODE_PRIORITY, None, None, own),
    ]
    for hns_direction, name in _DIRECTIONS:
        rules += _policy_rules(hns_direction, getattr(access, name))
    for hns_direction, name in _DIRECTIONS:
        if getattr(access, name).isolated:
            rules.append(AclRule("Block", hns_direction, priority=ISOLATION_PRIORITY, rule_type="Switch"))
    for hns_direction, name in _DIRECTIONS:
        if not getattr(access, name).isolated:
            rules.append(AclRule("Allow", hns_direction, priority=DEFAULT_PRIORITY, rule_type="Switch"))
    for hns_direction, _ in _DIRECTIONS:
        rules.append(AclRule("Allow", hns_direction, priority=DEFAULT_PRIORITY, rule_type="Host"))
    return tuple(rules)


def endpoint_acls(access: Access, node_addresses: Sequence, form) -> list[dict]:
    """The rules as ACL policy documents in ``form`` (``plugins.winnet.policies.V1`` / ``V2``)."""
    return [rule.render(form) for rule in endpoint_rules(access, node_addresses)]


def _host(ip):
    return ipaddress.ip_network(ip)


def _policy_rules(hns_direction: str, direction: Direction) -> list[AclRule]:
    if not direction.isolated:
        return []
    out = []
    for grant in direction.grants:
        protocol = None if grant.protocol is None else _PROTOCOLS[grant.protocol]
        out += _allows(hns_direction, POLICY_PRIORITY, protocol, grant.ports, grant.peers)
    return out


def _allows(hns_direction: str, priority: int, protocol, ports, peers) -> list[AclRule]:
    """Allow rules for ``peers`` (None: any address) on ``ports`` (None: any), one per family,
    address chunk and port chunk. Ports are the pod's own in (local) and the peer's out (remote)."""
    port_texts = [f"{a}-{b}" if a != b else str(a) for a, b in ports] if ports is not None else []
    families: Iterable = [None] if peers is None else _families(peers)
    out = []
    for family in families:
        for chunk in addresses.chunks(family or [], MAX_LIST):
            for port_chunk in addresses.chunks(port_texts, MAX_LIST):
                listed = ",".join(port_chunk)
                out.append(
                    AclRule(
                        "Allow",
                        hns_direction,
                        protocol,
                        local_ports=listed if hns_direction == "In" else "",
                        remote_ports=listed if hns_direction == "Out" else "",
                        remote_addresses=_listed(chunk),
                        priority=priority,
                        rule_type="Switch",
                    )
                )
    return out


@functools.lru_cache(maxsize=4096)
def _listed(chunk: tuple) -> str:
    """A chunk of peers as HNS lists them; the pods of one node share most, so each is written once."""
    return ",".join(addresses.text(n) for n in chunk)


def _families(peers) -> list[list]:
    return [fam for fam in ([n for n in peers if n.version == 4], [n for n in peers if n.version == 6]) if fam]
