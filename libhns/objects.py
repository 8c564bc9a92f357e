"""Typed HNS objects: the V2 (HCN) and V1 (HNSCall) JSON documents as dataclasses.

HNS and its Go clients read JSON keys case-insensitively (``ID``/``Id``,
``IpConfigurations``/``IPConfigurations``) and add server-side fields freely, so ``from_json``
matches keys case-insensitively and keeps every key it does not model in ``extra``;
``to_json`` writes the canonical spelling back and the unknown keys unchanged. Nested documents
(policies, routes, IP configurations) stay plain JSON: the convenience properties read what the
plugins need from them.
"""
from __future__ import annotations

import dataclasses
import ipaddress
import json
from dataclasses import dataclass, field
from typing import Any, ClassVar, Mapping, TypeVar

from libhns import guid
from libhns.jsonci import get_ci
from libhns.policies import policy_type

T = TypeVar("T", bound="HnsObject")
JsonDict = dict[str, Any]

_DEFAULT_ROUTES = ("0.0.0.0/0", "::/0")


def same_id(a: str | None, b: str | None) -> bool:
    """GUIDs compared as HNS does: case-insensitively, braces ignored; None equals nothing."""
    if not a or not b:
        return False
    return guid.normalize(a) == guid.normalize(b)


def _key(name: str) -> Any:
    return field(default=None, metadata={"key": name})


@dataclass
class HnsObject:
    """Base: JSON round-trip with case-insensitive keys and unknown keys kept in ``extra``."""

    _fields_by_key: ClassVar[dict[str, str]]

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        cls._fields_by_key = {}

    @classmethod
    def _key_map(cls) -> dict[str, str]:
        if not cls._fields_by_key:
            cls._fields_by_key = {f.metadata["key"].casefold(): f.name
                                  for f in dataclasses.fields(cls) if "key" in f.metadata}
        return cls._fields_by_key

    @classmethod
    def from_json(cls: type[T], data: Mapping[str, Any] | str | bytes) -> T:
        """Build from a parsed document or its JSON text."""
        if isinstance(data, (str, bytes)):
            data = json.loads(data)
        if not isinstance(data, Mapping):
            raise ValueError(f"{cls.__name__}: expected a JSON object, got {type(data).__name__}")
        keys = cls._key_map()
        known: dict[str, Any] = {}
        extra: dict[str, Any] = {}
        for k, v in data.items():
            attr = keys.get(k.casefold()) if isinstance(k, str) else None
            if attr is not None and attr not in known:
                known[attr] = v
            else:
                extra[k] = v
        obj = cls(**known)
        obj.extra = extra  # type: ignore[attr-defined]
        return obj

    def to_json(self) -> JsonDict:
        """The document: modelled fields under their canonical keys (None omitted), then ``extra``."""
        out: JsonDict = {}
        for f in dataclasses.fields(self):
            if "key" in f.metadata:
                value = getattr(self, f.name)
                if value is not None:
                    out[f.metadata["key"]] = value
        out.update(getattr(self, "extra", {}))
        return out


@dataclass(frozen=True)
class Subnet:
    """One subnet of a network, in either schema's terms."""

    prefix: str
    gateway: str | None
    policies: tuple[JsonDict, ...] = ()

    @property
    def network(self) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
        return ipaddress.ip_network(self.prefix, strict=False)


def _policy(policies: list[Any] | None, type_: str) -> JsonDict | None:
    """The first policy of ``type_`` (case-insensitive) in a list of either schema."""
    for p in policies or ():
        if isinstance(p, Mapping) and (policy_type(p) or "").casefold() == type_.casefold():
            return dict(p)
    return None


def _setting(policies: list[Any] | None, type_: str, key: str) -> Any:
    """``key`` of the first ``type_`` policy, from ``Settings`` (V2) or flat (V1)."""
    p = _policy(policies, type_)
    if p is None:
        return None
    settings = get_ci(p, "Settings")
    if isinstance(settings, Mapping):
        return get_ci(settings, key)
    return get_ci(p, key)


def _default_gateway(routes: list[Any] | None, version: int | None = None) -> str | None:
    for r in routes or ():
        if not isinstance(r, Mapping):
            continue
        dest, hop = get_ci(r, "DestinationPrefix"), get_ci(r, "NextHop")
        if dest in _DEFAULT_ROUTES and hop:
            if version is None or ipaddress.ip_address(hop).version == version:
                return hop
    return None


