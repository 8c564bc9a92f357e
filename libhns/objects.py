"""Typed HNS objects: the V2 (HCN) and V1 (HNSCall) JSON documents as plain classes.

HNS and its Go clients read JSON keys case-insensitively (``ID``/``Id``,
``IpConfigurations``/``IPConfigurations``) and add server-side fields freely, so ``from_json``
matches keys case-insensitively and keeps every key it does not model in ``extra``;
``to_json`` writes the canonical spelling back and the unknown keys unchanged. Nested documents
(policies, routes, IP configurations) stay plain JSON: the convenience properties read what the
plugins need from them.
"""

from __future__ import annotations

from basics import ipaddr

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, ClassVar, Mapping, TypeVar

    T = TypeVar("T", bound="HnsObject")

from basics import jsontext
from basics.jsonci import get_ci
from libhns import guid
from libhns.policies import setting

JsonDict = dict  # a parsed JSON object

_DEFAULT_ROUTES = ("0.0.0.0/0", "::/0")
#: hcsshim's EndpointFlagsRemoteEndpoint: V2's spelling of V1's ``IsRemoteEndpoint``.
REMOTE_ENDPOINT_FLAG = 1
#: A load balancer's Flags (LoadBalancerFlags: direct server return, an IPv6 frontend) and its
#: port mappings' (LoadBalancerPortMappingFlags: internal load balancer, a NodePort's local routed
#: VIP), from hnslib's hcn/hcnloadbalancer.go.
LB_DSR, LB_IPV6 = 1, 2
PORT_MAPPING_ILB, PORT_MAPPING_LOCAL_ROUTED_VIP = 1, 2


def same_id(a: str | None, b: str | None) -> bool:
    """GUIDs compared as HNS does: case-insensitively, braces ignored; None equals nothing."""
    if not a or not b:
        return False
    return guid.normalize(a) == guid.normalize(b)


class HnsObject:
    """Base: JSON round-trip with case-insensitive keys and unknown keys kept in ``extra``.

    A subclass names its modelled fields in ``KEYS`` (attribute -> canonical JSON key) and makes
    them its ``__slots__``: plain classes, because generating dataclasses costs every plugin
    start more than all of its HNS calls on the simulator.
    """

    __slots__ = ("extra",)
    KEYS: ClassVar[dict[str, str]] = {}
    _BY_KEY: ClassVar[dict[str, str]] = {}

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        cls._BY_KEY = {key.casefold(): attr for attr, key in cls.KEYS.items()}

    def __init__(self, **values: Any) -> None:
        for attr in self.KEYS:
            setattr(self, attr, values.pop(attr, None))
        self.extra: JsonDict = values.pop("extra", None) or {}
        if values:
            raise TypeError(f"{type(self).__name__} has no field {', '.join(sorted(values))}")

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and self.to_json() == other.to_json()  # type: ignore[attr-defined]

    __hash__ = None  # type: ignore[assignment]  # mutable, like the dataclasses they replace

    def __repr__(self) -> str:
        shown = ", ".join(f"{a}={getattr(self, a)!r}" for a in self.KEYS if getattr(self, a) is not None)
        return f"{type(self).__name__}({shown})"

    @classmethod
    def from_json(cls: type[T], data: Mapping[str, Any] | str | bytes) -> T:
        """Build from a parsed document or its JSON text."""
        if isinstance(data, (str, bytes)):
            data = jsontext.loads(data)
        if not isinstance(data, dict):
            raise ValueError(f"{cls.__name__}: expected a JSON object, got {type(data).__name__}")
        keys = cls._BY_KEY
        known: dict[str, Any] = {}
        extra: dict[str, Any] = {}
        for k, v in data.items():
            attr = keys.get(k.casefold()) if isinstance(k, str) else None
            if attr is not None and attr not in known:
                known[attr] = v
            else:
                extra[k] = v
        return cls(**known, extra=extra)

    def to_json(self) -> JsonDict:
        """The document: modelled fields under their canonical keys (None omitted), then ``extra``."""
        out: JsonDict = {}
        for attr, key in self.KEYS.items():
            value = getattr(self, attr)
            if value is not None:
                out[key] = value
        out.update(self.extra)
        return out


