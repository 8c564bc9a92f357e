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

from libhns import policies as hp

from .session import SCHEMA, Session

L2_PREFIX, L2_GATEWAY = "198.18.10.0/24", "198.18.10.1"
OVERLAY_PREFIX, OVERLAY_GATEWAY = "198.18.20.0/24", "198.18.20.1"
V1_PREFIX, V1_GATEWAY = "198.18.11.0/24", "198.18.11.1"
REMOTE_SUBNET, REMOTE_PA, REMOTE_DRMAC = "198.18.30.0/24", "192.0.2.30", "00-15-5D-30-30-30"
SERVICE_CIDR, CLUSTER_CIDR = "10.96.0.0/12", "198.18.0.0/16"
VSID = 4987  # a VXLAN network id no flanneld default (4096) takes
#: The ACL rules, in ``acls.py``'s config form: each shape it emits today (allow and block, in and
#: out, switch and host, address lists, port ranges, named and numbered protocols, rule IDs).
#: NetworkPolicy's shapes join this list as they land.
ACL_RULES = (
    {"action": "allow", "direction": "in", "protocol": "tcp", "localPorts": "80", "remoteAddresses": L2_PREFIX},
    {"action": "block", "direction": "in", "priority": 300},
    {
        "action": "allow",
        "direction": "out",
        "protocol": "udp",
        "remotePorts": "53",
        "remoteAddresses": ["10.96.0.10", "10.96.0.11"],
        "priority": 100,
    },
    {"action": "block", "direction": "out", "protocol": "tcp", "remotePorts": "8000-8080", "priority": 400},
    {"action": "allow", "direction": "in", "protocol": "icmpv4", "type": "host", "priority": 150},
    {"action": "allow", "direction": "out", "protocol": "17", "localAddresses": "198.18.10.20", "id": "parity-rule"},
)


@dataclass(frozen=True)
class Scenario:
    """``adapter``: it binds a network to a host adapter (run on real HNS only on one the
    operator named)."""

    name: str
    what: str
    run: Callable[[Session], None]
    adapter: bool = True


def _v2_network(s: Session, suffix: str, type_: str, prefix: str, gateway: str, **extra) -> dict:
    subnet = {"IpAddressPrefix": prefix, "Routes": [{"NextHop": gateway, "DestinationPrefix": "0.0.0.0/0"}]}
    if type_ == "Overlay":
        subnet["Policies"] = [hp.VSID.v2(VSID)]
    doc = {
        "Name": s.name(suffix),
        "Type": type_,
        "Ipams": [{"Type": "Static", "Subnets": [subnet]}],
        "Policies": [{"Type": "NetAdapterName", "Settings": {"NetworkAdapterName": s.adapter}}],
        "SchemaVersion": SCHEMA,
        **extra,
    }
    net = s.create("Network", doc)
    s.check(
        f"{type_} network comes back with its name and type",
        net.get("Name") == doc["Name"] and net.get("Type") == type_,
    )
    return net


def _v2_endpoint(s: Session, network: dict, suffix: str, ip: str, gateway: str, policies: list, flags: int = 0) -> dict:
    ep = s.create("Endpoint", _endpoint_doc(s, network, suffix, ip, gateway, policies, flags), network=network["ID"])
    sent = [c.get("IpAddress") for c in ep.get("IpConfigurations") or ()]
    s.check(f"endpoint {suffix} holds {ip}", sent == [ip])
    return ep


def _endpoint_doc(
    s: Session, network: dict, suffix: str, ip: str, gateway: str, policies: list, flags: int = 0
) -> dict:
    """A V2 endpoint as win-bridge/win-overlay (``flags`` 0) or kube-proxy (1: remote) sends it."""
    doc = {
        "Name": s.name(suffix),
        "HostComputeNetwork": network["ID"],
        "IpConfigurations": [{"IpAddress": ip, "PrefixLength": 24}] if not flags else [{"IpAddress": ip}],
        "Policies": policies,
        "Flags": flags,
        "SchemaVersion": SCHEMA,
    }
    if not flags:
        doc["Routes"] = [{"NextHop": gateway, "DestinationPrefix": "0.0.0.0/0"}]
        doc["Dns"] = {"ServerList": ["10.96.0.10"], "Search": ["svc.cluster.local"]}
    return doc


