"""What HNS refuses in a document, as ``Reject(hresult)``: policies of the wrong schema or an
unknown type, malformed JSON, bad prefixes. Shared by the V1 and V2 surfaces of the simulator."""

from __future__ import annotations

from basics import ipaddr, jsontext
from libhns import policies as P
from libhns.errors import (
    HCN_E_INVALID_IP,
    HCN_E_INVALID_JSON,
    HCN_E_INVALID_NETWORK_TYPE,
    HCN_E_INVALID_POLICY,
    HCN_E_INVALID_POLICY_TYPE,
    HCN_E_INVALID_PREFIX,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Iterator, Mapping


#: V2 policy types that mean nothing without Settings.
_NEEDS_SETTINGS = {
    "PortMapping",
    "SDNRoute",
    "ProviderAddress",
    "ACL",
    "QOS",
    "PortName",
    "EncapOverhead",
    "L4Proxy",
    "L4WFPPROXY",
    "TierAcl",
    "RemoteSubnetRoute",
    "NetAdapterName",
    "SourceMacAddress",
    "VxlanPort",
    "SetPolicy",
    "VSID",
    "VLAN",
    "DrMacAddress",
    "InterfaceConstraint",
    "VSwitchExtension",
    "LayerConstraint",
    "NetworkACL",
}
#: Settings keys each V2 type cannot do without.
_REQUIRED_KEYS = {
    "ProviderAddress": ("ProviderAddress",),
    "SDNRoute": ("DestinationPrefix",),
    "PortMapping": ("InternalPort",),
    "VSID": ("IsolationId",),
    "VLAN": ("IsolationId",),
    "NetAdapterName": ("NetworkAdapterName",),
    "RemoteSubnetRoute": ("DestinationPrefix", "ProviderAddress"),
    "VxlanPort": ("Port",),
}
#: V1 keys that, inside V2 Settings, betray a V1 document pasted into a V2 one.
_V1_KEYS_IN_SETTINGS = {"OutBoundNAT": ("ExceptionList",), "VSID": ("VSID",)}

NETWORK_TYPES = (
    "NAT",
    "ICS",
    "Transparent",
    "L2Bridge",
    "L2Tunnel",
    "Overlay",
    "Private",
    "Internal",
    "Mirrored",
    "Infiniband",
    "ConstrainedICS",
)


#: ACL enums as HNS spells them (hcsshim hnspolicy.go / hcnpolicy.go); "Pass" only from schema 2.10.
_ACL_ENUMS = {"Action": ("Allow", "Block", "Pass"), "Direction": ("In", "Out"), "RuleType": ("Host", "Switch")}


class Reject(Exception):
    """A refusal with the HRESULT HNS gives; ``message`` overrides the table's sentence."""

    def __init__(self, hresult: int, message: str | None = None) -> None:
        super().__init__(f"0x{hresult:08X}" + (f": {message}" if message else ""))
        self.hresult = hresult
        self.message = message


def parse_document(text: str, *, allow_empty: bool = False, code: int = HCN_E_INVALID_JSON) -> dict[str, Any]:
    """A JSON object from a request string, or Reject(code)."""
    if not text or not text.strip():
        if allow_empty:
            return {}
        raise Reject(code, "The request document is empty.")
    try:
        doc = jsontext.loads(text)
    except ValueError as exc:
        raise Reject(code, f"The JSON document is invalid: {exc}.") from None
    if not isinstance(doc, dict):
        raise Reject(code, "The JSON document must be an object.")
    return doc


def _typed(policies: Any, where: str) -> Iterator[tuple[Mapping[str, Any], str]]:
    """(policy, Type) for each entry of a Policies list; a missing list is empty."""
    if policies is None:
        return
    if not isinstance(policies, list):
        raise Reject(HCN_E_INVALID_POLICY, f"{where} Policies must be a list.")
    for p in policies:
        t = P.policy_type(p) if isinstance(p, dict) else None
        if t is None:
            raise Reject(HCN_E_INVALID_POLICY, f"{where} policy without a Type: {p!r}.")
        yield p, t


def check_v2_policies(policies: Any, known: frozenset[str], where: str) -> list[dict[str, Any]]:
    """Validate V2 policies (``{Type, Settings}``); returns them with canonical type names."""
    out = []
    for p, t in _typed(policies, where):
        if P.canonical_type(t, P.V1_ONLY_TYPES) and not P.canonical_type(t, known):
            raise Reject(
                HCN_E_INVALID_POLICY, f"{where} policy type {t!r} is a V1 policy; V2 documents need its V2 form."
            )
        canon = P.canonical_type(t, known)
        if canon is None:
            raise Reject(HCN_E_INVALID_POLICY_TYPE, f"Unknown {where} policy type {t!r}.")
        flat = [k for k in p if k.casefold() not in ("type", "settings")]
        if flat:
            raise Reject(HCN_E_INVALID_POLICY, f"{canon} policy has V1-style keys {flat} outside Settings.")
        settings = P.get_ci(p, "Settings")
        if settings is None and canon in _NEEDS_SETTINGS:
            raise Reject(HCN_E_INVALID_POLICY, f"{canon} policy needs Settings.")
        if settings is not None and not isinstance(settings, dict):
            raise Reject(HCN_E_INVALID_POLICY, f"{canon} policy Settings must be an object.")
        settings = dict(settings or {})
        for key in _REQUIRED_KEYS.get(canon, ()):
            if P.get_ci(settings, key) in (None, ""):
                raise Reject(HCN_E_INVALID_POLICY, f"{canon} policy needs Settings.{key}.")
        for key in _V1_KEYS_IN_SETTINGS.get(canon, ()):
            if P.get_ci(settings, key) is not None:
                raise Reject(HCN_E_INVALID_POLICY, f"{canon} policy has the V1 key {key}.")
        if canon == "ACL":
            check_acl(settings)
        has_settings = any(k.casefold() == "settings" for k in p)
        out.append({"Type": canon, "Settings": settings} if has_settings else {"Type": canon})
    return out


def check_v1_policies(policies: Any, where: str) -> list[dict[str, Any]]:
    """Validate V1 policies (flat keys); a ``Settings`` wrapper or a V2-only type is refused."""
    out = []
    for p, t in _typed(policies, where):
        if any(k.casefold() == "settings" for k in p) or P.canonical_type(t, P.V2_ONLY_TYPES):
            raise Reject(HCN_E_INVALID_POLICY, f"{where} policy {t!r} is in the V2 form; V1 documents need flat keys.")
        canon = P.canonical_type(t, P.KNOWN_V1_TYPES)
        if canon is None:
            raise Reject(HCN_E_INVALID_POLICY_TYPE, f"Unknown {where} policy type {t!r}.")
        if canon == "PA" and not P.get_ci(p, "PA"):
            raise Reject(HCN_E_INVALID_POLICY, "PA policy needs PA.")
        if canon == "ROUTE" and not P.get_ci(p, "DestinationPrefix"):
            raise Reject(HCN_E_INVALID_POLICY, "ROUTE policy needs DestinationPrefix.")
        if canon == "NAT" and P.get_ci(p, "InternalPort") is None:
            raise Reject(HCN_E_INVALID_POLICY, "NAT policy needs InternalPort.")
        if canon == "NAT" and P.get_ci(p, "Protocol") is not None:
            try:
                P.protocol_number(P.get_ci(p, "Protocol"))
            except ValueError:
                raise Reject(HCN_E_INVALID_POLICY, f"NAT policy protocol {P.get_ci(p, 'Protocol')!r}.") from None
        if canon == "ACL":
            check_acl({k: v for k, v in p.items() if k.casefold() != "type"})
        out.append({"Type": canon, **{k: v for k, v in p.items() if k.casefold() != "type"}})
    return out


def check_acl(acl: Mapping[str, Any]) -> None:
    """An ACL as HNS takes it, on either API: Action and Direction required, enums spelled as HNS
    spells them, Protocols and ports as strings of numbers, Priority a 16-bit number."""
    for key, allowed in _ACL_ENUMS.items():
        value = P.get_ci(acl, key)
        if value is None and key != "RuleType":
            raise Reject(HCN_E_INVALID_POLICY, f"ACL policy needs {key}.")
        if value is not None and value not in allowed:
            raise Reject(HCN_E_INVALID_POLICY, f"ACL policy {key} {value!r} is not one of {', '.join(allowed)}.")
    for key in ("Protocols", "LocalPorts", "RemotePorts", "LocalAddresses", "RemoteAddresses"):
        value = P.get_ci(acl, key)
        if value is not None and not isinstance(value, str):
            raise Reject(HCN_E_INVALID_POLICY, f"ACL policy {key} must be a string, not {value!r}.")
    protocols = P.get_ci(acl, "Protocols")
    if protocols and not all(x.strip().isdigit() and int(x) <= 255 for x in protocols.split(",")):
        raise Reject(HCN_E_INVALID_POLICY, f"ACL policy Protocols {protocols!r} is not a list of protocol numbers.")
    priority = P.get_ci(acl, "Priority")
    if priority is not None and (
        not isinstance(priority, int) or isinstance(priority, bool) or not 0 <= priority <= 65535
    ):
        raise Reject(HCN_E_INVALID_POLICY, f"ACL policy Priority {priority!r} is not a 16-bit number.")


def check_prefix(prefix: Any) -> ipaddr.Network:
    try:
        return ipaddr.ip_network(str(prefix), strict=False)
    except ValueError:
        raise Reject(HCN_E_INVALID_PREFIX, f"Invalid address prefix {prefix!r}.") from None


def network_type(value: Any) -> str:
    """Canonical NetworkMode; a missing type is NAT (enum 0)."""
    if value is None or value == "":
        return "NAT"
    if isinstance(value, str):
        for t in NETWORK_TYPES:
            if t.casefold() == value.casefold():
                return t
    raise Reject(HCN_E_INVALID_NETWORK_TYPE, f"Invalid network type {value!r}.")


#: HostComputeLoadBalancer's numeric fields and their largest values (hnslib hcnloadbalancer.go:
#: Flags and Protocol uint32, ports uint16, DistributionType 0 None, 1 SourceIPProtocol, 2 SourceIP).
_PORT_MAPPING_FIELDS = {
    "Protocol": 0xFFFFFFFF,
    "InternalPort": 0xFFFF,
    "ExternalPort": 0xFFFF,
    "DistributionType": 2,
    "Flags": 0xFFFFFFFF,
}


def check_load_balancer(doc: Mapping[str, Any]) -> None:
    """A HostComputeLoadBalancer's shape: backends a list of IDs, the VIPs addresses, the port
    mappings objects of numbers in their types' ranges. A field the schema cannot read is invalid
    JSON to HNS, an address that is none is HCN_E_INVALID_IP; every value that fits its type is
    taken (no source says HNS refuses one)."""
    for key in ("HostComputeEndpoints", "FrontendVIPs", "PortMappings"):
        value = P.get_ci(doc, key)
        if value is not None and not isinstance(value, list):
            raise Reject(HCN_E_INVALID_JSON, f"{key} must be a list.")
    if not all(isinstance(ep, str) for ep in P.get_ci(doc, "HostComputeEndpoints") or ()):
        raise Reject(HCN_E_INVALID_JSON, "HostComputeEndpoints must be a list of IDs.")
    for vip in [*(P.get_ci(doc, "FrontendVIPs") or ()), P.get_ci(doc, "SourceVIP") or ""]:
        if vip != "":
            check_address(vip)
    _check_number(P.get_ci(doc, "Flags"), "Flags", 0xFFFFFFFF)
    for mapping in P.get_ci(doc, "PortMappings") or ():
        if not isinstance(mapping, dict):
            raise Reject(HCN_E_INVALID_JSON, "PortMappings entries must be objects.")
        for key, top in _PORT_MAPPING_FIELDS.items():
            _check_number(P.get_ci(mapping, key), f"PortMappings {key}", top)


def _check_number(value: Any, where: str, top: int) -> None:
    if value is not None and (not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= top):
        raise Reject(HCN_E_INVALID_JSON, f"{where} {value!r} is not a number from 0 to {top}.")


def check_address(text: Any) -> ipaddr.Address:
    """An IP address, or HCN_E_INVALID_IP."""
    try:
        return ipaddr.ip_address(str(text))
    except ValueError:
        raise Reject(HCN_E_INVALID_IP, f"{text!r} is not an IP address.") from None
