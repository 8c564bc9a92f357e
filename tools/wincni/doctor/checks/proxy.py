"""``wincni doctor``'s checks of kube-proxy's side of HNS: its load balancers, the remote endpoints
it makes for other nodes' pods, its V1 policy lists and its source VIP, weighed against the pods'
network and config. Each is a pure function of ``NodeFacts`` -> ``Check`` (``registry.CHECKS`` runs them).

kube-proxy's state is read from ``NodeFacts.inventory`` (every network, endpoint and load balancer of
the node). Before kube-proxy has programmed any load balancer there is nothing of its to judge:
the load-balancer checks then pass and say so.
"""

from __future__ import annotations

from typing import Any

from tools.wincni.doctor.facts import NodeFacts
from tools.wincni.judge import addresses
from tools.wincni.judge.verdict import AFTER_FAILURE, FAIL, OK, SKIP, WARN, Check, command_line

#: What mends kube-proxy's own state: at start it deletes every load balancer and programs them
#: again from the Services it reads (kubernetes pkg/proxy/winkernel).
RESTART = (
    "restart kube-proxy: at start it deletes every load balancer and programs each Service again "
    "(delete this node's kube-proxy pod, kubectl -n kube-system delete pod <its name>; or "
    "Restart-Service kube-proxy where it runs as a service)"
)
PROTOCOLS = {6: "TCP", 17: "UDP"}
DNS_PORT = 53
#: networkhealth.ps1's healthy V1 policy list State.
POLICY_LIST_HEALTHY = 2


def _not_read(id_: str) -> Check:
    return Check(id_, SKIP, "not checked: HNS's objects were not read", AFTER_FAILURE)


def _inventory(f: NodeFacts, id_: str) -> tuple[Any, Check | None]:
    """(the inventory, None) when kube-proxy has programmed something to judge; else (None, the
    check's verdict): not checked when HNS was not read, passed when it holds no load balancer."""
    inv = f.inventory
    if inv is None:
        return None, _not_read(id_)
    if not inv.load_balancers:
        return None, Check(id_, OK, "no load balancer yet: kube-proxy has programmed none")
    return inv, None


def _id(text: Any) -> str:
    return str(text or "").strip("{}").upper()


def _command(f: NodeFacts, *args: Any) -> str:
    return command_line(f.windows, f.tools, "hnsctl", *map(str, args))


def frontends(lb: Any) -> list[tuple[str, int, str]]:
    """(VIP, port, protocol) of each frontend a load balancer serves; "" for the node's own
    addresses (a NodePort's, with no VIP). A recorded document is read as found: a field that is
    not what HNS writes is shown as it is, never raised on."""
    from basics.jsonci import get_ci

    vips = lb.vips or [""]
    ports = [(_number(get_ci(m, "ExternalPort")), _protocol(get_ci(m, "Protocol"))) for m in lb.mappings]
    return [(vip, port, proto) for vip in vips for port, proto in ports]