class _NetworkProperties:
    """What both network schemas answer the same way, from ``type``, ``subnets`` and ``policies``."""

    type: str | None
    policies: list[JsonDict] | None
    _vsid_key: ClassVar[str]
    subnets: list[Subnet]

    @property
    def network_type(self) -> str:
        """The type; a missing one is NAT (enum 0, omitted by HNS)."""
        return self.type or "NAT"

    def is_type(self, wanted: str) -> bool:
        """Type compared case-insensitively (V1 answers in lowercase)."""
        return (self.type or "NAT").casefold() == wanted.casefold()

    @property
    def vsid(self) -> int | None:
        """The first subnet's VSID (overlay VNI)."""
        for s in self.subnets:
            v = _setting(list(s.policies), "VSID", self._vsid_key)
            if v is not None:
                return int(v)
        return None

    @property
    def vxlan_port(self) -> int | None:
        v = _setting(self.policies, "VxlanPort", "Port")
        return None if v is None else int(v)


# --- V2 -----------------------------------------------------------------------------------------

@dataclass
class HostComputeNetwork(_NetworkProperties, HnsObject):
    """HCN network. A missing ``Type`` means NAT (enum 0 is omitted by HNS)."""

    id: str | None = _key("ID")
    name: str | None = _key("Name")
    type: str | None = _key("Type")
    policies: list[JsonDict] | None = _key("Policies")
    mac_pool: JsonDict | None = _key("MacPool")
    dns: JsonDict | None = _key("Dns")
    ipams: list[JsonDict] | None = _key("Ipams")
    flags: int | None = _key("Flags")
    health: JsonDict | None = _key("Health")
    schema_version: JsonDict | None = _key("SchemaVersion")
    extra: JsonDict = field(default_factory=dict, repr=False)

    _vsid_key: ClassVar[str] = "IsolationId"

    @property
    def subnets(self) -> list[Subnet]:
        out = []
        for ipam in self.ipams or ():
            for s in get_ci(ipam, "Subnets") or ():
                prefix = get_ci(s, "IpAddressPrefix")
                if prefix:
                    out.append(Subnet(prefix, _default_gateway(get_ci(s, "Routes")),
                                      tuple(get_ci(s, "Policies") or ())))
        return out

    @property
    def management_ip(self) -> str | None:
        """The ProviderAddress network policy HNS sets on overlay networks."""
        return _setting(self.policies, "ProviderAddress", "ProviderAddress")

    @property
    def dr_mac_address(self) -> str | None:
        return _setting(self.policies, "DrMacAddress", "Address")

    @property
    def adapter_name(self) -> str | None:
        return _setting(self.policies, "NetAdapterName", "NetworkAdapterName")


@dataclass
class HostComputeEndpoint(HnsObject):
    """HCN endpoint; ``HostComputeNamespace`` is filled by HNS on attach (read-only)."""

    id: str | None = _key("ID")
    name: str | None = _key("Name")
    host_compute_network: str | None = _key("HostComputeNetwork")
    host_compute_namespace: str | None = _key("HostComputeNamespace")
    policies: list[JsonDict] | None = _key("Policies")
    ip_configurations: list[JsonDict] | None = _key("IpConfigurations")
    dns: JsonDict | None = _key("Dns")
    routes: list[JsonDict] | None = _key("Routes")
    mac_address: str | None = _key("MacAddress")
    flags: int | None = _key("Flags")
    health: JsonDict | None = _key("Health")
    schema_version: JsonDict | None = _key("SchemaVersion")
    state: int | None = _key("State")
    extra: JsonDict = field(default_factory=dict, repr=False)

    @property
    def ip_addresses(self) -> list[str]:
        return [get_ci(c, "IpAddress") for c in self.ip_configurations or ()
                if get_ci(c, "IpAddress")]

    @property
    def prefix_length(self) -> int | None:
        for c in self.ip_configurations or ():
            if get_ci(c, "PrefixLength") is not None:
                return int(get_ci(c, "PrefixLength"))
        return None

    @property
    def gateway(self) -> str | None:
        """The IPv4 default route's NextHop (else the IPv6 one)."""
        return _default_gateway(self.routes, 4) or _default_gateway(self.routes, 6)

    @property
    def namespace_id(self) -> str | None:
        return self.host_compute_namespace or None

    @property
    def network_id(self) -> str | None:
        return self.host_compute_network

    @property
    def mac(self) -> str | None:
        return self.mac_address


@dataclass
class HostComputeNamespace(HnsObject):
    """HCN namespace; ``NamespaceId`` is the network compartment id."""

    id: str | None = _key("ID")
    namespace_id: int | None = _key("NamespaceId")
    namespace_guid: str | None = _key("NamespaceGuid")
    type: str | None = _key("Type")
    resources: list[JsonDict] | None = _key("Resources")
    schema_version: JsonDict | None = _key("SchemaVersion")
    extra: JsonDict = field(default_factory=dict, repr=False)

    @property
    def compartment_id(self) -> int | None:
        return self.namespace_id

    @property
    def endpoint_ids(self) -> list[str]:
        out = []
        for r in self.resources or ():
            if (get_ci(r, "Type") or "").casefold() == "endpoint":
                data = get_ci(r, "Data") or {}
                ep = get_ci(data, "Id") if isinstance(data, Mapping) else None
                if ep:
                    out.append(ep)
        return out

    def has_endpoint(self, endpoint_id: str) -> bool:
        return any(same_id(e, endpoint_id) for e in self.endpoint_ids)


