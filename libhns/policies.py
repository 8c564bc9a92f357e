"""HNS policy documents for both schemas, and the translation between them.

V1 (HNSCall) policies are flat — every key sits next to ``Type``; V2 (HCN) policies wrap their
keys in ``Settings``. Several types are also renamed between the two (ROUTE ↔ SDNRoute, PA ↔
ProviderAddress, NAT ↔ PortMapping). Plugin configs carry either shape, HNS rejects the wrong one
(HCN_E_INVALID_POLICY), so builders take ``schema`` and ``to_v1``/``to_v2`` convert. Pure
functions, no I/O; the simulator validates with the same tables.
"""
from __future__ import annotations


TYPE_CHECKING = False  # typing costs more to import than a plugin's VERSION command
if TYPE_CHECKING:
    from typing import Any, Literal, Mapping

    Schema = Literal["v1", "v2"]
    Policy = dict[str, Any]

from basics.jsonci import get_ci

#: CNI / hcsshim protocol names -> IANA numbers (hcsshim ProtocolType).
PROTOCOLS: dict[str, int] = {"tcp": 6, "udp": 17, "icmpv4": 1, "icmp": 1, "icmpv6": 58, "igmp": 2}
#: IANA number -> the V1 NAT ``Protocol`` string produced by ``to_v1``.
_V1_PROTOCOL_NAMES: dict[int, str] = {6: "TCP", 17: "UDP"}

#: V2 endpoint policy types (hcsshim hcn/hcnpolicy.go, ``EndpointPolicyType``).
KNOWN_V2_ENDPOINT_TYPES: frozenset[str] = frozenset({
    "PortMapping", "ACL", "QOS", "L2Driver", "OutBoundNAT", "SDNRoute", "L4Proxy", "L4WFPPROXY",
    "PortName", "EncapOverhead", "Iov", "ProviderAddress", "InterfaceConstraint", "TierAcl",
    "Encryption", "VLAN", "InterfaceParameters", "Firewall",
})
#: V2 network policy types.
KNOWN_V2_NETWORK_TYPES: frozenset[str] = frozenset({
    "SourceMacAddress", "NetAdapterName", "InterfaceConstraint", "VSwitchExtension",
    "ProviderAddress", "DrMacAddress", "AutomaticDNS", "RemoteSubnetRoute", "VxlanPort",
    "HostRoute", "SetPolicy", "L4Proxy", "LayerConstraint", "NetworkACL", "NeighborDiscovery",
})
#: V2 subnet policy types.
KNOWN_V2_SUBNET_TYPES: frozenset[str] = frozenset({"VSID", "VLAN"})
#: V1 policy types (endpoint, network, subnet and policy-list policies).
KNOWN_V1_TYPES: frozenset[str] = frozenset({
    "NAT", "ACL", "PA", "VLAN", "VSID", "VNET", "L2Driver", "Isolation", "QOS", "OutBoundNAT",
    "ROUTE", "ELB", "PROXY", "DrMacAddress", "RemoteSubnetRoute", "HostRoute", "VxlanPort",
    "SourceMacAddress", "NetAdapterName", "ProviderAddress", "AutomaticDNS", "InterfaceConstraint",
    "EncapOverhead", "PortName",
})
#: Type names that exist only in V1; seeing one in a V2 document is a V1-shaped policy.
V1_ONLY_TYPES: frozenset[str] = frozenset({"NAT", "PA", "ROUTE", "ELB", "PROXY", "VNET", "Isolation"})
#: Type names that exist only in V2.
V2_ONLY_TYPES: frozenset[str] = frozenset({"PortMapping", "SDNRoute"})

_V1_TO_V2_TYPE = {"ROUTE": "SDNRoute", "PA": "ProviderAddress", "NAT": "PortMapping"}
_V2_TO_V1_TYPE = {v: k for k, v in _V1_TO_V2_TYPE.items()}


def canonical_type(name: str, known: frozenset[str] | set[str]) -> str | None:
    """The spelling of ``name`` in ``known``, matched case-insensitively; None when not there."""
    low = name.casefold()
    for k in known:
        if k.casefold() == low:
            return k
    return None


def policy_type(policy: Mapping[str, Any]) -> str | None:
    """The ``Type`` of a policy of either schema, None when missing or not a string."""
    t = get_ci(policy, "Type")
    return t if isinstance(t, str) else None


def protocol_number(protocol: str | int) -> int:
    """IANA number for 'tcp'/'udp'/'icmpv4'/'icmpv6'/'igmp' or a numeric string ('17', '0x11')."""
    if isinstance(protocol, bool):
        raise ValueError(f"invalid protocol {protocol!r}")
    if isinstance(protocol, int):
        number = protocol
    else:
        text = protocol.strip()
        if text.casefold() in PROTOCOLS:
            return PROTOCOLS[text.casefold()]
        try:
            number = int(text, 0)
        except ValueError:
            raise ValueError(f"unknown protocol {protocol!r}") from None
    if not 0 <= number <= 255:
        raise ValueError(f"protocol number out of range: {protocol!r}")
    return number