def _number(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _protocol(value: Any) -> str:
    return PROTOCOLS.get(value, str(value)) if isinstance(value, int) else str(value)


def describe(lb: Any) -> str:
    """A load balancer as an operator finds it again: its ID and what it serves."""
    served = ", ".join(f"{vip or 'node port'} {port}/{proto}" for vip, port, proto in frontends(lb))
    return f"{lb.id} ({served or 'no port'})"


def lb_backends(f: NodeFacts) -> Check:
    """A load balancer listing a backend endpoint HNS no longer has: the Service's traffic to it
    goes nowhere, and kube-proxy, which keeps its own list, does not notice (kubernetes #113524
    and #131466; networkhealth.ps1 "load balancer endpoints exist")."""
    inv, early = _inventory(f, "lb-backends")
    if early is not None:
        return early
    have = {_id(e.id) for e in inv.endpoints}
    broken = [
        (lb, missing) for lb in inv.load_balancers if (missing := [e for e in lb.backend_ids if _id(e) not in have])
    ]
    if broken:
        return Check(
            "lb-backends",
            FAIL,
            "; ".join(f"load balancer {describe(lb)} lists endpoint(s) HNS does not have: {', '.join(missing)}"
                      for lb, missing in broken),
            RESTART,
        )  # fmt: skip
    return Check("lb-backends", OK, f"every backend of the {len(inv.load_balancers)} load balancer(s) exists")


def policy_lists(f: NodeFacts) -> Check:
    """A V1 policy list (the V1 view of a load balancer) in a State other than 2: networkhealth.ps1
    counts only State 2 as healthy; HNS did not finish programming it."""
    inv, early = _inventory(f, "policy-lists")
    if early is not None:
        return early
    if inv.policy_lists is None:
        return Check(
            "policy-lists",
            SKIP,
            "not checked: HNS does not serve V1 policy lists (GET /policylists/)",
            "winkernel kube-proxy needs them to start: update Windows if kube-proxy says "
            '"Windows kernel is not compatible for Kernel mode"',
        )
    from basics.jsonci import get_ci

    bad = [p for p in inv.policy_lists if isinstance(p, dict) and get_ci(p, "State") not in (None, POLICY_LIST_HEALTHY)]
    if bad:
        return Check(
            "policy-lists",
            FAIL,
            "; ".join(
                f"policy list {get_ci(p, 'ID')} is in State {get_ci(p, 'State')}, not {POLICY_LIST_HEALTHY}"
                for p in bad
            ),
            RESTART,
        )
    return Check("policy-lists", OK, f"{len(inv.policy_lists)} policy list(s), each in State {POLICY_LIST_HEALTHY}")


def stale_remote_endpoints(f: NodeFacts) -> Check:
    """Remote endpoints no load balancer lists (networkhealth.ps1 StaleRemoteEndpoints;
    Windows-Containers #631, kubernetes #135144): kube-proxy deletes one when the last load
    balancer using it goes, so these were left behind, and they keep another node's pod address."""
    inv, early = _inventory(f, "stale-remote-endpoints")
    if early is not None:
        return early
    stale = inv.unreferenced_remote_endpoints
    if not stale:
        return Check(
            "stale-remote-endpoints",
            OK,
            f"every remote endpoint ({len(inv.remote_endpoints)}) has a load balancer or is a Service VIP's",
        )
    return Check(
        "stale-remote-endpoints",
        WARN,
        f"{len(stale)} remote endpoint(s) no load balancer lists: " + "; ".join(_endpoint(e) for e in stale),
        "kube-proxy makes them again for the Services that need them; this deletes them",
        _command(f, "endpoint", "delete", *(e.id for e in stale)),
    )


def _endpoint(e: Any) -> str:
    return f"{e.name or 'unnamed'} ({e.id}, {', '.join(e.ip_addresses) or 'no address'})"


def pod_subnets(f: NodeFacts) -> addresses.AddressSet:
    """This node's pod subnets: flanneld's lease, else the pods' HNS network's subnets."""
    lease = f.lease
    if lease is not None and lease.subnet is not None:
        return addresses.AddressSet(str(s) for s in (lease.subnet, lease.ipv6_subnet) if s is not None)
    return (
        addresses.AddressSet(s.prefix for s in f.network.subnets) if f.network is not None else addresses.AddressSet(())
    )


def remote_endpoint_addresses(f: NodeFacts) -> Check:
    """A remote endpoint (another node's pod) whose address is a local pod's or lies in this node's
    pod subnet: no other node's pod has one, and kube-proxy, keying endpoints by address, may delete
    the local pod's endpoint with it (kubernetes #130963, PR #131138). Remote endpoints for Service
    VIPs (overlay) and other nodes' subnets lie outside it and are right."""
    inv = f.inventory
    if inv is None:
        return _not_read("remote-endpoint-addresses")
    local = {ip for e in inv.endpoints if not e.is_remote for ip in e.ip_addresses}
    subnets = pod_subnets(f)
    wrong = [e for e in inv.remote_endpoints if any(ip in local or ip in subnets for ip in e.ip_addresses)]
    if not wrong:
        return Check(
            "remote-endpoint-addresses",
            OK,
            f"no remote endpoint ({len(inv.remote_endpoints)}) holds an address of this node's pods",
        )
    return Check(
        "remote-endpoint-addresses",
        FAIL,
        "remote endpoint(s) with an address of this node's pods: " + "; ".join(_endpoint(e) for e in wrong),
        "an address of this node's pod subnet is never another node's pod (kube-proxy made it from an old "
        "EndpointSlice, or before this node's lease changed): this deletes it; if it comes back, " + RESTART,
        _command(f, "endpoint", "delete", *(e.id for e in wrong)),
    )


def duplicate_load_balancers(f: NodeFacts) -> Check:
    """Two load balancers for the same frontend VIP, port and protocol. HNS refuses to create the
    second ("port already exists", PR #137530), so two in its documents mean its own state went
    wrong, as around a restart whose restore brought old load balancers back (kubernetes #139519,
    PR #139503): HNS balances over one of them, and kube-proxy's creates fail."""
    inv, early = _inventory(f, "duplicate-load-balancers")
    if early is not None:
        return early
    seen: dict[tuple[str, int, str], list[str]] = {}
    for lb in inv.load_balancers:
        for frontend in dict.fromkeys(frontends(lb)):
            seen.setdefault(frontend, []).append(str(lb.id))
    twice = {k: ids for k, ids in seen.items() if len(ids) > 1}
    if twice:
        return Check(
            "duplicate-load-balancers",
            FAIL,
            "; ".join(f"{vip or 'node port'} {port}/{proto} has {len(ids)} load balancers: {', '.join(ids)}"
                      for (vip, port, proto), ids in twice.items()),
            RESTART,
        )  # fmt: skip
    return Check("duplicate-load-balancers", OK, f"each of {len(seen)} frontend(s) has one load balancer")


def dns_load_balancer(f: NodeFacts) -> Check:
    """No load balancer with a backend for the cluster DNS address on port 53, UDP and TCP, once
    kube-proxy has programmed any: pods cannot resolve names (kubernetes #100126; networkhealth.ps1
    checks it, and Microsoft's hnsautomitigator restarts kube-proxy for it). The address is the one
    the pods get: the config's DNS nameservers, which wincni install takes from the kubelet's clusterDNS."""
    if f.netconf is None:
        return Check("dns-load-balancer", SKIP, "not checked: no valid delegate config", AFTER_FAILURE)
    servers = [s for s in f.netconf.dns.nameservers if (ip := addresses.address(s)) is not None and ip.version == 4]
    inv, early = _inventory(f, "dns-load-balancer")
    if early is not None:
        return early
    if not servers:
        return Check(
            "dns-load-balancer",
            SKIP,
            f"not checked: {f.conf_path} names no DNS server",
            "wincni install writes the kubelet's clusterDNS into the config's \"dns\"",
        )
    served = {fe for lb in inv.load_balancers if lb.backend_ids for fe in frontends(lb)}
    missing = [f"{ip} {DNS_PORT}/{p}" for ip in servers for p in ("UDP", "TCP") if (ip, DNS_PORT, p) not in served]
    if missing:
        return Check(
            "dns-load-balancer",
            FAIL,
            f"no load balancer with a backend for the cluster DNS {', '.join(missing)}: pods cannot resolve names",
            RESTART + "; if it stays missing, the kube-dns Service has no ready endpoint "
            "(kubectl -n kube-system get endpointslices -l k8s-app=kube-dns)",
        )
    return Check(
        "dns-load-balancer", OK, f"cluster DNS {', '.join(servers)} has load balancers on {DNS_PORT} UDP and TCP"
    )


def old_network(f: NodeFacts) -> Check:
    """kube-proxy's objects left from before the network was recreated, as far as HNS's documents
    say: a remote endpoint naming a network that no longer exists; a load balancer whose backends
    are on one, or whose V1 policy list names one (HNS shows a load balancer's network only
    there). kube-proxy forgets its objects when the network's ID changes; HNS keeps them. (A load
    balancer whose backends are gone is lb-backends' finding.)"""
    from basics.jsonci import get_ci

    inv = f.inventory
    if inv is None:
        return _not_read("old-network")
    networks = {_id(n.id) for n in inv.networks}
    gone = [e for e in inv.endpoints if _id(e.network_id) not in networks]
    remote = [e for e in gone if e.is_remote]
    on_gone = {_id(e.id) for e in gone}
    lists = {
        _id(get_ci(p, "ID"))
        for p in inv.policy_lists or ()
        if isinstance(p, dict)
        and get_ci(p, "HostComputeNetwork")
        and _id(get_ci(p, "HostComputeNetwork")) not in networks
    }
    lbs = [lb for lb in inv.load_balancers if _id(lb.id) in lists or any(_id(e) in on_gone for e in lb.backend_ids)]
    if not remote and not lbs:
        return Check("old-network", OK, "no remote endpoint or load balancer names a network HNS no longer has")
    found = [f"remote endpoint {_endpoint(e)} is on network {e.network_id}, which no longer exists" for e in remote]
    found += [f"load balancer {describe(lb)} is on a network that no longer exists" for lb in lbs]
    if lbs:
        return Check("old-network", FAIL, "; ".join(found), RESTART)
    return Check(
        "old-network",
        WARN,
        "; ".join(found),
        "nothing uses them (kube-proxy forgot them with the old network): this deletes them",
        _command(f, "endpoint", "delete", *(e.id for e in remote)),
    )


def source_vip_in_hns(f: NodeFacts, vip: str) -> Check | None:
    """What HNS says of kube-proxy's source VIP ``vip`` (the file's, already judged right), once
    it has programmed load balancers on an overlay network: its endpoint (kube-proxy makes it at
    start: local, unnamed) is on the network, and its load balancers use that address (or the node's,
    which kube-proxy takes for backends outside the cluster's pods), not one of an earlier pod
    subnet (sig-windows-tools #250, kubernetes #100962). None when that holds."""
    inv = f.inventory
    if inv is None or not inv.load_balancers or f.delegate_type != "win-overlay":
        return None
    if not any(vip in ips for _, ips in f.endpoints):
        return Check(
            "source-vip",
            FAIL,
            f"kube-proxy has programmed load balancers, but no endpoint on {f.name} holds its source VIP {vip}",
            RESTART + f" (it makes the source VIP's endpoint at start, with --source-vip={vip})",
        )
    node_ip = (f.network.management_ip or "") if f.network is not None else ""
    others = sorted({str(lb.source_vip) for lb in inv.load_balancers if lb.source_vip not in (None, "", vip, node_ip)})
    if others:
        subnets = pod_subnets(f)
        where = ", ".join(f"{o} ({'inside' if o in subnets else 'outside'} the pod subnet)" for o in others)
        return Check(
            "source-vip",
            FAIL,
            f"kube-proxy's load balancers use source VIP {where}, not {f.source_vip_path}'s {vip}: "
            "it started before the source VIP changed",
            RESTART + f", with --source-vip={vip}",
        )
    return None
