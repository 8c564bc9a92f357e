"""What the scenarios share: the addresses they use (198.18.0.0/15, RFC 2544; remote provider
addresses from RFC 5737), the ACL shapes, and the documents of a V2 network and endpoint."""

from __future__ import annotations

from libhns import policies as hp

from ..session import SCHEMA, Session

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


def v2_network(s: Session, suffix: str, type_: str, prefix: str, gateway: str, **extra) -> dict:
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


def v2_endpoint(s: Session, network: dict, suffix: str, ip: str, gateway: str, policies: list, flags: int = 0) -> dict:
    ep = s.create("Endpoint", endpoint_doc(s, network, suffix, ip, gateway, policies, flags), network=network["ID"])
    sent = [c.get("IpAddress") for c in ep.get("IpConfigurations") or ()]
    s.check(f"endpoint {suffix} holds {ip}", sent == [ip])
    return ep


def endpoint_doc(s: Session, network: dict, suffix: str, ip: str, gateway: str, policies: list, flags: int = 0) -> dict:
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


def v1_endpoint(s: Session, what: str, body: dict) -> None:
    """An endpoint made through HNSCall, shown through both APIs, deleted through HNSCall."""
    made = s.v1_create("Endpoint", body)
    if s.check(f"HNSCall creates {what}", made.get("Success") is True):
        id = made["Output"]["ID"]
        s.v1("GET", f"/endpoints/{id}")
        s.query("Endpoint", id)
        s.v1_delete("Endpoint", id)
