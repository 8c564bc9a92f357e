"""The HNS network documents flanneld and ``start.ps1`` send, built from plain values (pure).

One builder for everybody who creates a network — ``hnsctl network create`` and the plugins'
standalone mode — so the two can never drift apart. The V2 (HCN) form is the source; the V1
(HNSCall) form is derived from it the way hcsshim maps the two schemas
(internal/hns/hnsnetwork.go vs hcn/hcnnetwork.go).
"""

from __future__ import annotations

from basics import ipaddr
from libhns.objects import default_prefix
from libhns.policies import PROVIDER_ADDRESS, VSID, to_v1

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Iterable, Mapping

#: NetworkFlags.EnableNonPersistent: HNS forgets the network when it restarts (flanneld sets it).
NON_PERSISTENT = 8
#: Network policies V1 carries as top-level fields (name, V1 key, Settings key).
_V1_TOP_LEVEL = (
    ("NetAdapterName", "NetworkAdapterName", "NetworkAdapterName"),
    ("ProviderAddress", "ManagementIP", "ProviderAddress"),
    ("DrMacAddress", "DrMacAddress", "Address"),
)


class NewSubnet:
    """One IPAM subnet of a network to create: its prefix, the default route's next hop and, on Overlay, its VSID."""

    __slots__ = ("prefix", "gateway", "vsid")

    def __init__(self, prefix: str, gateway: str = "", vsid: int | None = None) -> None:
        net = ipaddr.ip_network(prefix, strict=False)
        self.prefix = str(net)
        self.gateway = gateway or str(net.network_address + 1)
        self.vsid = vsid
        if ipaddr.ip_address(self.gateway) not in net:
            raise ValueError(f"gateway {self.gateway} is not in {self.prefix}")

    @property
    def version(self) -> int:
        return ipaddr.ip_network(self.prefix).version


def network_document(
    name: str,
    type_: str,
    subnets: Iterable[NewSubnet] = (),
    *,
    adapter: str = "",
    management_ip: str = "",
    vxlan_port: int | None = None,
    dr_mac: str = "",
    flags: int = 0,
) -> dict[str, Any]:
    """The V2 HostComputeNetwork: a static IPAM subnet (with its default route, and the VSID
    policy when given) per entry, network policies in flanneld's order."""
    policies: list[dict[str, Any]] = []
    if adapter:
        policies.append({"Type": "NetAdapterName", "Settings": {"NetworkAdapterName": adapter}})
    if management_ip:
        policies.append(PROVIDER_ADDRESS.v2(management_ip))
    if dr_mac:
        policies.append({"Type": "DrMacAddress", "Settings": {"Address": dr_mac}})
    if vxlan_port is not None:
        policies.append({"Type": "VxlanPort", "Settings": {"Port": vxlan_port}})
    doc: dict[str, Any] = {"Name": name, "Type": type_, "Policies": policies}
    entries = []
    for s in subnets:
        entry: dict[str, Any] = {
            "IpAddressPrefix": s.prefix,
            "Routes": [{"NextHop": s.gateway, "DestinationPrefix": default_prefix(s.version)}],
        }
        if s.vsid is not None:
            entry["Policies"] = [VSID.v2(s.vsid)]
        entries.append(entry)
    if entries:
        doc["Ipams"] = [{"Type": "Static", "Subnets": entries}]
    if flags:
        doc["Flags"] = flags
    return doc


def v1_network_document(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The HNSCall ``POST /networks`` body for a V2 document from ``network_document``."""
    policies = doc.get("Policies") or []
    top = {p["Type"]: p["Settings"] for p in policies}
    out: dict[str, Any] = {
        "Name": doc["Name"],
        "Type": str(doc["Type"]).lower(),
        "Policies": [to_v1(p) for p in policies if p["Type"] not in {t for t, _, _ in _V1_TOP_LEVEL}],
    }
    for policy, key, setting in _V1_TOP_LEVEL:
        if policy in top:
            out[key] = top[policy][setting]
    subnets = [s for ipam in doc.get("Ipams") or () for s in ipam["Subnets"]]
    if subnets:
        out["Subnets"] = [
            {
                "AddressPrefix": s["IpAddressPrefix"],
                "GatewayAddress": s["Routes"][0]["NextHop"],
                "Policies": [to_v1(p) for p in s.get("Policies", [])],
            }
            for s in subnets
        ]
    if doc.get("Flags"):
        out["Flags"] = doc["Flags"]
    return out
