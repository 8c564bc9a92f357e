"""The parity scenarios: what wincni, flanneld and kube-proxy ask of HNS, each written once
against the raw API (``session.Session``) and run on every backend.

A scenario checks only what any HNS must show (the object is there, the fields we sent come
back, it is gone after its delete); everything else HNS answers is in the transcript, which the
parity report compares with the simulator's field by field. What HNS may refuse is asked and
recorded, never assumed: if HNS takes it, what it made is removed like the rest.

The documents are the ones our code and our neighbours send: the networks as flanneld makes them
(host-gw: V1 L2Bridge and its host endpoint; vxlan: V2 Overlay with VSID, HostRoute and
RemoteSubnetRoute), pod endpoints as ``plugins/winnet`` builds them (OutBoundNAT with
exceptions, SDNRoute/ROUTE, ProviderAddress/PA, port mappings, the ACL shapes
``plugins/winnet/acls.py`` emits), kube-proxy's remote endpoints and load balancers
(``tests/data/kubeproxy``), V1 policy lists. Addresses are from 198.18.0.0/15 (benchmarking,
RFC 2544) so no network of a real node is in the way; remote provider addresses are
documentation addresses (RFC 5737).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..session import Session
from .endpoints import endpoint_overlay, endpoint_remote, endpoint_v1, endpoint_v2
from .loadbalancers import loadbalancer
from .networks import hns_version, namespace, network_l2bridge, network_l2bridge_v1, network_overlay
from .policies import acl_v1, acl_v2, refusals


@dataclass(frozen=True)
class Scenario:
    """``adapter``: it binds a network to a host adapter (run on real HNS only on one the
    operator named)."""

    name: str
    what: str
    run: Callable[[Session], None]
    adapter: bool = True


SCENARIOS = (
    Scenario("hns-version", "HNS's version (GET /globals/version)", hns_version, adapter=False),
    Scenario("namespace", "a namespace made, shown, deleted", namespace, adapter=False),
    Scenario(
        "network-l2bridge", "L2Bridge network (HCN): create, query V2 and V1, find by name, delete", network_l2bridge
    ),
    Scenario(
        "network-l2bridge-v1", "flanneld host-gw: L2Bridge and its host endpoint through HNSCall", network_l2bridge_v1
    ),
    Scenario("network-overlay", "flanneld vxlan: Overlay with VSID, HostRoute, RemoteSubnetRoute", network_overlay),
    Scenario(
        "endpoint-v2", "a containerd pod's endpoint: OutBoundNAT, SDNRoute, PortMapping, namespace attach", endpoint_v2
    ),
    Scenario("endpoint-v1", "a dockershim pod's endpoint through HNSCall: OutBoundNAT, ROUTE, NAT", endpoint_v1),
    Scenario(
        "endpoint-overlay",
        "a win-overlay pod's endpoint, V2 and V1: PA, loopback DSR, a port mapping on a host IP",
        endpoint_overlay,
    ),
    Scenario("endpoint-remote", "kube-proxy's remote endpoints: V2 Flags 1 + ProviderAddress, V1 PA", endpoint_remote),
    Scenario("acl-v2", "every ACL shape acls.py emits, HCN", acl_v2),
    Scenario("acl-v1", "every ACL shape acls.py emits, HNSCall", acl_v1),
    Scenario(
        "loadbalancer", "kube-proxy's load balancers (ClusterIP, NodePort, DSR) and a V1 policy list", loadbalancer
    ),
    Scenario("refusals", 'ACL enum casing, an "Any" address, an address outside the subnet, a name taken', refusals),
)
BY_NAME = {s.name: s for s in SCENARIOS}