def hns_version(s: Session) -> None:
    answer = s.v1("GET", "/globals/version")
    out = answer.get("Output") or {}
    s.check("HNS tells its version", answer.get("Success") is True and isinstance(out.get("Major"), int))


def namespace(s: Session) -> None:
    ns = s.create("Namespace", {"SchemaVersion": SCHEMA})
    s.check("a new namespace holds nothing", not ns.get("Resources"))
    s.v1("GET", f"/namespaces/{ns['ID']}")
    s.delete("Namespace", ns["ID"])
    s.check("a deleted namespace cannot be opened", s.attempt(lambda: s.query("Namespace", ns["ID"])) is not None)


def network_l2bridge(s: Session) -> None:
    net = _v2_network(s, "l2bridge", "L2Bridge", L2_PREFIX, L2_GATEWAY)
    s.query("Network", net["ID"], v1=True)
    s.check("the network is found by its name", net["ID"].upper() in s.enumerate("Network", {"Name": net["Name"]}))
    s.v1("GET", f"/networks/{net['ID']}")
    s.delete("Network", net["ID"])
    s.check("a deleted network is not found", not s.enumerate("Network", {"Name": net["Name"]}))


def network_l2bridge_v1(s: Session) -> None:
    """flanneld host-gw's network and host endpoint, through HNSCall."""
    made = s.v1_create(
        "Network",
        {
            "Name": s.name("cbr0"),
            "Type": "L2Bridge",
            "NetworkAdapterName": s.adapter,
            "Subnets": [{"AddressPrefix": V1_PREFIX, "GatewayAddress": V1_GATEWAY}],
        },
    )
    if not s.check("HNSCall creates an L2Bridge network", made.get("Success") is True):
        return
    net = made["Output"]
    s.v1("GET", f"/networks/{net['ID']}")
    ep = s.v1_create("Endpoint", {"Name": s.name("cbr0_ep"), "VirtualNetwork": net["ID"], "IPAddress": "198.18.11.2"})
    if s.check("HNSCall creates the host endpoint", ep.get("Success") is True):
        ep_id = ep["Output"]["ID"]
        attached = s.v1("POST", f"/endpoints/{ep_id}/attach", {"SystemType": "Host", "CompartmentId": 1})
        s.check("the host endpoint attaches to compartment 1", attached.get("Success") is True)
        s.v1("GET", f"/endpoints/{ep_id}")
        s.v1("POST", f"/endpoints/{ep_id}/detach", {"SystemType": "Host"})
        s.v1_delete("Endpoint", ep_id)
    s.check("HNSCall deletes the network", s.v1_delete("Network", net["ID"]).get("Success") is True)


def network_overlay(s: Session) -> None:
    """flanneld vxlan's network: VSID, then HostRoute, then a route to another node's pods."""
    net = _v2_network(s, "vxlan", "Overlay", OVERLAY_PREFIX, OVERLAY_GATEWAY, Flags=8)
    s.settle("Network", net["ID"], _overlay_ready)
    s.check("HNS gives an Overlay its ProviderAddress and DrMacAddress", _overlay_ready(s.query("Network", net["ID"])))
    s.modify("Network", net["ID"], _network_policy("Add", hp.HOST_ROUTE.v2()))
    route = {
        "Type": "RemoteSubnetRoute",
        "Settings": {
            "DestinationPrefix": REMOTE_SUBNET,
            "IsolationId": VSID,
            "ProviderAddress": REMOTE_PA,
            "DistributedRouterMacAddress": REMOTE_DRMAC,
        },
    }
    s.modify("Network", net["ID"], _network_policy("Add", route))
    now = s.query("Network", net["ID"])
    s.check(
        "the network holds the remote subnet route",
        any(p.get("Type") == "RemoteSubnetRoute" for p in now.get("Policies") or ()),
    )
    s.modify("Network", net["ID"], _network_policy("Remove", route))
    s.query("Network", net["ID"], v1=True)
    s.v1("GET", f"/networks/{net['ID']}")
    s.delete("Network", net["ID"])


