"""Pure translation: an endpoint plan -> the HNS V1 / HCN V2 endpoint document -> the CNI result."""
from __future__ import annotations

from basics import ipaddr

TYPE_CHECKING = False  # typing costs more to import than a plugin's VERSION command
if TYPE_CHECKING:
    from typing import Any, Sequence

from libhns import policies as hp
from libhns.objects import default_prefix, v1_text
from plugins.cni.record import FrozenRecord, Record
from plugins.cni.result import DNS, IPConfig, Interface, Result, Route

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

    def __init__(self, name: str, network_id: str, addresses: tuple[Address, ...], dns: DnsSettings,
                 policies: tuple[dict, ...] = (), mac: str = "") -> None:
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
        doc["Routes"] = [{"NextHop": a.gateway, "DestinationPrefix": a.default_route} for a in plan.addresses if a.gateway]
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


class _Form:
    """What one HNS API's endpoints take. The lifecycle gets its form from the adapter
    (``EndpointApi.policy_form``) and never asks which it holds."""
    __slots__ = ()
    shape = ""  # what ``libhns.policies.schema_of`` says of a policy of this form

    def holds(self, policy: dict) -> bool:
        """Whether ``policy`` is already in this form (or in none: ``{"Type": "OutBoundNAT"}``)."""
        return hp.schema_of(policy) in (None, self.shape)


class V2Form(_Form):
    """HCN: policies with their keys in ``Settings`` (each type's ``v2`` document), every
    address, the whole DNS."""
    __slots__ = ()
    shape, name, api = "v2", "V2", "apiVersion 2 (HCN)"

    def policy(self, kind: hp.Kind, *args: Any, **settings: Any) -> dict:
        return kind.v2(*args, **settings)

    def fit(self, policy: dict) -> dict:
        """``policy`` (of either API) in this form."""
        return hp.to_v2(policy)

    def setting(self, policy: dict, kind: hp.Kind, key: str) -> Any:
        """Setting ``key`` (its V2 name) of a policy of this form, read exactly (as the reference does)."""
        settings = policy.get("Settings")
        return settings.get(key) if isinstance(settings, dict) else None

    def unknown(self, policy: dict) -> bool:
        """A type HCN has no endpoint policy of (it answers 0x803B000E)."""
        return hp.canonical_type(hp.policy_type(policy), hp.KNOWN_V2_ENDPOINT_TYPES) is None

    def applied_dns(self, dns: DnsSettings) -> DnsSettings:
        """What an endpoint of this form holds of ``dns``: all of it."""
        return dns


class V1Form(_Form):
    """HNSCall: flat policies (each type's ``v1`` document), one IPv4 address, DNS as a server
    list and a suffix list."""
    __slots__ = ()
    shape, name, api = "v1", "V1", "apiVersion 1 (HNS V1)"

    def policy(self, kind: hp.Kind, *args: Any, **settings: Any) -> dict:
        return kind.v1(*args, **settings)

    def fit(self, policy: dict) -> dict:
        return hp.to_v1(policy)

    def setting(self, policy: dict, kind: hp.Kind, key: str) -> Any:
        return policy.get(kind.v1_key(key))

    def unknown(self, policy: dict) -> bool:
        return False  # HNSCall has no closed list to check against

    def applied_dns(self, dns: DnsSettings) -> DnsSettings:
        """So a result never claims more than HNS applied: servers and suffixes only."""
        return DnsSettings(nameservers=dns.nameservers, search=dns.search)


V1, V2 = V1Form(), V2Form()


def build_result(name: str, mac: str, sandbox: str, addresses: Sequence[Address], dns: DnsSettings,
                 cni_version: str) -> Result:
    """The CNI result for an endpoint: one interface, its addresses, the default routes it has."""
    return Result(
        cni_version=cni_version,
        interfaces=[Interface(name=name, mac=mac or "", sandbox=sandbox)],
        ips=[IPConfig(address=a.interface, gateway=a.gateway, interface=0) for a in addresses],
        routes=[Route(dst=a.default_route, gw=a.gateway) for a in addresses if a.gateway],
        dns=DNS(nameservers=list(dns.nameservers), domain=dns.domain, search=list(dns.search),
                options=list(dns.options)),
    )