def _wrap(type_: str, settings: dict[str, Any], schema: Schema) -> Policy:
    if schema == "v2":
        return {"Type": type_, "Settings": settings}
    if schema == "v1":
        return {"Type": type_, **settings}
    raise ValueError(f"schema must be 'v1' or 'v2', not {schema!r}")


def _drop_none(**kv: Any) -> dict[str, Any]:
    return {k: v for k, v in kv.items() if v is not None}


# --- builders -----------------------------------------------------------------------------------

def outbound_nat(exceptions: list[str] | None = None, destinations: list[str] | None = None, *,
                 vip: str | None = None, schema: Schema = "v2") -> Policy:
    """OutBoundNAT: SNAT except to ``exceptions``, or (loopback DSR) only for ``destinations``."""
    if schema == "v1":
        return _wrap("OutBoundNAT", _drop_none(VIP=vip, ExceptionList=_list(exceptions),
                                               Destinations=_list(destinations)), "v1")
    return _wrap("OutBoundNAT", _drop_none(VirtualIP=vip, Exceptions=_list(exceptions),
                                           Destinations=_list(destinations)), schema)


def route(destination_prefix: str, *, next_hop: str | None = None, need_encap: bool = True,
          schema: Schema = "v2") -> Policy:
    """SDNRoute (V2) / ROUTE (V1): traffic to ``destination_prefix`` is encapsulated (service CIDR)."""
    settings = _drop_none(DestinationPrefix=destination_prefix, NextHop=next_hop,
                          NeedEncap=need_encap)
    return _wrap("ROUTE" if schema == "v1" else "SDNRoute", settings, schema)


def provider_address(address: str, *, schema: Schema = "v2") -> Policy:
    """ProviderAddress (V2) / PA (V1): the host's management IP on an overlay endpoint."""
    if schema == "v1":
        return {"Type": "PA", "PA": address}
    return _wrap("ProviderAddress", {"ProviderAddress": address}, schema)


def port_mapping(internal_port: int, external_port: int, protocol: str | int = "tcp", *,
                 vip: str | None = None, flags: int | None = None,
                 schema: Schema = "v2") -> Policy:
    """PortMapping (V2, numeric IANA protocol) / NAT (V1, the protocol string as given)."""
    if schema == "v1":
        return _wrap("NAT", _drop_none(Protocol=str(protocol), InternalPort=internal_port,
                                       ExternalPort=external_port, VIP=vip), "v1")
    settings = _drop_none(InternalPort=internal_port, ExternalPort=external_port,
                          Protocol=protocol_number(protocol), VIP=vip, Flags=flags)
    return _wrap("PortMapping", settings, schema)


def acl(*, action: str = "Allow", direction: str = "In", protocols: str | int | None = None,
        local_addresses: str | None = None, remote_addresses: str | None = None,
        local_ports: str | int | None = None, remote_ports: str | int | None = None,
        rule_type: str | None = None, priority: int | None = None, id: str | None = None,
        schema: Schema = "v2") -> Policy:
    """ACL: ``Protocols`` and ports are strings in both schemas ("6", "80,443")."""
    settings = _drop_none(
        Id=id, Protocols=None if protocols is None else str(protocol_number(protocols)),
        Action=action, Direction=direction, LocalAddresses=local_addresses,
        RemoteAddresses=remote_addresses,
        LocalPorts=None if local_ports is None else str(local_ports),
        RemotePorts=None if remote_ports is None else str(remote_ports),
        RuleType=rule_type, Priority=priority)
    return _wrap("ACL", settings, schema)


def vsid(isolation_id: int, *, schema: Schema = "v2") -> Policy:
    """VSID subnet policy (overlay virtual subnet id / VNI)."""
    if schema == "v1":
        return {"Type": "VSID", "VSID": isolation_id}
    return _wrap("VSID", {"IsolationId": isolation_id}, schema)


def policy(type_: str, settings: Mapping[str, Any] | None = None, *,
           schema: Schema = "v2") -> Policy:
    """Any other policy type, passed through: V2 wraps ``settings``, V1 flattens them."""
    return _wrap(type_, dict(settings or {}), schema)


def _list(values: list[str] | None) -> list[str] | None:
    return None if values is None else list(values)


# --- schema detection and translation -----------------------------------------------------------

def schema_of(policy: Mapping[str, Any]) -> Schema | None:
    """'v2' for ``{Type, Settings}``, 'v1' for flat keys or a V1-only type, None when it cannot tell.

    ``{"Type":"OutBoundNAT"}`` alone is valid in both schemas, hence None.
    """
    t = policy_type(policy)
    if t is None:
        return None
    others = [k for k in policy if not (isinstance(k, str) and k.casefold() == "type")]
    has_settings = any(k.casefold() == "settings" for k in others)
    flat = [k for k in others if k.casefold() != "settings"]
    if canonical_type(t, V1_ONLY_TYPES):
        return "v1"
    if flat:
        return "v1"
    if has_settings:
        return "v2"
    if canonical_type(t, V2_ONLY_TYPES):
        return "v2"
    return None