def _overlay_ready(network: dict) -> bool:
    """An Overlay HNS has finished: its ProviderAddress and DrMacAddress policies are there."""
    types = {p.get("Type") for p in network.get("Policies") or ()}
    return {"ProviderAddress", "DrMacAddress"} <= types


def _network_policy(request: str, policy: dict) -> dict:
    return {"ResourceType": "Policy", "RequestType": request, "Settings": {"Policies": [policy]}}


def endpoint_v2(s: Session) -> None:
    """A containerd pod's endpoint as win-bridge makes it, attached to its namespace and back."""
    net = _v2_network(s, "bridge", "L2Bridge", L2_PREFIX, L2_GATEWAY)
    policies = [
        hp.OUTBOUND_NAT.v2(exceptions=[CLUSTER_CIDR, SERVICE_CIDR]),
        hp.ROUTE.v2(SERVICE_CIDR),
        hp.PORT_MAPPING.v2(8080, 30080, "tcp"),
    ]
    ep = _v2_endpoint(s, net, "pod-v2", "198.18.10.10", L2_GATEWAY, policies)
    ns = s.create("Namespace", {"SchemaVersion": SCHEMA})
    attach = {"ResourceType": "Endpoint", "RequestType": "Add", "Settings": {"EndpointId": ep["ID"]}}
    s.modify("Namespace", ns["ID"], attach)
    now = s.query("Endpoint", ep["ID"])
    s.check("the endpoint names its namespace", str(now.get("HostComputeNamespace", "")).upper() == ns["ID"].upper())
    s.query("Namespace", ns["ID"])
    s.modify("Namespace", ns["ID"], {**attach, "RequestType": "Remove"})
    s.delete("Namespace", ns["ID"])
    s.delete("Endpoint", ep["ID"])
    s.delete("Network", net["ID"])


def endpoint_v1(s: Session) -> None:
    """A dockershim pod's endpoint as win-bridge makes it through HNSCall (V1 policies)."""
    net = _v2_network(s, "bridge-v1", "L2Bridge", L2_PREFIX, L2_GATEWAY)
    _v1_endpoint(
        s,
        "the endpoint",
        {
            "Name": s.name("pod-v1"),
            "VirtualNetwork": net["ID"],
            "IPAddress": "198.18.10.11",
            "PrefixLength": 24,
            "GatewayAddress": L2_GATEWAY,
            "DNSServerList": "10.96.0.10",
            "DNSSuffix": "svc.cluster.local",
            "Policies": [
                hp.OUTBOUND_NAT.v1(exceptions=[CLUSTER_CIDR, SERVICE_CIDR]),
                hp.ROUTE.v1(SERVICE_CIDR),
                hp.PORT_MAPPING.v1(8080, 30081, "tcp"),
            ],
        },
    )
    s.delete("Network", net["ID"])


def _v1_endpoint(s: Session, what: str, body: dict) -> None:
    """An endpoint made through HNSCall, shown through both APIs, deleted through HNSCall."""
    made = s.v1_create("Endpoint", body)
    if s.check(f"HNSCall creates {what}", made.get("Success") is True):
        id = made["Output"]["ID"]
        s.v1("GET", f"/endpoints/{id}")
        s.query("Endpoint", id)
        s.v1_delete("Endpoint", id)


