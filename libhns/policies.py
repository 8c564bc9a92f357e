"""HNS policy documents for both schemas, and the translation between them.

V1 (HNSCall) policies are flat — every key sits next to ``Type``; V2 (HCN) policies wrap their
keys in ``Settings``. Several types are also renamed between the two (ROUTE ↔ SDNRoute, PA ↔
ProviderAddress, NAT ↔ PortMapping). Plugin configs carry either shape, HNS rejects the wrong one
(HCN_E_INVALID_POLICY). So each type is one ``Kind`` here, holding both documents (``v1`` /
``v2``) and their translation; ``to_v1``/``to_v2`` convert any policy. Pure, no I/O; the
simulator validates with the same tables. (The CNI side of each type, the config keys it reads,
is ``plugins/winnet/policies.py``.)
"""

from __future__ import annotations

TYPE_CHECKING = False
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
KNOWN_V2_ENDPOINT_TYPES: frozenset[str] = frozenset(
    {
        "PortMapping",
        "ACL",
        "QOS",
        "L2Driver",
        "OutBoundNAT",
        "SDNRoute",
        "L4Proxy",
        "L4WFPPROXY",
        "PortName",
        "EncapOverhead",
        "Iov",
        "ProviderAddress",
        "InterfaceConstraint",
        "TierAcl",
        "Encryption",
        "VLAN",
        "InterfaceParameters",
        "Firewall",
    }
)
#: V2 network policy types.
KNOWN_V2_NETWORK_TYPES: frozenset[str] = frozenset(
    {
        "SourceMacAddress",
        "NetAdapterName",
        "InterfaceConstraint",
        "VSwitchExtension",
        "ProviderAddress",
        "DrMacAddress",
        "AutomaticDNS",
        "RemoteSubnetRoute",
        "VxlanPort",
        "HostRoute",
        "SetPolicy",
        "L4Proxy",
        "LayerConstraint",
        "NetworkACL",
        "NeighborDiscovery",
    }
)
#: V2 subnet policy types.
KNOWN_V2_SUBNET_TYPES: frozenset[str] = frozenset({"VSID", "VLAN"})
#: V1 policy types (endpoint, network, subnet and policy-list policies).
KNOWN_V1_TYPES: frozenset[str] = frozenset(
    {
        "NAT",
        "ACL",
        "PA",
        "VLAN",
        "VSID",
        "VNET",
        "L2Driver",
        "Isolation",
        "QOS",
        "OutBoundNAT",
        "ROUTE",
        "ELB",
        "PROXY",
        "DrMacAddress",
        "RemoteSubnetRoute",
        "HostRoute",
        "VxlanPort",
        "SourceMacAddress",
        "NetAdapterName",
        "ProviderAddress",
        "AutomaticDNS",
        "InterfaceConstraint",
        "EncapOverhead",
        "PortName",
    }
)
#: Type names that exist only in V1; seeing one in a V2 document is a V1-shaped policy.
V1_ONLY_TYPES: frozenset[str] = frozenset({"NAT", "PA", "ROUTE", "ELB", "PROXY", "VNET", "Isolation"})
#: Type names that exist only in V2.
V2_ONLY_TYPES: frozenset[str] = frozenset({"PortMapping", "SDNRoute"})


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


def _drop_none(**kv: Any) -> dict[str, Any]:
    return {k: v for k, v in kv.items() if v is not None}


def _list(values: list[str] | None) -> list[str] | None:
    return None if values is None else list(values)


def _rename(src: Mapping[str, Any], mapping: Mapping[str, str]) -> dict[str, Any]:
    """Copy ``src`` renaming keys per ``mapping`` (matched case-insensitively); others kept."""
    low = {k.casefold(): v for k, v in mapping.items()}
    return {low.get(k.casefold(), k): v for k, v in src.items()}


# --- one kind per policy type: its V1 and V2 documents and the translation between them ----------


class Kind:
    """One HNS policy type, as hcsshim keeps one type and one settings struct per policy: its
    name in each API, its document in each (``v1`` / ``v2``, taking the same settings), and the
    translation of a document of one API into the other (``to_v2`` / ``to_v1``, the pairs hcsshim
    maps between internal/hns/hnspolicy.go and hcn/hcnpolicy.go). Each type's subclass builds
    its documents; the base translation renames keys only."""

    __slots__ = ("v1_type", "v2_type", "v1_keys", "endpoint")

    def __init__(
        self, v1_type: str, v2_type: str = "", v1_keys: Mapping[str, str] | None = None, endpoint: bool = True
    ) -> None:
        self.v1_type, self.v2_type = v1_type, v2_type or v1_type
        self.v1_keys = dict(v1_keys or {})  # V1 flat key -> V2 Settings key
        self.endpoint = endpoint  # an endpoint policy (user policies of this type are translated)

    def v1_key(self, v2_key: str) -> str:
        """The V1 name of Settings key ``v2_key``."""
        return next((k for k, v in self.v1_keys.items() if v == v2_key), v2_key)

    def to_v2(self, type_: str, flat: dict[str, Any]) -> Policy:
        return {"Type": self.v2_type, "Settings": _rename(flat, self.v1_keys)}

    def to_v1(self, type_: str, settings: dict[str, Any]) -> Policy:
        return {"Type": self.v1_type, **_rename(settings, {v: k for k, v in self.v1_keys.items()})}