def _settings_of(policy: Mapping[str, Any]) -> dict[str, Any]:
    s = get_ci(policy, "Settings")
    return dict(s) if isinstance(s, dict) else {}


def _flat_of(policy: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in policy.items() if k.casefold() != "type"}


def _rename(src: Mapping[str, Any], mapping: Mapping[str, str]) -> dict[str, Any]:
    """Copy ``src`` renaming keys per ``mapping`` (matched case-insensitively); others kept."""
    low = {k.casefold(): v for k, v in mapping.items()}
    return {low.get(k.casefold(), k): v for k, v in src.items()}


_OUTBOUND_V1_TO_V2 = {"ExceptionList": "Exceptions", "VIP": "VirtualIP"}
_OUTBOUND_V2_TO_V1 = {v: k for k, v in _OUTBOUND_V1_TO_V2.items()}


def to_v2(policy: Mapping[str, Any]) -> Policy:
    """The V2 equivalent of a V1 policy (the pairs hcsshim maps between internal/hns/hnspolicy.go and
    hcn/hcnpolicy.go: OutBoundNAT ExceptionList/Settings.Exceptions, ROUTE/SDNRoute, PA/ProviderAddress,
    NAT/PortMapping); a V2 policy is returned as a copy."""
    if schema_of(policy) == "v2":
        return {"Type": policy_type(policy), "Settings": _settings_of(policy)}
    t = policy_type(policy)
    if t is None:
        raise ValueError(f"policy has no Type: {dict(policy)!r}")
    flat = _flat_of(policy)
    key = t.casefold()
    if key == "outboundnat":
        return {"Type": "OutBoundNAT", "Settings": _rename(flat, _OUTBOUND_V1_TO_V2)}
    if key == "route":
        return {"Type": "SDNRoute", "Settings": flat}
    if key == "pa":
        return {"Type": "ProviderAddress", "Settings": {"ProviderAddress": get_ci(flat, "PA")}}
    if key == "nat":
        settings = {k: v for k, v in flat.items()
                    if k.casefold() not in ("protocol", "externalportreserved")}
        proto = get_ci(flat, "Protocol")
        if proto is not None:
            settings["Protocol"] = protocol_number(proto)
        if get_ci(flat, "ExternalPortReserved"):
            settings["Flags"] = int(settings.get("Flags", 0)) | 4
        return {"Type": "PortMapping", "Settings": settings}
    if key == "acl":
        return {"Type": "ACL", "Settings": _acl_v1_to_v2(flat)}
    if key in ("vsid", "vlan"):
        name = "VSID" if key == "vsid" else "VLAN"
        settings = {k: v for k, v in flat.items() if k.casefold() != key}
        settings["IsolationId"] = get_ci(flat, name)
        return {"Type": name, "Settings": settings}
    return {"Type": t, "Settings": flat}


def _acl_v1_to_v2(flat: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in flat.items():
        low = k.casefold()
        if low == "protocol":
            if get_ci(flat, "Protocols") is None:
                out["Protocols"] = str(v)
        elif low == "localport":
            if get_ci(flat, "LocalPorts") is None:
                out["LocalPorts"] = str(v)
        elif low == "remoteport":
            if get_ci(flat, "RemotePorts") is None:
                out["RemotePorts"] = str(v)
        else:
            out[k] = v
    return out


def to_v1(policy: Mapping[str, Any]) -> Policy:
    """The V1 equivalent of a V2 policy (the inverse of ``to_v2``); a V1 policy is returned as a copy."""
    if schema_of(policy) == "v1":
        return dict(policy)
    t = policy_type(policy)
    if t is None:
        raise ValueError(f"policy has no Type: {dict(policy)!r}")
    s = _settings_of(policy)
    key = t.casefold()
    if key == "outboundnat":
        return {"Type": "OutBoundNAT", **_rename(s, _OUTBOUND_V2_TO_V1)}
    if key == "sdnroute":
        return {"Type": "ROUTE", **s}
    if key == "provideraddress":
        return {"Type": "PA", "PA": get_ci(s, "ProviderAddress")}
    if key == "portmapping":
        out: Policy = {"Type": "NAT"}
        for k, v in s.items():
            low = k.casefold()
            if low == "protocol":
                out["Protocol"] = _V1_PROTOCOL_NAMES.get(int(v), str(v))
            elif low == "flags":
                if int(v) & 4:
                    out["ExternalPortReserved"] = True
                if int(v) & ~4:
                    out["Flags"] = int(v) & ~4
            else:
                out[k] = v
        return out
    if key in ("vsid", "vlan"):
        name = "VSID" if key == "vsid" else "VLAN"
        rest = {k: v for k, v in s.items() if k.casefold() != "isolationid"}
        return {"Type": name, name: get_ci(s, "IsolationId"), **rest}
    return {"Type": t, **s}
