"""A simulated HNS network: its stored record and HNS's rules for it (create, modify, delete, the
V1 view and V1 requests)."""

from __future__ import annotations

import time

from basics import ipaddr
from libhns import policies as P
from libhns.errors import (
    E_INVALIDARG,
    ERROR_OBJECT_ALREADY_EXISTS,
    HCN_E_INVALID_NETWORK,
    HCN_E_NETWORK_ALREADY_EXISTS,
    HCN_E_NETWORK_NOT_FOUND,
    HCN_E_POLICY_ALREADY_EXISTS,
    HCN_E_POLICY_NOT_FOUND,
    HCN_E_REQUEST_UNSUPPORTED,
)
from libhns.objects import default_gateway, default_prefix
from libhns.sim import v1form
from libhns.sim.record import StoredObject, requested_id, without
from libhns.sim.validate import Reject, check_prefix, check_v1_policies, check_v2_policies, network_type

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Mapping

    from libhns.sim.state import HnsState

DEFAULT_MAC_POOL = {"StartMacAddress": "00-15-5D-52-C0-00", "EndMacAddress": "00-15-5D-52-CF-FF"}
#: network types bound to a host adapter, hence with a management IP
_ADAPTER_TYPES = {"L2Bridge", "L2Tunnel", "Overlay", "Transparent"}
#: Network policies V1 shows as top-level fields instead of in ``Policies``.
_V1_TOP_LEVEL_POLICIES = {"netadaptername", "provideraddress", "drmacaddress"}
_V1_KEYS = {
    "id",
    "name",
    "type",
    "networkadaptername",
    "policies",
    "macpools",
    "subnets",
    "dnssuffix",
    "dnsserverlist",
    "managementip",
    "flags",
    "drmacaddress",
    "sourcemac",
    "state",
}
#: keys HcnCreateNetwork takes in a V1-schema document (and never in a V2 one)
_V1_CREATE_KEYS = ("Subnets", "NetworkAdapterName", "DNSServerList", "ManagementIP")


def mac_int(mac: str) -> int:
    return int(mac.replace("-", "").replace(":", ""), 16)


def mac_str(value: int) -> str:
    raw = f"{value:012X}"
    return "-".join(raw[i : i + 2] for i in range(0, 12, 2))


def is_v1_document(doc: Mapping[str, Any], v1_keys: tuple[str, ...]) -> bool:
    """HcnCreate* also takes V1-schema JSON (no SchemaVersion 2, V1 field names)."""
    sv = P.get_ci(doc, "SchemaVersion")
    if isinstance(sv, dict) and int(P.get_ci(sv, "Major") or 0) >= 2:
        return False
    return any(P.get_ci(doc, k) is not None for k in v1_keys)


def modify_policies(doc: dict[str, Any], request: Mapping[str, Any], known: frozenset[str], where: str) -> None:
    """A ``ResourceType: Policy`` request (Add / Remove / Update of ``Settings.Policies``)
    applied to the policies of ``doc`` (a network's or an endpoint's). Update (and Refresh)
    replaces every policy of each type the request holds and keeps the other types (hcsshim
    hcn.go: Update "replaces settings with the ones provided"; Azure NPM removes its ACLs by
    re-sending an endpoint's whole list with Update, reference/netpol.md)."""
    new = check_v2_policies(P.get_ci(P.get_ci(request, "Settings") or {}, "Policies"), known, where)
    current = doc.get("Policies") or []
    action = str(P.get_ci(request, "RequestType") or "").casefold()
    if action == "add":
        for p in new:
            if p in current:
                raise Reject(HCN_E_POLICY_ALREADY_EXISTS)
        doc["Policies"] = current + new
    elif action == "remove":
        for p in new:
            if p not in current:
                raise Reject(HCN_E_POLICY_NOT_FOUND)
        doc["Policies"] = [p for p in current if p not in new]
    elif action in ("update", "refresh"):
        types = {p["Type"] for p in new}
        doc["Policies"] = [p for p in current if p["Type"] not in types] + new
    else:
        raise Reject(E_INVALIDARG, f"Unsupported RequestType {P.get_ci(request, 'RequestType')!r}.")