class _OutBoundNat(Kind):
    """OutBoundNAT: SNAT except to ``Exceptions``, or (loopback DSR) only for ``Destinations``."""

    __slots__ = ()

    def v1(
        self, exceptions: list[str] | None = None, destinations: list[str] | None = None, vip: str | None = None
    ) -> Policy:
        return {
            "Type": "OutBoundNAT",
            **_drop_none(VIP=vip, ExceptionList=_list(exceptions), Destinations=_list(destinations)),
        }

    def v2(
        self, exceptions: list[str] | None = None, destinations: list[str] | None = None, vip: str | None = None
    ) -> Policy:
        return {
            "Type": "OutBoundNAT",
            "Settings": _drop_none(VirtualIP=vip, Exceptions=_list(exceptions), Destinations=_list(destinations)),
        }


class _Route(Kind):
    """SDNRoute (V2) / ROUTE (V1): traffic to ``destination_prefix`` is encapsulated (service CIDR)."""

    __slots__ = ()

    def v1(self, destination_prefix: str, next_hop: str | None = None, need_encap: bool = True) -> Policy:
        return {"Type": "ROUTE", **self._settings(destination_prefix, next_hop, need_encap)}

    def v2(self, destination_prefix: str, next_hop: str | None = None, need_encap: bool = True) -> Policy:
        return {"Type": "SDNRoute", "Settings": self._settings(destination_prefix, next_hop, need_encap)}

    @staticmethod
    def _settings(destination_prefix: str, next_hop: str | None, need_encap: bool) -> dict[str, Any]:
        return _drop_none(DestinationPrefix=destination_prefix, NextHop=next_hop, NeedEncap=need_encap)


class _ProviderAddress(Kind):
    """ProviderAddress (V2) / PA (V1): the host's management IP on an overlay endpoint."""

    __slots__ = ()

    def v1(self, address: str) -> Policy:
        return {"Type": "PA", "PA": address}

    def v2(self, address: str) -> Policy:
        return {"Type": "ProviderAddress", "Settings": {"ProviderAddress": address}}

    def to_v2(self, type_: str, flat: dict[str, Any]) -> Policy:
        return self.v2(get_ci(flat, "PA"))

    def to_v1(self, type_: str, settings: dict[str, Any]) -> Policy:
        return self.v1(get_ci(settings, "ProviderAddress"))


class _PortMapping(Kind):
    """PortMapping (V2, numeric IANA protocol, ``Flags`` bit 4 = reserved external port) / NAT (V1,
    the protocol string as given, ``ExternalPortReserved``)."""

    __slots__ = ()

    def v1(self, internal_port: int, external_port: int, protocol: str | int = "tcp", vip: str | None = None) -> Policy:
        """V1's NAT has no host IP (hcsshim's NatPolicy): ``vip`` is taken, like V2's, and not sent."""
        return {"Type": "NAT", "Protocol": str(protocol), "InternalPort": internal_port, "ExternalPort": external_port}

    def v2(self, internal_port: int, external_port: int, protocol: str | int = "tcp", vip: str | None = None) -> Policy:
        return {
            "Type": "PortMapping",
            "Settings": _drop_none(
                InternalPort=internal_port, ExternalPort=external_port, Protocol=protocol_number(protocol), VIP=vip
            ),
        }

    def to_v2(self, type_: str, flat: dict[str, Any]) -> Policy:
        settings = {k: v for k, v in flat.items() if k.casefold() not in ("protocol", "externalportreserved")}
        proto = get_ci(flat, "Protocol")
        if proto is not None:
            settings["Protocol"] = protocol_number(proto)
        if get_ci(flat, "ExternalPortReserved"):
            settings["Flags"] = int(settings.get("Flags", 0)) | 4
        return {"Type": "PortMapping", "Settings": settings}

    def to_v1(self, type_: str, settings: dict[str, Any]) -> Policy:
        out: Policy = {"Type": "NAT"}
        for k, v in settings.items():
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


class _Acl(Kind):
    """ACL: ``Protocols`` and ports are strings in both APIs ("6", "80,443"); old V1 documents
    may spell them ``Protocol`` / ``LocalPort`` / ``RemotePort``."""

    __slots__ = ()

    def v1(self, **settings: Any) -> Policy:
        return {"Type": "ACL", **self._settings(**settings)}

    def v2(self, **settings: Any) -> Policy:
        return {"Type": "ACL", "Settings": self._settings(**settings)}

    @staticmethod
    def _settings(
        *,
        action: str = "Allow",
        direction: str = "In",
        protocols: str | int | None = None,
        local_addresses: str | None = None,
        remote_addresses: str | None = None,
        local_ports: str | int | None = None,
        remote_ports: str | int | None = None,
        rule_type: str | None = None,
        priority: int | None = None,
        id: str | None = None,
    ) -> dict[str, Any]:
        return _drop_none(
            Id=id,
            Protocols=None if protocols is None else str(protocol_number(protocols)),
            Action=action,
            Direction=direction,
            LocalAddresses=local_addresses,
            RemoteAddresses=remote_addresses,
            LocalPorts=None if local_ports is None else str(local_ports),
            RemotePorts=None if remote_ports is None else str(remote_ports),
            RuleType=rule_type,
            Priority=priority,
        )

    def to_v2(self, type_: str, flat: dict[str, Any]) -> Policy:
        return {"Type": "ACL", "Settings": _acl_v1_to_v2(flat)}

    def to_v1(self, type_: str, settings: dict[str, Any]) -> Policy:
        return {"Type": type_, **settings}


