"""Pure translation: an endpoint plan -> the HNS V1 / HCN V2 endpoint document -> the CNI result."""

from __future__ import annotations

from basics import ipaddr

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Sequence

from libhns.objects import default_prefix, v1_text
from plugins.cni.record import FrozenRecord, Record
from plugins.cni.result import DNS, Interface, IPConfig, Result, Route

from .config import DnsSettings

SCHEMA_V2 = {"Major": 2, "Minor": 0}


class Address(FrozenRecord):
    """One pod address as IPAM gave it, with the gateway the endpoint routes through."""

    __slots__ = ("interface", "gateway")

    def __init__(self, interface: str, gateway: str) -> None:
        self.interface = interface  # "10.244.4.3/24"
        self.gateway = gateway

    @property
    def ip(self) -> str:
        return str(ipaddr.ip_interface(self.interface).ip)

    @property
    def version(self) -> int:
        return ipaddr.ip_interface(self.interface).version

    @property
    def default_route(self) -> str:
        return default_prefix(self.version)


class EndpointPlan(Record):
    """Everything the endpoint document is made of; the adapters render it for their API."""

    __slots__ = ("name", "network_id", "addresses", "dns", "policies", "mac")

    def __init__(
        self,
        name: str,
        network_id: str,
        addresses: tuple[Address, ...],
        dns: DnsSettings,
        policies: tuple[dict, ...] = (),
        mac: str = "",
    ) -> None:
        self.name, self.network_id, self.addresses, self.dns = name, network_id, addresses, dns
        self.policies, self.mac = policies, mac


def v2_document(plan: EndpointPlan) -> dict:
    """HcnCreateEndpoint settings: every address (dual-stack) and one default route per family."""
    doc: dict[str, Any] = {"SchemaVersion": dict(SCHEMA_V2), "Name": plan.name, "HostComputeNetwork": plan.network_id}
    if plan.mac:
        doc["MacAddress"] = plan.mac
    dns = _v2_dns(plan.dns)
    if dns:
        doc["Dns"] = dns
    if plan.addresses:
        doc["IpConfigurations"] = [{"IpAddress": a.ip} for a in plan.addresses]
        doc["Routes"] = [
            {"NextHop": a.gateway, "DestinationPrefix": a.default_route} for a in plan.addresses if a.gateway
        ]
    if plan.policies:
        doc["Policies"] = [dict(p) for p in plan.policies]
    return doc


def _v2_dns(dns: DnsSettings) -> dict:
    out: dict[str, Any] = {}
    if dns.domain:
        out["Domain"] = dns.domain
    if dns.search:
        out["Search"] = list(dns.search)
    if dns.nameservers:
        out["ServerList"] = list(dns.nameservers)
    if dns.options:
        out["Options"] = list(dns.options)
    return out


def v1_document(plan: EndpointPlan) -> dict:
    """POST /endpoints/ body. V1 carries one IPv4 address; DNS lists are comma strings."""
    doc: dict[str, Any] = {"Name": plan.name, "VirtualNetwork": plan.network_id}
    if plan.dns.nameservers:
        doc["DNSServerList"] = v1_text(plan.dns.nameservers)
    if plan.dns.search:
        doc["DNSSuffix"] = v1_text(plan.dns.search)
    v4 = next((a for a in plan.addresses if a.version == 4), None)
    if v4 is not None:
        if v4.gateway:
            doc["GatewayAddress"] = v4.gateway
        doc["IPAddress"] = v4.ip
    if plan.mac:
        doc["MacAddress"] = plan.mac
    if plan.policies:
        doc["Policies"] = [dict(p) for p in plan.policies]
    return doc


def build_result(
    name: str, mac: str, sandbox: str, addresses: Sequence[Address], dns: DnsSettings, cni_version: str
) -> Result:
    """The CNI result for an endpoint: one interface, its addresses, the default routes it has."""
    return Result(
        cni_version=cni_version,
        interfaces=[Interface(name=name, mac=mac or "", sandbox=sandbox)],
        ips=[IPConfig(address=a.interface, gateway=a.gateway, interface=0) for a in addresses],
        routes=[Route(dst=a.default_route, gw=a.gateway) for a in addresses if a.gateway],
        dns=DNS(
            nameservers=list(dns.nameservers), domain=dns.domain, search=list(dns.search), options=list(dns.options)
        ),
    )