class Subnet:
    """One subnet of a network, in either schema's terms (read-only)."""

    __slots__ = ("prefix", "gateway", "policies")

    def __init__(self, prefix: str, gateway: str | None, policies: tuple[JsonDict, ...] = ()) -> None:
        self.prefix, self.gateway, self.policies = prefix, gateway, policies

    def __eq__(self, other: object) -> bool:
        return type(other) is Subnet and (self.prefix, self.gateway, self.policies) == (
            other.prefix,
            other.gateway,
            other.policies,
        )  # type: ignore[attr-defined]

    def __repr__(self) -> str:
        return f"Subnet({self.prefix!r}, {self.gateway!r}, {self.policies!r})"

    @property
    def network(self) -> ipaddr.Network:
        return ipaddr.ip_network(self.prefix, strict=False)


def v1_list(text: Any) -> list[str]:
    """A V1 comma string ("10.0.0.10,10.0.0.11": how HNSCall holds DNS lists), or a list, as a list."""
    if isinstance(text, list):
        return [str(t) for t in text]
    return [t.strip() for t in str(text or "").split(",") if t.strip()]


def v1_text(items: Any) -> str:
    """A list as V1's comma string (the inverse of ``v1_list``)."""
    return ",".join(items)


def default_prefix(version: int) -> str:
    """The destination of IP ``version``'s default route."""
    return _DEFAULT_ROUTES[version == 6]


def default_gateway(routes: list[Any] | None, version: int | None = None) -> str | None:
    """The next hop of the default route (of IP ``version``, any when None) among V2 ``Routes``."""
    for r in routes or ():
        if not isinstance(r, dict):
            continue
        dest, hop = get_ci(r, "DestinationPrefix"), get_ci(r, "NextHop")
        if dest in _DEFAULT_ROUTES and hop:
            try:
                if version is None or ipaddr.ip_address(hop).version == version:
                    return hop
            except ValueError:
                continue
    return None


class _NetworkProperties:
    """What both network schemas answer the same way, from ``type``, ``subnets`` and ``policies``."""

    __slots__ = ()

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
            v = setting(list(s.policies), "VSID", self._vsid_key)
            if v is not None:
                return int(v)
        return None

    @property
    def vxlan_port(self) -> int | None:
        v = setting(self.policies, "VxlanPort", "Port")
        return None if v is None else int(v)


# --- V2 -----------------------------------------------------------------------------------------


class HostComputeNetwork(_NetworkProperties, HnsObject):
    """HCN network. A missing ``Type`` means NAT (enum 0 is omitted by HNS)."""

    KEYS = {
        "id": "ID",
        "name": "Name",
        "type": "Type",
        "policies": "Policies",
        "mac_pool": "MacPool",
        "dns": "Dns",
        "ipams": "Ipams",
        "flags": "Flags",
        "health": "Health",
        "schema_version": "SchemaVersion",
    }
    __slots__ = tuple(KEYS)

    _vsid_key: ClassVar[str] = "IsolationId"

    @property
    def subnets(self) -> list[Subnet]:
        out = []
        for ipam in self.ipams or ():
            for s in get_ci(ipam, "Subnets") or ():
                prefix = get_ci(s, "IpAddressPrefix")
                if prefix:
                    out.append(Subnet(prefix, default_gateway(get_ci(s, "Routes")), tuple(get_ci(s, "Policies") or ())))
        return out

    @property
    def management_ip(self) -> str | None:
        """The ProviderAddress network policy HNS sets on overlay networks."""
        return setting(self.policies, "ProviderAddress", "ProviderAddress")

    @property
    def dr_mac_address(self) -> str | None:
        return setting(self.policies, "DrMacAddress", "Address")

    @property
    def adapter_name(self) -> str | None:
        return setting(self.policies, "NetAdapterName", "NetworkAdapterName")


