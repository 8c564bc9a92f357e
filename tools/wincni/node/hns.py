"""HNS's side of the node as the commands read it: its version and features, the pods' network
and its endpoints (the stale ones among them), and every object of the node (``Inventory``);
a failure is a ``Problem``, never an exception."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from tools.wincni.node.source import LIVE, LiveNode, Problem


@dataclass(frozen=True)
class Inventory:
    """Every HNS object of the node, not only the pods' network's, for the metrics and the checks
    of kube-proxy's state: networks (V1: ``HNSNetwork`` answers as ``HostComputeNetwork`` does),
    V2 load balancers, and V1 endpoints (the view that also says which sandbox holds each;
    ``is_remote`` marks another node's pod). ``policy_lists``: the V1 documents of ``GET
    /policylists/``, None where HNS does not serve them."""

    networks: tuple = ()
    endpoints: tuple = ()
    load_balancers: tuple = ()
    policy_lists: tuple | None = None

    @property
    def remote_endpoints(self) -> tuple:
        return tuple(e for e in self.endpoints if e.is_remote)

    @property
    def unreferenced_remote_endpoints(self) -> tuple:
        """Remote endpoints no load balancer lists (networkhealth.ps1's StaleRemoteEndpoints):
        kube-proxy deletes one when its last load balancer goes, so these were left behind. On
        overlay kube-proxy also makes one for each Service VIP, which that Service's load
        balancer serves as a frontend: that one is in use, and so it is before the Service has a
        load balancer (none while no endpoint of it is ready): it holds this node's provider
        address, and kube-proxy deletes it with the Service. Each test is a set lookup (IDs as
        HNS compares them, ``guid.normalize``): a node holds thousands of each."""
        from libhns.guid import normalize

        used = {normalize(e) for lb in self.load_balancers for e in lb.backend_ids}
        vips = {v for lb in self.load_balancers for v in lb.vips}
        own = {(normalize(n.id), n.management_ip) for n in self.networks if n.id and n.management_ip}
        return tuple(
            r
            for r in self.remote_endpoints
            if not (r.id and normalize(r.id) in used)
            and not vips.intersection(r.ip_addresses)
            and not (r.network_id and (normalize(r.network_id), r.provider_address) in own)
        )


def read_hns(env: Mapping[str, str], name: str, endpoints: bool = True, source: LiveNode = LIVE) -> dict[str, Any]:
    """HNS's side of the facts, by field: version, features, the network named ``name``, its
    endpoints and the stale ones among them, and the node's ``Inventory`` (unless not
    ``endpoints``: the readiness probe's few calls); or only ``hns_problem``."""
    from libhns.errors import EnvError, HnsError

    try:
        hcn, hnscall = source.clients(env)
        version, features = hnscall.version(), hnscall.features()
        network = hcn.get_network_by_name(name) if name else None
        found, stale, inventory = (), (), None
        if endpoints:
            from libhns.objects import same_id
            from plugins.winnet.hnsapi import HnsV1Api
            from plugins.winnet.stale import left_behind

            every = hnscall.list_endpoints()  # once: the V1 view also says which sandbox holds each
            inventory = read_inventory(hcn, hnscall, every)
            if network is not None:
                # the pods' side: remote endpoints are kube-proxy's (checks.proxy judges them)
                eps = [ep for ep in every if same_id(ep.virtual_network, network.id) and not ep.is_remote]
                found = tuple((ep.name or "", tuple(ep.ip_addresses)) for ep in eps)
                v1 = HnsV1Api(hcn=hcn, hnscall=hnscall, container_id="", netns="")
                stale = tuple((ep.name, ep.id, tuple(ep.ip_addresses)) for ep in left_behind(v1, eps, name))
    except EnvError as err:
        return {"hns_problem": Problem(f"cannot query HNS: {err}", "fix or unset the variable")}
    except (HnsError, OSError) as err:
        fix = "replay a bundle that holds it" if source.replayed else "is the hns service running? (Get-Service hns)"
        return {"hns_problem": Problem(f"cannot query HNS: {err}", fix)}
    return {
        "hns_version": version,
        "features": features,
        "network": network,
        "endpoints": found,
        "stale_endpoints": stale,
        "inventory": inventory,
    }


def read_inventory(hcn: Any, hnscall: Any, endpoints: list) -> Inventory | None:
    """The node's networks, load balancers and policy lists beside ``endpoints``, each kind in
    one HNSCall listing whatever their number: V1 networks (they answer what the checks ask as
    V2's do), and the load balancers read from the policy lists (``libhns.policylist``); where HNS
    does not serve policy lists, HCN's load balancers one by one. None when HNS will not list the
    networks (the checks of the pods' network do not need them)."""
    from libhns.errors import HnsError

    try:
        networks = tuple(hnscall.list_networks())
    except HnsError:
        return None
    try:
        lists = tuple(hnscall.list_policy_lists())
    except HnsError:  # HNS without V1 policy lists: kube-proxy's check of them says so
        lists = None
    try:
        balancers = tuple(hcn.list_load_balancers()) if lists is None else load_balancers_of(lists)
    except HnsError:
        return None
    return Inventory(networks, tuple(endpoints), balancers, lists)


def load_balancers_of(lists: tuple) -> tuple:
    """The V2 load balancers the policy lists ``lists`` are (a list of anything but ELB policies
    is none)."""
    from libhns.objects import HostComputeLoadBalancer
    from libhns.policylist import document, elbs

    return tuple(HostComputeLoadBalancer.from_json(document(p)) for p in lists if isinstance(p, dict) and elbs(p))