class Network(StoredObject):
    """``mgmt_ip``: the management IP (ProviderAddress) a network on a host adapter gets;
    ``mgmt_at``: the wall-clock time it shows up (HNS sets it up late, ``LIBHNS_SIM_MGMT_DELAY``);
    ``v1extra``: keys of a V1 request HNS echoes back."""

    __slots__ = ("mgmt_ip", "mgmt_at", "v1extra")
    KIND, TABLE, NOT_FOUND = "Network", "networks", HCN_E_NETWORK_NOT_FOUND
    FIELDS = __slots__
    V1_COLLECTION = "networks"

    def __init__(
        self,
        doc: dict[str, Any],
        mgmt_ip: str | None = None,
        mgmt_at: float = 0.0,
        v1extra: dict[str, Any] | None = None,
    ) -> None:
        self.doc, self.mgmt_ip, self.mgmt_at = doc, mgmt_ip, mgmt_at
        self.v1extra = v1extra or {}

    @property
    def name(self) -> str:
        return self.doc.get("Name", "")

    @classmethod
    def create(
        cls,
        st: HnsState,
        doc: Mapping[str, Any],
        id_: str | None = None,
        *,
        management_ip: str | None = None,
        v1extra: Mapping[str, Any] | None = None,
    ) -> Network:
        """A V2 network document as HNS stores it: canonical type, checked policies and subnets,
        a MAC pool, and for an Overlay its ProviderAddress and DrMacAddress."""
        doc = dict(doc)
        id_ = cls.fresh_id(st, id_ or requested_id(doc))
        name = P.get_ci(doc, "Name")
        if not isinstance(name, str) or not name:
            raise Reject(HCN_E_INVALID_NETWORK, "The network needs a Name.")
        ntype = network_type(P.get_ci(doc, "Type"))
        for other in st.table("Network").values():
            if other.name.casefold() == name.casefold():
                raise Reject(HCN_E_NETWORK_ALREADY_EXISTS)
            if ntype == "NAT" and other.doc.get("Type", "NAT") == "NAT":
                raise Reject(ERROR_OBJECT_ALREADY_EXISTS)
        policies = check_v2_policies(P.get_ci(doc, "Policies"), P.KNOWN_V2_NETWORK_TYPES, "network")
        ipams = _check_ipams(P.get_ci(doc, "Ipams"))
        pa = P.setting(policies, "ProviderAddress", "ProviderAddress")
        adapter = P.setting(policies, "NetAdapterName", "NetworkAdapterName")
        bound = st.adapter_address(adapter) if ntype in _ADAPTER_TYPES else None
        mgmt = management_ip or pa or bound
        mac_pool = P.get_ci(doc, "MacPool") or {}
        if not P.get_ci(mac_pool, "Ranges"):
            mac_pool = {"Ranges": [dict(DEFAULT_MAC_POOL)]}
        rest = without(doc, "id", "name", "type", "policies", "ipams", "macpool", "dns", "flags", "schemaversion")
        if ntype == "Overlay":
            if pa is None:
                policies.append(P.PROVIDER_ADDRESS.v2(mgmt))
            if not any(p["Type"] == "DrMacAddress" for p in policies):
                start = mac_int(P.get_ci(mac_pool["Ranges"][0], "StartMacAddress"))
                policies.append(
                    {"Type": "DrMacAddress", "Settings": {"Address": mac_str(start + 0xF00 + st.next("drmac"))}}
                )
        stored = {
            "ID": id_,
            "Name": name,
            "Type": ntype,
            "Policies": policies,
            "MacPool": mac_pool,
            "Dns": P.get_ci(doc, "Dns") or {},
            "Ipams": ipams,
            "Flags": int(P.get_ci(doc, "Flags") or 0),
            "SchemaVersion": P.get_ci(doc, "SchemaVersion") or {"Major": 2, "Minor": 0},
            **rest,
        }
        mgmt_at = time.time() + st.mgmt_delay if mgmt and st.mgmt_delay > 0 else 0.0
        return st.add(cls(stored, mgmt, mgmt_at, dict(v1extra or {})))

    @classmethod
    def hcn_create(cls, st: HnsState, doc: dict[str, Any], id_: str | None, parent: str | None) -> Network:
        if is_v1_document(doc, _V1_CREATE_KEYS):
            v2, mgmt, extra = from_v1(doc)
            return cls.create(st, v2, id_, management_ip=mgmt, v1extra=extra)
        return cls.create(st, doc, id_)

    def modify(self, st: HnsState, request: Mapping[str, Any]) -> None:
        """ResourceType Policy (Add/Remove/Update) and DNS; other kinds are unsupported."""
        rtype = str(P.get_ci(request, "ResourceType") or "")
        if rtype.casefold() == "policy":
            modify_policies(self.doc, request, P.KNOWN_V2_NETWORK_TYPES, "network")
        elif rtype.casefold() == "dns":
            self.doc["Dns"] = dict(P.get_ci(request, "Settings") or {})
        else:
            raise Reject(HCN_E_REQUEST_UNSUPPORTED, f"Unsupported network ResourceType {rtype!r}.")

    def delete(self, st: HnsState) -> None:
        """HNS deletes a network that still has endpoints, and the endpoints with it (detached from
        their namespaces and containers). Programs written against real HNS rely on it: flanneld
        v0.27.4 (pkg/backend/hostgw/hostgw_windows.go) deletes ``cbr0`` when its lease changed
        while its own host endpoint ``cbr0_ep`` is still on it, stops if that fails, and then finds
        ``cbr0_ep`` gone and makes it again; vxlan_network_windows.go / device_windows.go delete
        ``flannel.<VNI>`` under running pods the same way."""
        for ep in list(st.endpoints_of(self.id)):
            st.delete("Endpoint", ep.id)

    def subnets(self) -> list[tuple[Any, set[Any]]]:
        """(subnet, reserved addresses) per subnet: network, broadcast and gateway are reserved."""
        out = []
        for ipam in self.doc.get("Ipams") or ():
            for s in ipam.get("Subnets") or ():
                sn = ipaddr.ip_network(s["IpAddressPrefix"], strict=False)
                reserved = set()
                if sn.version == 4 and sn.prefixlen < 31:
                    reserved |= {sn.network_address, sn.broadcast_address}
                if not int(s.get("Flags") or 0) & 1:  # DoNotReserveGatewayAddress
                    for r in s.get("Routes") or ():
                        try:
                            reserved.add(ipaddr.ip_address(P.get_ci(r, "NextHop")))
                        except ValueError:
                            pass
                out.append((sn, reserved))
        return out

    def mgmt_pending(self) -> bool:
        """True while a new network's management IP is not set up yet."""
        return self.mgmt_at > time.time()

    def v2(self, st: HnsState) -> dict[str, Any]:
        """The stored document, without the ProviderAddress policy while it is pending."""
        if not self.mgmt_pending():
            return self.doc
        return {
            **self.doc,
            "Policies": [
                p for p in self.doc.get("Policies") or () if (P.policy_type(p) or "").casefold() != "provideraddress"
            ],
        }

    def v1(self, st: HnsState) -> dict[str, Any]:
        """Lowercase type, ``Subnets[{AddressPrefix, GatewayAddress, Policies}]``, top-level
        ``ManagementIP`` / ``DrMacAddress`` / ``NetworkAdapterName``, flat policies."""
        doc = self.doc
        out: dict[str, Any] = {"ID": doc["ID"], "Name": self.name, "Type": doc.get("Type", "NAT").lower()}
        adapter = P.setting(doc.get("Policies"), "NetAdapterName", "NetworkAdapterName")
        if adapter:
            out["NetworkAdapterName"] = adapter
        out["Policies"] = [
            P.to_v1(p)
            for p in doc.get("Policies") or ()
            if (P.policy_type(p) or "").casefold() not in _V1_TOP_LEVEL_POLICIES
        ]
        out["MacPools"] = [dict(r) for r in P.get_ci(doc.get("MacPool") or {}, "Ranges") or []]
        subnets = []
        for ipam in doc.get("Ipams") or ():
            for s in P.get_ci(ipam, "Subnets") or ():
                sub: dict[str, Any] = {"AddressPrefix": P.get_ci(s, "IpAddressPrefix")}
                gw = default_gateway(
                    P.get_ci(s, "Routes"), ipaddr.ip_network(sub["AddressPrefix"], strict=False).version
                )
                if gw:
                    sub["GatewayAddress"] = gw
                sub["Policies"] = [P.to_v1(p) for p in P.get_ci(s, "Policies") or ()]
                subnets.append(sub)
        out["Subnets"] = subnets
        out.update(v1form.dns_to_v1(doc.get("Dns")))
        if self.mgmt_ip and not self.mgmt_pending():
            out["ManagementIP"] = self.mgmt_ip
        drmac = P.setting(doc.get("Policies"), "DrMacAddress", "Address")
        if drmac:
            out["DrMacAddress"] = drmac
        out["Flags"] = doc.get("Flags", 0)
        out["CurrentEndpointCount"] = sum(1 for _ in st.endpoints_of(self.id))
        out["State"] = 1
        out.update(self.v1extra)
        return out

    @classmethod
    def v1_create(cls, st: HnsState, doc: dict[str, Any]) -> Network:
        v2, mgmt, extra = from_v1(doc)
        return cls.create(st, v2, management_ip=mgmt, v1extra=extra)

    def v1_update(self, st: HnsState, doc: Mapping[str, Any]) -> None:
        """Only ``Extensions`` (the vSwitch extensions flanneld enables) is taken."""
        if P.get_ci(doc, "Extensions") is not None:
            self.v1extra["Extensions"] = P.get_ci(doc, "Extensions")