class HostComputeEndpoint(HnsObject):
    """HCN endpoint; ``HostComputeNamespace`` is filled by HNS on attach (read-only)."""

    KEYS = {
        "id": "ID",
        "name": "Name",
        "host_compute_network": "HostComputeNetwork",
        "host_compute_namespace": "HostComputeNamespace",
        "policies": "Policies",
        "ip_configurations": "IpConfigurations",
        "dns": "Dns",
        "routes": "Routes",
        "mac_address": "MacAddress",
        "flags": "Flags",
        "health": "Health",
        "schema_version": "SchemaVersion",
        "state": "State",
    }
    __slots__ = tuple(KEYS)

    @property
    def ip_addresses(self) -> list[str]:
        return [get_ci(c, "IpAddress") for c in self.ip_configurations or () if get_ci(c, "IpAddress")]

    @property
    def is_remote(self) -> bool:
        """Another node's pod, made by kube-proxy for its load balancers (EndpointFlags bit 1)."""
        return bool(int(self.flags or 0) & REMOTE_ENDPOINT_FLAG)

    @property
    def prefix_length(self) -> int | None:
        for c in self.ip_configurations or ():
            if get_ci(c, "PrefixLength") is not None:
                return int(get_ci(c, "PrefixLength"))
        return None

    @property
    def gateway(self) -> str | None:
        """The IPv4 default route's NextHop (else the IPv6 one)."""
        return self.gateway_of(4) or self.gateway_of(6)

    def gateway_of(self, version: int) -> str | None:
        """The NextHop of IP ``version``'s default route, if any (none when HNS chose the address)."""
        return default_gateway(self.routes, version)

    @property
    def namespace_id(self) -> str | None:
        return self.host_compute_namespace or None

    @property
    def network_id(self) -> str | None:
        return self.host_compute_network

    @property
    def mac(self) -> str | None:
        return self.mac_address


class HostComputeNamespace(HnsObject):
    """HCN namespace; ``NamespaceId`` is the network compartment id."""

    KEYS = {
        "id": "ID",
        "namespace_id": "NamespaceId",
        "namespace_guid": "NamespaceGuid",
        "type": "Type",
        "resources": "Resources",
        "schema_version": "SchemaVersion",
    }
    __slots__ = tuple(KEYS)

    @property
    def compartment_id(self) -> int | None:
        return self.namespace_id

    @property
    def endpoint_ids(self) -> list[str]:
        out = []
        for r in self.resources or ():
            if (get_ci(r, "Type") or "").casefold() == "endpoint":
                data = get_ci(r, "Data") or {}
                ep = get_ci(data, "Id") if isinstance(data, dict) else None
                if ep:
                    out.append(ep)
        return out

    def has_endpoint(self, endpoint_id: str) -> bool:
        return any(same_id(e, endpoint_id) for e in self.endpoint_ids)


class HostComputeLoadBalancer(HnsObject):
    """HCN load balancer (kube-proxy's object; modelled for completeness and hnsctl)."""

    KEYS = {
        "id": "ID",
        "host_compute_endpoints": "HostComputeEndpoints",
        "source_vip": "SourceVIP",
        "frontend_vips": "FrontendVIPs",
        "port_mappings": "PortMappings",
        "flags": "Flags",
        "host_compute_network": "HostComputeNetwork",
        "schema_version": "SchemaVersion",
    }
    __slots__ = tuple(KEYS)

    @property
    def backend_ids(self) -> list[str]:
        """The endpoint IDs it balances over (none when the document holds no list)."""
        return _strings(self.host_compute_endpoints)

    @property
    def vips(self) -> list[str]:
        """Its frontend VIPs; none for a NodePort's (the node's own addresses)."""
        return _strings(self.frontend_vips)

    @property
    def mappings(self) -> list[JsonDict]:
        return [m for m in self.port_mappings if isinstance(m, dict)] if isinstance(self.port_mappings, list) else []