def endpoint_overlay(s: Session) -> None:
    """A win-overlay pod's endpoint, V2 and V1: the network's provider address (PA), loopback
    DSR's OutBoundNAT destination, a port mapping on a host IP, the MAC from the pod's address."""
    net = _v2_network(s, "vxlan-pods", "Overlay", OVERLAY_PREFIX, OVERLAY_GATEWAY)
    s.settle("Network", net["ID"], _overlay_ready)
    pa = hp.setting(s.query("Network", net["ID"]).get("Policies"), "ProviderAddress", "ProviderAddress")
    if not s.check("the Overlay network tells its provider address", bool(pa)):
        return
    ip = "198.18.20.10"
    policies = [
        hp.OUTBOUND_NAT.v2(exceptions=[CLUSTER_CIDR, SERVICE_CIDR]),
        hp.OUTBOUND_NAT.v2(destinations=[ip]),
        hp.ROUTE.v2(SERVICE_CIDR),
        hp.PROVIDER_ADDRESS.v2(pa),
        hp.PORT_MAPPING.v2(8080, 30082, "udp", vip=pa),
    ]
    doc = {"MacAddress": _overlay_mac(ip)}
    ep = s.create(
        "Endpoint", {**_endpoint_doc(s, net, "pod-overlay", ip, OVERLAY_GATEWAY, policies), **doc}, network=net["ID"]
    )
    s.check("the pod's MAC is the one asked for", ep.get("MacAddress") == doc["MacAddress"])
    v1_ip = "198.18.20.11"
    _v1_endpoint(
        s,
        "the pod's endpoint",
        {
            "Name": s.name("pod-overlay-v1"),
            "VirtualNetwork": net["ID"],
            "IPAddress": v1_ip,
            "MacAddress": _overlay_mac(v1_ip),
            "GatewayAddress": OVERLAY_GATEWAY,
            "Policies": [
                hp.OUTBOUND_NAT.v1(exceptions=[CLUSTER_CIDR, SERVICE_CIDR]),
                hp.OUTBOUND_NAT.v1(destinations=[v1_ip]),
                hp.ROUTE.v1(SERVICE_CIDR),
                hp.PROVIDER_ADDRESS.v1(pa),
            ],
        },
    )
    s.delete("Endpoint", ep["ID"])
    s.delete("Network", net["ID"])


def _overlay_mac(ip: str) -> str:
    """win-overlay's endpoint MAC: its prefix (default ``0E-2A``) and the address's four bytes."""
    return "0E-2A-" + "-".join(f"{int(b):02X}" for b in ip.split("."))


def endpoint_remote(s: Session) -> None:
    """kube-proxy's remote endpoints on an Overlay: V2 (Flags 1, ProviderAddress) and V1 (PA)."""
    net = _v2_network(s, "vxlan-remote", "Overlay", OVERLAY_PREFIX, OVERLAY_GATEWAY)
    ep = _v2_endpoint(s, net, "remote-v2", "198.18.30.5", "", [hp.PROVIDER_ADDRESS.v2(REMOTE_PA)], flags=1)
    s.query("Endpoint", ep["ID"], v1=True)
    _v1_endpoint(
        s,
        "a remote endpoint",
        {
            "Name": s.name("remote-v1"),
            "VirtualNetwork": net["ID"],
            "IPAddress": "198.18.30.6",
            "IsRemoteEndpoint": True,
            "Policies": [hp.PROVIDER_ADDRESS.v1(REMOTE_PA)],
        },
    )
    s.delete("Endpoint", ep["ID"])
    s.delete("Network", net["ID"])


def _acl_policies(form) -> list:
    from plugins.winnet import acls

    return [rule.render(form) for rule in acls.parse(list(ACL_RULES))]


def acl_v2(s: Session) -> None:
    from plugins.winnet.policies import V2

    net = _v2_network(s, "acl", "L2Bridge", L2_PREFIX, L2_GATEWAY)
    ep = _v2_endpoint(s, net, "acl-v2", "198.18.10.20", L2_GATEWAY, _acl_policies(V2))
    kept = [p for p in s.query("Endpoint", ep["ID"]).get("Policies") or () if p.get("Type") == "ACL"]
    s.check("every ACL rule is on the endpoint", len(kept) == len(ACL_RULES))
    extra = {"ResourceType": "Policy", "RequestType": "Add", "Settings": {"Policies": [_acl_policies(V2)[0]]}}
    s.attempt(lambda: s.modify("Endpoint", ep["ID"], extra))  # a rule that is already there: recorded
    s.delete("Endpoint", ep["ID"])
    s.delete("Network", net["ID"])


