"""The scenarios of endpoints: a containerd pod's (V2), a dockershim pod's (V1), win-overlay's,
and kube-proxy's remote endpoints."""

from __future__ import annotations

from libhns import policies as hp

from ..session import SCHEMA, Session
from .common import (
    CLUSTER_CIDR,
    L2_GATEWAY,
    L2_PREFIX,
    OVERLAY_GATEWAY,
    OVERLAY_PREFIX,
    REMOTE_PA,
    SERVICE_CIDR,
    endpoint_doc,
    v1_endpoint,
    v2_endpoint,
    v2_network,
)
from .networks import overlay_ready


def endpoint_v2(s: Session) -> None:
    """A containerd pod's endpoint as win-bridge makes it, attached to its namespace and back."""
    net = v2_network(s, "bridge", "L2Bridge", L2_PREFIX, L2_GATEWAY)
    policies = [
        hp.OUTBOUND_NAT.v2(exceptions=[CLUSTER_CIDR, SERVICE_CIDR]),
        hp.ROUTE.v2(SERVICE_CIDR),
        hp.PORT_MAPPING.v2(8080, 30080, "tcp"),
    ]
    ep = v2_endpoint(s, net, "pod-v2", "198.18.10.10", L2_GATEWAY, policies)
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
    net = v2_network(s, "bridge-v1", "L2Bridge", L2_PREFIX, L2_GATEWAY)
    v1_endpoint(
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


def endpoint_overlay(s: Session) -> None:
    """A win-overlay pod's endpoint, V2 and V1: the network's provider address (PA), loopback
    DSR's OutBoundNAT destination, a port mapping on a host IP, the MAC from the pod's address."""
    net = v2_network(s, "vxlan-pods", "Overlay", OVERLAY_PREFIX, OVERLAY_GATEWAY)
    s.settle("Network", net["ID"], overlay_ready)
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
        "Endpoint", {**endpoint_doc(s, net, "pod-overlay", ip, OVERLAY_GATEWAY, policies), **doc}, network=net["ID"]
    )
    s.check("the pod's MAC is the one asked for", ep.get("MacAddress") == doc["MacAddress"])
    v1_ip = "198.18.20.11"
    v1_endpoint(
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
    net = v2_network(s, "vxlan-remote", "Overlay", OVERLAY_PREFIX, OVERLAY_GATEWAY)
    ep = v2_endpoint(s, net, "remote-v2", "198.18.30.5", "", [hp.PROVIDER_ADDRESS.v2(REMOTE_PA)], flags=1)
    s.query("Endpoint", ep["ID"], v1=True)
    v1_endpoint(
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