def _strings(value: Any) -> list[str]:
    """A recorded document's list of IDs or addresses, read as found: anything else is none."""
    return [str(v) for v in value] if isinstance(value, list) else []


# --- V1 -----------------------------------------------------------------------------------------


class HNSNetwork(_NetworkProperties, HnsObject):
    """V1 network; ``Type`` comes back lowercase, ``ManagementIP``/``DrMacAddress`` are top-level."""

    KEYS = {
        "id": "ID",
        "name": "Name",
        "type": "Type",
        "network_adapter_name": "NetworkAdapterName",
        "source_mac": "SourceMac",
        "policies": "Policies",
        "mac_pools": "MacPools",
        "raw_subnets": "Subnets",
        "dns_suffix": "DNSSuffix",
        "dns_server_list": "DNSServerList",
        "management_ip_field": "ManagementIP",
        "dr_mac_address_field": "DrMacAddress",
        "flags": "Flags",
        "state": "State",
    }
    __slots__ = tuple(KEYS)

    _vsid_key: ClassVar[str] = "VSID"

    @property
    def subnets(self) -> list[Subnet]:
        return [
            Subnet(get_ci(s, "AddressPrefix"), get_ci(s, "GatewayAddress") or None, tuple(get_ci(s, "Policies") or ()))
            for s in self.raw_subnets or ()
            if get_ci(s, "AddressPrefix")
        ]

    @property
    def management_ip(self) -> str | None:
        return self.management_ip_field or None

    @property
    def dr_mac_address(self) -> str | None:
        return self.dr_mac_address_field or setting(self.policies, "DrMacAddress", "Address")

    @property
    def adapter_name(self) -> str | None:
        return self.network_adapter_name


class HNSEndpoint(HnsObject):
    """V1 endpoint; ``SharedContainers`` lists the containers hot-attached through HCS."""

    KEYS = {
        "id": "ID",
        "name": "Name",
        "virtual_network": "VirtualNetwork",
        "virtual_network_name": "VirtualNetworkName",
        "policies": "Policies",
        "mac_address": "MacAddress",
        "ip_address": "IPAddress",
        "ipv6_address": "IPv6Address",
        "dns_suffix": "DNSSuffix",
        "dns_server_list": "DNSServerList",
        "gateway_address": "GatewayAddress",
        "gateway_address_v6": "GatewayAddressV6",
        "prefix_length": "PrefixLength",
        "ipv6_prefix_length": "IPv6PrefixLength",
        "is_remote_endpoint": "IsRemoteEndpoint",
        "namespace": "Namespace",
        "shared_containers": "SharedContainers",
        "state": "State",
    }
    __slots__ = tuple(KEYS)

    @property
    def ip_addresses(self) -> list[str]:
        return [a for a in (self.ip_address, self.ipv6_address) if a]

    @property
    def is_remote(self) -> bool:
        """Another node's pod, made by kube-proxy (or an old flanneld) for its load balancers."""
        return self.is_remote_endpoint is True

    @property
    def gateway(self) -> str | None:
        return self.gateway_address or self.gateway_address_v6 or None

    def gateway_of(self, version: int) -> str | None:
        """The gateway of IP ``version`` (V1 keeps one field per family)."""
        return self.gateway_address if version == 4 else self.gateway_address_v6

    @property
    def namespace_id(self) -> str | None:
        return get_ci(self.namespace, "ID") if isinstance(self.namespace, dict) else None

    @property
    def network_id(self) -> str | None:
        return self.virtual_network

    @property
    def provider_address(self) -> str | None:
        """A remote endpoint's PA policy: the address of the node that holds its IP."""
        return setting(self.policies, "PA", "PA")

    @property
    def mac(self) -> str | None:
        return self.mac_address

    def has_container(self, container_id: str) -> bool:
        """Whether ``container_id`` is in SharedContainers (case-insensitive, like hcsshim)."""
        return any(c.casefold() == container_id.casefold() for c in self.shared_containers or ())