def _check_ipams(ipams: Any) -> list[dict[str, Any]]:
    if ipams is None:
        return []
    if not isinstance(ipams, list):
        raise Reject(HCN_E_INVALID_NETWORK, "Ipams must be a list.")
    out = []
    for ipam in ipams:
        if not isinstance(ipam, dict):
            raise Reject(HCN_E_INVALID_NETWORK, "Ipams entries must be objects.")
        subnets = []
        for s in P.get_ci(ipam, "Subnets") or ():
            if not isinstance(s, dict):
                raise Reject(HCN_E_INVALID_NETWORK, "Subnets entries must be objects.")
            prefix = P.get_ci(s, "IpAddressPrefix")
            check_prefix(prefix)
            sub = {"IpAddressPrefix": prefix, **without(s, "ipaddressprefix", "policies", "routes")}
            spol = check_v2_policies(P.get_ci(s, "Policies"), P.KNOWN_V2_SUBNET_TYPES, "subnet")
            if spol:
                sub["Policies"] = spol
            if P.get_ci(s, "Routes"):
                sub["Routes"] = [dict(r) for r in P.get_ci(s, "Routes")]
            subnets.append(sub)
        out.append({"Type": P.get_ci(ipam, "Type") or "Static", "Subnets": subnets})
    return out