class _Isolation(Kind):
    """VSID / VLAN subnet policies: V1 names the id after the type, V2 calls it ``IsolationId``."""

    __slots__ = ()

    def v1(self, isolation_id: int) -> Policy:
        return {"Type": self.v1_type, self.v1_type: isolation_id}

    def v2(self, isolation_id: int) -> Policy:
        return {"Type": self.v2_type, "Settings": {"IsolationId": isolation_id}}

    def to_v2(self, type_: str, flat: dict[str, Any]) -> Policy:
        name = self.v1_type
        settings = {k: v for k, v in flat.items() if k.casefold() != name.casefold()}
        settings["IsolationId"] = get_ci(flat, name)
        return {"Type": name, "Settings": settings}

    def to_v1(self, type_: str, settings: dict[str, Any]) -> Policy:
        rest = {k: v for k, v in settings.items() if k.casefold() != "isolationid"}
        return {"Type": self.v1_type, self.v1_type: get_ci(settings, "IsolationId"), **rest}


class _HostRoute(Kind):
    """HostRoute, a network policy without settings: the host reaches the pods of its own
    overlay network (the kubelet's probes). flanneld adds it once the network exists, which
    only HCN can do to a network."""

    __slots__ = ()

    def v1(self) -> Policy:
        return {"Type": self.v1_type}

    def v2(self) -> Policy:
        return {"Type": self.v2_type, "Settings": {}}


OUTBOUND_NAT = _OutBoundNat("OutBoundNAT", v1_keys={"ExceptionList": "Exceptions", "VIP": "VirtualIP"})
ROUTE = _Route("ROUTE", "SDNRoute")
PROVIDER_ADDRESS = _ProviderAddress("PA", "ProviderAddress", v1_keys={"PA": "ProviderAddress"})
PORT_MAPPING = _PortMapping("NAT", "PortMapping")
ACL = _Acl("ACL")
VSID = _Isolation("VSID", endpoint=False)
VLAN = _Isolation("VLAN", endpoint=False)
HOST_ROUTE = _HostRoute("HostRoute", endpoint=False)
#: Every kind whose V1 and V2 documents we translate, by V1 and by V2 type name (casefolded).
_BY_V1 = {
    k.v1_type.casefold(): k for k in (OUTBOUND_NAT, ROUTE, PROVIDER_ADDRESS, PORT_MAPPING, ACL, VSID, VLAN, HOST_ROUTE)
}
_BY_V2 = {k.v2_type.casefold(): k for k in _BY_V1.values()}


def translatable(type_: str) -> bool:
    """An endpoint policy type (either API's spelling) whose documents ``to_v1``/``to_v2`` translate."""
    kind = _BY_V1.get(type_.casefold()) or _BY_V2.get(type_.casefold())
    return kind is not None and kind.endpoint


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


def setting(policies: Any, type_: str, key: str) -> Any:
    """Setting ``key`` of the first policy of ``type_`` (case-insensitive) in a list of either
    schema: from ``Settings`` (V2) or its flat keys (V1); None when there is none (or no list:
    a recorded document may hold anything)."""
    if not isinstance(policies, (list, tuple)):
        return None
    for p in policies:
        if isinstance(p, dict) and (policy_type(p) or "").casefold() == type_.casefold():
            settings = get_ci(p, "Settings")
            return get_ci(settings, key) if isinstance(settings, dict) else get_ci(p, key)
    return None


def to_v2(policy: Mapping[str, Any]) -> Policy:
    """The V2 equivalent of a V1 policy (its kind's ``to_v2``; an unknown type keeps its keys);
    a V2 policy is returned as a copy."""
    if schema_of(policy) == "v2":
        s = get_ci(policy, "Settings")
        return {"Type": policy_type(policy), "Settings": dict(s) if isinstance(s, dict) else {}}
    t = policy_type(policy)
    if t is None:
        raise ValueError(f"policy has no Type: {dict(policy)!r}")
    flat = {k: v for k, v in policy.items() if k.casefold() != "type"}
    kind = _BY_V1.get(t.casefold())
    return kind.to_v2(t, flat) if kind is not None else {"Type": t, "Settings": flat}


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
    s = get_ci(policy, "Settings")
    s = dict(s) if isinstance(s, dict) else {}
    kind = _BY_V2.get(t.casefold())
    return kind.to_v1(t, s) if kind is not None else {"Type": t, **s}