def acl_v1(s: Session) -> None:
    from plugins.winnet.policies import V1

    net = _v2_network(s, "acl-v1", "L2Bridge", L2_PREFIX, L2_GATEWAY)
    body = {
        "Name": s.name("acl-v1"),
        "VirtualNetwork": net["ID"],
        "IPAddress": "198.18.10.21",
        "Policies": _acl_policies(V1),
    }
    _v1_endpoint(s, "the endpoint with every ACL rule", body)
    s.delete("Network", net["ID"])


def loadbalancer(s: Session) -> None:
    """kube-proxy's load balancers over two pods (ClusterIP, NodePort, DSR), and a V1 policy list."""
    net = _v2_network(s, "vxlan-lb", "Overlay", OVERLAY_PREFIX, OVERLAY_GATEWAY)
    pods = [_v2_endpoint(s, net, f"lb-pod{i}", f"198.18.20.{10 + i}", OVERLAY_GATEWAY, []) for i in (1, 2)]
    backends = [p["ID"] for p in pods]
    source_vip = "198.18.20.2"
    shapes = [
        {"FrontendVIPs": ["10.96.200.1"], "PortMappings": [{"Protocol": 6, "InternalPort": 8080, "ExternalPort": 80}]},
        {"PortMappings": [{"Protocol": 6, "InternalPort": 8080, "ExternalPort": 30090, "Flags": 2}]},  # NodePort
        {
            "FrontendVIPs": ["10.96.200.2"],
            "Flags": 1,
            "PortMappings": [{"Protocol": 17, "InternalPort": 53, "ExternalPort": 53}],
        },
    ]
    for shape in shapes:
        lb = s.create(
            "LoadBalancer",
            {"HostComputeEndpoints": backends, "SourceVIP": source_vip, "SchemaVersion": SCHEMA, **shape},
        )
        s.check(
            "the load balancer holds both backends", sorted(lb.get("HostComputeEndpoints") or ()) == sorted(backends)
        )
    s.v1("GET", "/policylists/")
    made = s.v1_create(
        "LoadBalancer",
        {
            "References": [f"/endpoints/{b}" for b in backends],
            "Policies": [
                {
                    "Type": "ELB",
                    "Protocol": 6,
                    "InternalPort": 8443,
                    "ExternalPort": 443,
                    "SourceVIP": source_vip,
                    "VIPs": ["10.96.200.3"],
                }
            ],
        },
    )
    if s.check("HNSCall creates a policy list", made.get("Success") is True):
        s.v1("GET", f"/policylists/{made['Output']['ID']}")
        s.v1_delete("LoadBalancer", made["Output"]["ID"])
    for api, kind, id in reversed(s.owned):
        if (api, kind) == ("v2", "LoadBalancer"):
            s.delete(kind, id)
    for pod in pods:
        s.delete("Endpoint", pod["ID"])
    s.delete("Network", net["ID"])


def refusals(s: Session) -> None:
    """What HNS may refuse: each asked, its answer recorded (the report compares it)."""
    net = _v2_network(s, "refusals", "L2Bridge", L2_PREFIX, L2_GATEWAY)

    def endpoint(suffix: str, ip: str, policies: list) -> None:
        _v2_endpoint(s, net, suffix, ip, L2_GATEWAY, policies)

    acl = {"Action": "Allow", "Direction": "In", "Protocols": "6", "Priority": 200, "RuleType": "Switch"}
    s.attempt(
        lambda: endpoint(
            "acl-lowercase",
            "198.18.10.30",
            [{"Type": "ACL", "Settings": {**acl, "Action": "allow", "Direction": "in"}}],
        )
    )
    s.attempt(
        lambda: endpoint("acl-any", "198.18.10.31", [{"Type": "ACL", "Settings": {**acl, "RemoteAddresses": "Any"}}])
    )
    s.attempt(lambda: endpoint("outside", "198.18.99.5", []))
    s.attempt(lambda: s.create("Network", {"Name": net["Name"], "Type": "L2Bridge", "SchemaVersion": SCHEMA}))
    for _, kind, id in [o for o in reversed(s.owned) if o[1] == "Endpoint"]:
        s.delete(kind, id)
    s.delete("Network", net["ID"])


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
