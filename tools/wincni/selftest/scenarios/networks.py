"""The scenarios of HNS itself and its networks: the version, a namespace, L2Bridge (HCN and
flanneld host-gw through HNSCall) and Overlay (flanneld vxlan)."""

from __future__ import annotations

from libhns import policies as hp

from ..session import SCHEMA, Session
from .common import (
    L2_GATEWAY,
    L2_PREFIX,
    OVERLAY_GATEWAY,
    OVERLAY_PREFIX,
    REMOTE_DRMAC,
    REMOTE_PA,
    REMOTE_SUBNET,
    V1_GATEWAY,
    V1_PREFIX,
    VSID,
    v2_network,
)


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
    net = v2_network(s, "l2bridge", "L2Bridge", L2_PREFIX, L2_GATEWAY)
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
    net = v2_network(s, "vxlan", "Overlay", OVERLAY_PREFIX, OVERLAY_GATEWAY, Flags=8)
    s.settle("Network", net["ID"], overlay_ready)
    s.check("HNS gives an Overlay its ProviderAddress and DrMacAddress", overlay_ready(s.query("Network", net["ID"])))
    s.modify("Network", net["ID"], network_policy("Add", hp.HOST_ROUTE.v2()))
    route = {
        "Type": "RemoteSubnetRoute",
        "Settings": {
            "DestinationPrefix": REMOTE_SUBNET,
            "IsolationId": VSID,
            "ProviderAddress": REMOTE_PA,
            "DistributedRouterMacAddress": REMOTE_DRMAC,
        },
    }
    s.modify("Network", net["ID"], network_policy("Add", route))
    now = s.query("Network", net["ID"])
    s.check(
        "the network holds the remote subnet route",
        any(p.get("Type") == "RemoteSubnetRoute" for p in now.get("Policies") or ()),
    )
    s.modify("Network", net["ID"], network_policy("Remove", route))
    s.query("Network", net["ID"], v1=True)
    s.v1("GET", f"/networks/{net['ID']}")
    s.delete("Network", net["ID"])


def overlay_ready(network: dict) -> bool:
    """An Overlay HNS has finished: its ProviderAddress and DrMacAddress policies are there."""
    types = {p.get("Type") for p in network.get("Policies") or ()}
    return {"ProviderAddress", "DrMacAddress"} <= types


def network_policy(request: str, policy: dict) -> dict:
    return {"ResourceType": "Policy", "RequestType": request, "Settings": {"Policies": [policy]}}
