"""Every kind of object the simulator stores, by the name HCN (or, for compute systems, HCS) gives
it, and the ones HNSCall (V1) serves, by collection: one record class each, holding HNS's rules."""

from __future__ import annotations

from libhns.sim.container import ComputeSystem
from libhns.sim.endpoint import Endpoint
from libhns.sim.loadbalancer import LoadBalancer
from libhns.sim.namespace import Namespace
from libhns.sim.network import Network

KINDS = {cls.KIND: cls for cls in (Network, Endpoint, Namespace, LoadBalancer, ComputeSystem)}
#: /networks/, /endpoints/, /namespaces/, /policylists/
V1_COLLECTIONS = {cls.V1_COLLECTION: cls for cls in (Network, Endpoint, Namespace, LoadBalancer)}