@dataclass
class HostComputeLoadBalancer(HnsObject):
    """HCN load balancer (kube-proxy's object; modelled for completeness and hnsctl)."""

    id: str | None = _key("ID")
    host_compute_endpoints: list[str] | None = _key("HostComputeEndpoints")
    source_vip: str | None = _key("SourceVIP")
    frontend_vips: list[str] | None = _key("FrontendVIPs")
    port_mappings: list[JsonDict] | None = _key("PortMappings")
    flags: int | None = _key("Flags")
    host_compute_network: str | None = _key("HostComputeNetwork")
    schema_version: JsonDict | None = _key("SchemaVersion")
    extra: JsonDict = field(default_factory=dict, repr=False)


# --- V1 -----------------------------------------------------------------------------------------

@dataclass
class HNSNetwork(_NetworkProperties, HnsObject):
    """V1 network; ``Type`` comes back lowercase, ``ManagementIP``/``DrMacAddress`` are top-level."""

    id: str | None = _key("ID")
    name: str | None = _key("Name")
    type: str | None = _key("Type")
    network_adapter_name: str | None = _key("NetworkAdapterName")
    source_mac: str | None = _key("SourceMac")
    policies: list[JsonDict] | None = _key("Policies")
    mac_pools: list[JsonDict] | None = _key("MacPools")
    raw_subnets: list[JsonDict] | None = _key("Subnets")
    dns_suffix: str | None = _key("DNSSuffix")
    dns_server_list: str | None = _key("DNSServerList")
    management_ip_field: str | None = _key("ManagementIP")
    dr_mac_address_field: str | None = _key("DrMacAddress")
    flags: int | None = _key("Flags")
    state: int | None = _key("State")
    extra: JsonDict = field(default_factory=dict, repr=False)

    _vsid_key: ClassVar[str] = "VSID"

    @property
    def subnets(self) -> list[Subnet]:
        return [Subnet(get_ci(s, "AddressPrefix"), get_ci(s, "GatewayAddress") or None,
                       tuple(get_ci(s, "Policies") or ()))
                for s in self.raw_subnets or () if get_ci(s, "AddressPrefix")]

    @property
    def management_ip(self) -> str | None:
        return self.management_ip_field or None

    @property
    def dr_mac_address(self) -> str | None:
        return self.dr_mac_address_field or _setting(self.policies, "DrMacAddress", "Address")

    @property
    def adapter_name(self) -> str | None:
        return self.network_adapter_name


@dataclass
class HNSEndpoint(HnsObject):
    """V1 endpoint; ``SharedContainers`` lists the containers hot-attached through HCS."""

    id: str | None = _key("ID")
    name: str | None = _key("Name")
    virtual_network: str | None = _key("VirtualNetwork")
    virtual_network_name: str | None = _key("VirtualNetworkName")
    policies: list[JsonDict] | None = _key("Policies")
    mac_address: str | None = _key("MacAddress")
    ip_address: str | None = _key("IPAddress")
    ipv6_address: str | None = _key("IPv6Address")
    dns_suffix: str | None = _key("DNSSuffix")
    dns_server_list: str | None = _key("DNSServerList")
    gateway_address: str | None = _key("GatewayAddress")
    gateway_address_v6: str | None = _key("GatewayAddressV6")
    prefix_length: int | None = _key("PrefixLength")
    ipv6_prefix_length: int | None = _key("IPv6PrefixLength")
    is_remote_endpoint: bool | None = _key("IsRemoteEndpoint")
    namespace: JsonDict | None = _key("Namespace")
    shared_containers: list[str] | None = _key("SharedContainers")
    state: int | None = _key("State")
    extra: JsonDict = field(default_factory=dict, repr=False)

    @property
    def ip_addresses(self) -> list[str]:
        return [a for a in (self.ip_address, self.ipv6_address) if a]

    @property
    def gateway(self) -> str | None:
        return self.gateway_address or self.gateway_address_v6 or None

    @property
    def namespace_id(self) -> str | None:
        return get_ci(self.namespace, "ID") if isinstance(self.namespace, Mapping) else None

    @property
    def network_id(self) -> str | None:
        return self.virtual_network

    @property
    def mac(self) -> str | None:
        return self.mac_address

    def has_container(self, container_id: str) -> bool:
        """Whether ``container_id`` is in SharedContainers (case-insensitive, like hcsshim)."""
        return any(c.casefold() == container_id.casefold() for c in self.shared_containers or ())