def from_v1(doc: Mapping[str, Any]) -> tuple[dict[str, Any], str | None, dict[str, Any]]:
    """(V2 document, requested ManagementIP, V1-only keys to echo back) of a V1 network request."""
    g = lambda key: P.get_ci(doc, key)  # noqa: E731 - shorthand for the reads that follow
    policies = [P.to_v2(p) for p in check_v1_policies(g("Policies"), "network")]
    if g("NetworkAdapterName"):
        policies.insert(0, {"Type": "NetAdapterName", "Settings": {"NetworkAdapterName": g("NetworkAdapterName")}})
    if g("DrMacAddress"):
        policies.append({"Type": "DrMacAddress", "Settings": {"Address": g("DrMacAddress")}})
    subnets = []
    for s in g("Subnets") or ():
        if not isinstance(s, dict):
            raise Reject(E_INVALIDARG, "Subnets entries must be objects.")
        prefix = P.get_ci(s, "AddressPrefix")
        sub: dict[str, Any] = {"IpAddressPrefix": prefix}
        spol = [P.to_v2(p) for p in check_v1_policies(P.get_ci(s, "Policies"), "subnet")]
        if spol:
            sub["Policies"] = spol
        gw = P.get_ci(s, "GatewayAddress")
        if gw:
            sub["Routes"] = [{"NextHop": gw, "DestinationPrefix": default_prefix(6 if ":" in str(prefix) else 4)}]
        subnets.append(sub)
    v2: dict[str, Any] = {"Name": g("Name"), "Type": g("Type")}
    if g("ID"):
        v2["ID"] = g("ID")
    v2["Policies"] = policies
    pools = g("MacPools")
    if pools:
        v2["MacPool"] = {"Ranges": [dict(r) for r in pools]}
    v2["Dns"] = v1form.dns_from_v1(g)
    v2["Ipams"] = [{"Type": "Static", "Subnets": subnets}] if subnets else []
    if g("Flags") is not None:
        v2["Flags"] = g("Flags")
    v2["SchemaVersion"] = {"Major": 2, "Minor": 0}
    return v2, g("ManagementIP"), without(doc, *_V1_KEYS)
