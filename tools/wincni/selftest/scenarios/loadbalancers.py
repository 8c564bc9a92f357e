"""The scenario of kube-proxy's load balancers (ClusterIP, NodePort, DSR) and a V1 policy list."""

from __future__ import annotations

from ..session import SCHEMA, Session
from .common import OVERLAY_GATEWAY, OVERLAY_PREFIX, v2_endpoint, v2_network


def loadbalancer(s: Session) -> None:
    """kube-proxy's load balancers over two pods (ClusterIP, NodePort, DSR), and a V1 policy list."""
    net = v2_network(s, "vxlan-lb", "Overlay", OVERLAY_PREFIX, OVERLAY_GATEWAY)
    pods = [v2_endpoint(s, net, f"lb-pod{i}", f"198.18.20.{10 + i}", OVERLAY_GATEWAY, []) for i in (1, 2)]
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
