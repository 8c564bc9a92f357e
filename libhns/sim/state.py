"""HNS semantics over the simulator's state dict: create, attach, detach, delete — and refuse.

Everything here works on one loaded state (inside a store transaction or on a snapshot) and
raises ``Reject(hresult)`` for what HNS refuses; the surfaces in ``simulator.py`` turn that into
an HRESULT + ErrorRecord (V2) or a ``Success:false`` envelope (V1). IDs are stored uppercase
without braces, as HNS answers.
"""
from __future__ import annotations

import ipaddress
import itertools
import os
import time

from libhns import guid
from libhns import policies as P
from libhns.networks import NON_PERSISTENT
from libhns.sim import views
from libhns.sim.validate import (HCN_E_INVALID_ENDPOINT, HCN_E_INVALID_NETWORK, E_INVALIDARG,
                                 Reject, check_prefix, check_v2_policies, network_type)

TYPE_CHECKING = False  # the simulator is imported by every simulated pod command: no typing
if TYPE_CHECKING:
    from typing import Any, Iterator, Mapping

HCN_E_NETWORK_NOT_FOUND = 0x803B0001
HCN_E_ENDPOINT_NOT_FOUND = 0x803B0002
HCN_E_POLICY_NOT_FOUND = 0x803B0008
HCN_E_NETWORK_ALREADY_EXISTS = 0x803B0010
HCN_E_POLICY_ALREADY_EXISTS = 0x803B0012
HCN_E_ENDPOINT_ALREADY_ATTACHED = 0x803B0014
HCN_E_REQUEST_UNSUPPORTED = 0x803B0015
GCN_E_DEFAULTNAMESPACE_EXISTS = 0x803B0029
HCN_E_ENTITY_HAS_REFERENCES = 0x803B002C
HCN_E_ADDR_INVALID_OR_RESERVED = 0x803B002F
HCN_E_ENDPOINT_NOT_ATTACHED = 0x803B0034
ERROR_NOT_FOUND = 0x80070490
ERROR_ALREADY_EXISTS = 0x800700B7
ERROR_OBJECT_ALREADY_EXISTS = 0x80071392
HCS_E_SYSTEM_NOT_FOUND = 0xC037010E

#: store table per HCN kind
TABLES = {"Network": "networks", "Endpoint": "endpoints", "Namespace": "namespaces",
          "LoadBalancer": "loadbalancers"}
#: the HRESULT for "no such object" per kind (Open reports ERROR_NOT_FOUND for every kind)
NOT_FOUND = {"Network": HCN_E_NETWORK_NOT_FOUND, "Endpoint": HCN_E_ENDPOINT_NOT_FOUND,
             "Namespace": ERROR_NOT_FOUND, "LoadBalancer": ERROR_NOT_FOUND}

DEFAULT_MAC_POOL = {"StartMacAddress": "00-15-5D-52-C0-00", "EndMacAddress": "00-15-5D-52-CF-FF"}
DEFAULT_MANAGEMENT_IP = "10.127.130.36"
#: network types bound to a host adapter, hence with a management IP
_ADAPTER_TYPES = {"L2Bridge", "L2Tunnel", "Overlay", "Transparent"}
_NAMESPACE_TYPES = ("Host", "HostDefault", "Guest", "GuestDefault")


def norm_id(value: Any) -> str:
    """Uppercase brace-less GUID; anything that is not a GUID is E_INVALIDARG."""
    found = guid.parse(str(value))
    if found is None:
        raise Reject(E_INVALIDARG, f"{value!r} is not a GUID.")
    return found


def new_id() -> str:
    raw = bytearray(os.urandom(16))
    raw[6], raw[8] = (raw[6] & 0x0F) | 0x40, (raw[8] & 0x3F) | 0x80  # a version-4 GUID, as HNS makes
    h = raw.hex().upper()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _mac_int(mac: str) -> int:
    return int(mac.replace("-", "").replace(":", ""), 16)


def _mac_str(value: int) -> str:
    raw = f"{value:012X}"
    return "-".join(raw[i:i + 2] for i in range(0, 12, 2))


def _lookup(table: Mapping[str, Any], id_: str) -> Any:
    return table.get(id_.upper())


class HnsState:
    """The loaded store with HNS's rules; ``management_ip`` is the node's default PA, which a
    new network reports only ``mgmt_delay`` seconds after its creation (HNS sets it up late)."""

    def __init__(self, data: dict[str, Any], management_ip: str = DEFAULT_MANAGEMENT_IP,
                 mgmt_delay: float = 0.0) -> None:
        self.data = data
        self.management_ip = management_ip
        self.mgmt_delay = mgmt_delay

    # --- lookups ---------------------------------------------------------------------------------
    def table(self, kind: str) -> dict[str, Any]:
        return self.data.setdefault(TABLES[kind], {})

    def get(self, kind: str, id_: str, code: int | None = None) -> dict[str, Any]:
        rec = _lookup(self.table(kind), norm_id(id_))
        if rec is None:
            raise Reject(code if code is not None else NOT_FOUND[kind])
        return rec

    def exists(self, kind: str, id_: str) -> bool:
        try:
            return _lookup(self.table(kind), norm_id(id_)) is not None
        except Reject:
            return False

    def endpoints_of(self, network_id: str) -> Iterator[dict[str, Any]]:
        for rec in self.table("Endpoint").values():
            if rec["doc"].get("HostComputeNetwork", "").upper() == network_id.upper():
                yield rec

    def enumerate(self, kind: str, filt: Mapping[str, Any]) -> list[str]:
        """IDs matching a HostComputeQuery filter (keys are the V1 field names, case-insensitive)."""
        out = []
        for id_, rec in self.table(kind).items():
            if all(self._matches(kind, rec, k, v) for k, v in filt.items()):
                out.append(id_)
        return out

    def _matches(self, kind: str, rec: Mapping[str, Any], key: str, want: Any) -> bool:
        doc, low = rec["doc"], key.casefold()
        if low == "id":
            return isinstance(want, str) and doc["ID"].upper() == guid.normalize(want)
        if kind == "Endpoint" and low in ("virtualnetwork", "hostcomputenetwork"):
            return isinstance(want, str) and doc.get("HostComputeNetwork", "").upper() == guid.normalize(want)
        if kind == "Endpoint" and low == "virtualnetworkname":
            net = _lookup(self.table("Network"), doc.get("HostComputeNetwork", ""))
            return net is not None and net["doc"].get("Name") == want
        return P.get_ci(doc, key) == want

    def network_name(self, network_id: str) -> str | None:
        net = _lookup(self.table("Network"), network_id or "")
        return net["doc"].get("Name") if net else None

    def v1_network(self, rec: Mapping[str, Any]) -> dict[str, Any]:
        return views.network_v1(rec, sum(1 for _ in self.endpoints_of(rec["doc"]["ID"])))

    def v1_endpoint(self, rec: Mapping[str, Any]) -> dict[str, Any]:
        return views.endpoint_v1(rec, self.network_name(rec["doc"].get("HostComputeNetwork", "")))

    def _next(self, counter: str) -> int:
        seq = self.data.setdefault("seq", {})
        seq[counter] = int(seq.get(counter, 0)) + 1
        return seq[counter]

    def _fresh_id(self, kind: str, requested: str | None) -> str:
        if requested is None:
            return new_id()
        id_ = norm_id(requested)
        if id_ in self.table(kind):
            raise Reject(ERROR_ALREADY_EXISTS)
        return id_

    # --- networks --------------------------------------------------------------------------------
    def create_network(self, doc: Mapping[str, Any], id_: str | None = None, *,
                       management_ip: str | None = None,
                       v1extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
        doc = dict(doc)
        id_ = self._fresh_id("Network", id_ or _nonzero_id(P.get_ci(doc, "ID")))
        name = P.get_ci(doc, "Name")
        if not isinstance(name, str) or not name:
            raise Reject(HCN_E_INVALID_NETWORK, "The network needs a Name.")
        ntype = network_type(P.get_ci(doc, "Type"))
        for rec in self.table("Network").values():
            if rec["doc"].get("Name", "").casefold() == name.casefold():
                raise Reject(HCN_E_NETWORK_ALREADY_EXISTS)
            if ntype == "NAT" and rec["doc"].get("Type", "NAT") == "NAT":
                raise Reject(ERROR_OBJECT_ALREADY_EXISTS)
        policies = check_v2_policies(P.get_ci(doc, "Policies"), P.KNOWN_V2_NETWORK_TYPES, "network")
        ipams = self._check_ipams(P.get_ci(doc, "Ipams"))
        pa = next((P.get_ci(p.get("Settings", {}), "ProviderAddress") for p in policies
                   if p["Type"] == "ProviderAddress"), None)
        mgmt = management_ip or pa or (self.management_ip if ntype in _ADAPTER_TYPES else None)
        mac_pool = P.get_ci(doc, "MacPool") or {}
        if not P.get_ci(mac_pool, "Ranges"):
            mac_pool = {"Ranges": [dict(DEFAULT_MAC_POOL)]}
        out = {k: v for k, v in doc.items() if k.casefold() not in
               ("id", "name", "type", "policies", "ipams", "macpool", "dns", "flags",
                "schemaversion")}
        if ntype == "Overlay":
            if pa is None:
                policies.append({"Type": "ProviderAddress", "Settings": {"ProviderAddress": mgmt}})
            if not any(p["Type"] == "DrMacAddress" for p in policies):
                start = _mac_int(P.get_ci(mac_pool["Ranges"][0], "StartMacAddress"))
                policies.append({"Type": "DrMacAddress",
                                 "Settings": {"Address": _mac_str(start + 0xF00 + self._next("drmac"))}})
        stored = {"ID": id_, "Name": name, "Type": ntype, "Policies": policies,
                  "MacPool": mac_pool, "Dns": P.get_ci(doc, "Dns") or {}, "Ipams": ipams,
                  "Flags": int(P.get_ci(doc, "Flags") or 0),
                  "SchemaVersion": P.get_ci(doc, "SchemaVersion") or {"Major": 2, "Minor": 0},
                  **out}
        rec = {"doc": stored, "mgmt_ip": mgmt, "v1extra": dict(v1extra or {})}
        if mgmt and self.mgmt_delay > 0:
            rec["mgmt_at"] = time.time() + self.mgmt_delay  # wall clock: other processes read it
        self.table("Network")[id_] = rec
        return rec

    @staticmethod
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
                sub = {k: v for k, v in s.items() if k.casefold() not in
                       ("ipaddressprefix", "policies", "routes")}
                sub = {"IpAddressPrefix": prefix, **sub}
                spol = check_v2_policies(P.get_ci(s, "Policies"), P.KNOWN_V2_SUBNET_TYPES, "subnet")
                if spol:
                    sub["Policies"] = spol
                if P.get_ci(s, "Routes"):
                    sub["Routes"] = [dict(r) for r in P.get_ci(s, "Routes")]
                subnets.append(sub)
            out.append({"Type": P.get_ci(ipam, "Type") or "Static", "Subnets": subnets})
        return out

    def modify_network(self, rec: dict[str, Any], request: Mapping[str, Any]) -> None:
        """ResourceType Policy (Add/Remove/Update) and DNS; other kinds are unsupported."""
        rtype = str(P.get_ci(request, "ResourceType") or "")
        settings = P.get_ci(request, "Settings") or {}
        doc = rec["doc"]
        if rtype.casefold() == "policy":
            new = check_v2_policies(P.get_ci(settings, "Policies"), P.KNOWN_V2_NETWORK_TYPES,
                                    "network")
            doc["Policies"] = _modify_policies(doc.get("Policies") or [], new,
                                               P.get_ci(request, "RequestType"))
        elif rtype.casefold() == "dns":
            doc["Dns"] = dict(settings)
        else:
            raise Reject(HCN_E_REQUEST_UNSUPPORTED, f"Unsupported network ResourceType {rtype!r}.")

    def restart(self) -> list[str]:
        """What restarting the HNS service does: networks created with EnableNonPersistent are
        gone, with their endpoints (detached from namespaces and containers). Their names."""
        dropped = [rec for rec in self.table("Network").values()
                   if int(rec["doc"].get("Flags") or 0) & NON_PERSISTENT]
        for rec in dropped:
            for ep in list(self.endpoints_of(rec["doc"]["ID"])):
                self.delete_endpoint(ep["doc"]["ID"])
            self.table("Network").pop(rec["doc"]["ID"])
        return [rec["doc"]["Name"] for rec in dropped]

    def delete_network(self, id_: str) -> dict[str, Any]:
        rec = self.get("Network", id_)
        if any(True for _ in self.endpoints_of(rec["doc"]["ID"])):
            raise Reject(HCN_E_ENTITY_HAS_REFERENCES)
        return self.table("Network").pop(rec["doc"]["ID"])

    # --- endpoints -------------------------------------------------------------------------------
    def create_endpoint(self, network_id: str, doc: Mapping[str, Any], id_: str | None = None, *,
                        v1extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
        net = self.get("Network", network_id)
        netdoc = net["doc"]
        doc = dict(doc)
        id_ = self._fresh_id("Endpoint", id_ or _nonzero_id(P.get_ci(doc, "ID")))
        given_net = P.get_ci(doc, "HostComputeNetwork")
        if given_net and norm_id(given_net) != netdoc["ID"]:
            raise Reject(HCN_E_INVALID_ENDPOINT,
                         "HostComputeNetwork differs from the network the endpoint is created on.")
        if P.get_ci(doc, "HostComputeNamespace"):
            raise Reject(HCN_E_INVALID_ENDPOINT,
                         "HostComputeNamespace is read-only; attach through the namespace.")
        policies = check_v2_policies(P.get_ci(doc, "Policies"), P.KNOWN_V2_ENDPOINT_TYPES,
                                     "endpoint")
        cfgs = self._ip_configurations(net, P.get_ci(doc, "IpConfigurations"))
        mac = P.get_ci(doc, "MacAddress")
        mac = mac.upper().replace(":", "-") if isinstance(mac, str) and mac else self._assign_mac(net)
        rest = {k: v for k, v in doc.items() if k.casefold() not in
                ("id", "name", "hostcomputenetwork", "policies", "ipconfigurations", "dns",
                 "routes", "macaddress", "flags", "schemaversion", "state", "health")}
        stored: dict[str, Any] = {"ID": id_, "Name": P.get_ci(doc, "Name") or "",
                                  "HostComputeNetwork": netdoc["ID"]}
        if policies:
            stored["Policies"] = policies
        stored.update({"IpConfigurations": cfgs, "Dns": P.get_ci(doc, "Dns") or {}})
        if P.get_ci(doc, "Routes"):
            stored["Routes"] = [dict(r) for r in P.get_ci(doc, "Routes")]
        stored.update({"MacAddress": mac, "Flags": int(P.get_ci(doc, "Flags") or 0),
                       "SchemaVersion": P.get_ci(doc, "SchemaVersion") or {"Major": 2, "Minor": 0},
                       **rest})
        rec = {"doc": stored, "base_state": 1, "shared": [], "host": None,
               "v1extra": dict(v1extra or {})}
        self.table("Endpoint")[id_] = rec
        return rec

    def _subnets(self, net: Mapping[str, Any]) -> list[tuple[Any, set[Any]]]:
        """(subnet, reserved addresses) per subnet: network, broadcast and gateway are reserved."""
        out = []
        for ipam in net["doc"].get("Ipams") or ():
            for s in ipam.get("Subnets") or ():
                sn = ipaddress.ip_network(s["IpAddressPrefix"], strict=False)
                reserved = set()
                if sn.version == 4 and sn.prefixlen < 31:
                    reserved |= {sn.network_address, sn.broadcast_address}
                if not int(s.get("Flags") or 0) & 1:  # DoNotReserveGatewayAddress
                    for r in s.get("Routes") or ():
                        try:
                            reserved.add(ipaddress.ip_address(P.get_ci(r, "NextHop")))
                        except ValueError:
                            pass
                out.append((sn, reserved))
        return out

    def _used_ips(self, network_id: str) -> set[Any]:
        used = set()
        for rec in self.endpoints_of(network_id):
            for c in rec["doc"].get("IpConfigurations") or ():
                used.add(ipaddress.ip_address(c["IpAddress"]))
        return used

    def _ip_configurations(self, net: Mapping[str, Any], cfgs: Any) -> list[dict[str, Any]]:
        subnets = self._subnets(net)
        used = self._used_ips(net["doc"]["ID"])
        if not cfgs:
            return self._allocate_ip(subnets, used)
        if not isinstance(cfgs, list):
            raise Reject(HCN_E_INVALID_ENDPOINT, "IpConfigurations must be a list.")
        out = []
        for c in cfgs:
            text = P.get_ci(c, "IpAddress") if isinstance(c, dict) else None
            try:
                ip = ipaddress.ip_address(str(text))
            except ValueError:
                raise Reject(HCN_E_ADDR_INVALID_OR_RESERVED, f"Invalid IP address {text!r}.") from None
            match = next(((sn, res) for sn, res in subnets if ip in sn), None)
            if subnets and match is None:
                raise Reject(HCN_E_ADDR_INVALID_OR_RESERVED,
                             f"{ip} is not in a subnet of network {net['doc']['Name']!r}.")
            if match is not None and ip in match[1]:
                raise Reject(HCN_E_ADDR_INVALID_OR_RESERVED, f"{ip} is reserved in {match[0]}.")
            if ip in used:
                raise Reject(HCN_E_ADDR_INVALID_OR_RESERVED, f"{ip} is already in use.")
            used.add(ip)
            cfg = {"IpAddress": str(ip), **{k: v for k, v in c.items()
                                             if k.casefold() not in ("ipaddress", "prefixlength")}}
            plen = P.get_ci(c, "PrefixLength")
            if plen is None and match is not None:
                plen = match[0].prefixlen
            if plen is not None:
                cfg["PrefixLength"] = plen
            out.append(cfg)
        return out

    @staticmethod
    def _allocate_ip(subnets: list[tuple[Any, set[Any]]], used: set[Any]) -> list[dict[str, Any]]:
        """HNS's static IPAM: the first free address of the first subnet."""
        for sn, reserved in subnets:
            for ip in itertools.islice(sn.hosts(), 1 << 16):
                if ip not in reserved and ip not in used:
                    return [{"IpAddress": str(ip), "PrefixLength": sn.prefixlen}]
            raise Reject(HCN_E_ADDR_INVALID_OR_RESERVED, f"No free address left in {sn}.")
        return []

    def _assign_mac(self, net: dict[str, Any]) -> str:
        ranges = P.get_ci(net["doc"].get("MacPool") or {}, "Ranges") or [DEFAULT_MAC_POOL]
        start = _mac_int(P.get_ci(ranges[0], "StartMacAddress"))
        end = _mac_int(P.get_ci(ranges[0], "EndMacAddress"))
        taken = {rec["doc"].get("MacAddress") for rec in self.table("Endpoint").values()}
        seq = self.data.setdefault("seq", {})
        for _ in range(end - start + 1):  # host-wide counter: MACs are unique on the vSwitch
            seq["mac"] = int(seq.get("mac", 0)) % (end - start) + 1
            mac = _mac_str(start + seq["mac"])
            if mac not in taken:
                return mac
        raise Reject(HCN_E_ADDR_INVALID_OR_RESERVED, "The network's MAC pool is exhausted.")

    def modify_endpoint(self, rec: dict[str, Any], request: Mapping[str, Any]) -> None:
        rtype = str(P.get_ci(request, "ResourceType") or "")
        settings = P.get_ci(request, "Settings") or {}
        doc = rec["doc"]
        if rtype.casefold() == "policy":
            new = check_v2_policies(P.get_ci(settings, "Policies"), P.KNOWN_V2_ENDPOINT_TYPES,
                                    "endpoint")
            doc["Policies"] = _modify_policies(doc.get("Policies") or [], new,
                                               P.get_ci(request, "RequestType"))
        elif rtype.casefold() == "port":
            rec["port"] = dict(settings) if str(P.get_ci(request, "RequestType")) != "Remove" else None
        else:
            raise Reject(HCN_E_REQUEST_UNSUPPORTED, f"Unsupported endpoint ResourceType {rtype!r}.")

    def delete_endpoint(self, id_: str) -> dict[str, Any]:
        rec = self.get("Endpoint", id_)
        ep_id = rec["doc"]["ID"]
        ns_id = rec["doc"].get("HostComputeNamespace")
        if ns_id and ns_id in self.table("Namespace"):
            ns = self.table("Namespace")[ns_id]["doc"]
            ns["Resources"] = [r for r in ns.get("Resources") or () if not _is_endpoint(r, ep_id)]
        for c in self.data.setdefault("containers", {}).values():
            c["Endpoints"] = [e for e in c.get("Endpoints") or () if e != ep_id]
        rec["base_state"] = 4
        return self.table("Endpoint").pop(ep_id)

    def host_attach(self, rec: dict[str, Any], compartment: int) -> None:
        if rec.get("host") is not None:
            raise Reject(HCN_E_ENDPOINT_ALREADY_ATTACHED)
        rec["host"] = compartment

    def host_detach(self, rec: dict[str, Any]) -> None:
        if rec.get("host") is None:
            raise Reject(HCN_E_ENDPOINT_NOT_ATTACHED)
        rec["host"] = None
        rec["base_state"] = 4

    def container_attach(self, rec: dict[str, Any], container_id: str) -> None:
        shared = rec.setdefault("shared", [])
        if any(c.casefold() == container_id.casefold() for c in shared):
            raise Reject(HCN_E_ENDPOINT_ALREADY_ATTACHED)
        shared.append(container_id)
        cont = self.data.setdefault("containers", {}).get(container_id.casefold())
        if cont is not None:
            cont.setdefault("Endpoints", []).append(rec["doc"]["ID"])

    def container_detach(self, rec: dict[str, Any], container_id: str) -> None:
        shared = rec.setdefault("shared", [])
        keep = [c for c in shared if c.casefold() != container_id.casefold()]
        if len(keep) == len(shared):
            raise Reject(HCN_E_ENDPOINT_NOT_ATTACHED)
        rec["shared"] = keep
        rec["base_state"] = 4
        cont = self.data.setdefault("containers", {}).get(container_id.casefold())
        if cont is not None:
            cont["Endpoints"] = [e for e in cont.get("Endpoints") or () if e != rec["doc"]["ID"]]

    # --- namespaces ------------------------------------------------------------------------------
    def create_namespace(self, doc: Mapping[str, Any], id_: str | None = None, *,
                         is_default: bool = False) -> dict[str, Any]:
        id_ = self._fresh_id("Namespace", id_ or _nonzero_id(P.get_ci(doc, "ID")))
        ntype = P.get_ci(doc, "Type") or ("HostDefault" if is_default else "Host")
        canon = next((t for t in _NAMESPACE_TYPES if t.casefold() == str(ntype).casefold()), None)
        if canon is None:
            raise Reject(E_INVALIDARG, f"Invalid namespace type {ntype!r}.")
        if canon == "HostDefault":
            if any(r["doc"].get("Type") == "HostDefault" for r in self.table("Namespace").values()):
                raise Reject(GCN_E_DEFAULTNAMESPACE_EXISTS)
            compartment = 1
        else:
            compartment = self._next("compartment") + 1  # 1 is the host's default compartment
        stored = {"ID": id_, "NamespaceId": compartment, "Type": canon, "Resources": [],
                  "SchemaVersion": P.get_ci(doc, "SchemaVersion") or {"Major": 2, "Minor": 0}}
        rec = {"doc": stored, "v1extra": {"IsDefault": canon == "HostDefault"}}
        self.table("Namespace")[id_] = rec
        return rec

    def modify_namespace(self, rec: dict[str, Any], request: Mapping[str, Any]) -> None:
        """Endpoint (``{"EndpointId"}``) or Container (``{"ContainerId"}``) resources, Add/Remove."""
        rtype = str(P.get_ci(request, "ResourceType") or "").casefold()
        action = str(P.get_ci(request, "RequestType") or "").casefold()
        settings = P.get_ci(request, "Settings")
        if not isinstance(settings, dict) or action not in ("add", "remove"):
            raise Reject(E_INVALIDARG, "Namespace requests need RequestType Add/Remove and Settings.")
        if rtype == "endpoint":
            ep = self.get("Endpoint", P.get_ci(settings, "EndpointId") or "")
            if action == "add":
                self.namespace_add_endpoint(rec, ep)
            else:
                self.namespace_remove_endpoint(rec, ep)
        elif rtype == "container":
            cid = str(P.get_ci(settings, "ContainerId") or "")
            res = rec["doc"].setdefault("Resources", [])
            if action == "add":
                res.append({"Type": "Container", "Data": {"Id": cid}})
            else:
                rec["doc"]["Resources"] = [r for r in res if not (
                    r.get("Type") == "Container" and r.get("Data", {}).get("Id") == cid)]
        else:
            raise Reject(HCN_E_REQUEST_UNSUPPORTED, f"Unsupported namespace ResourceType {rtype!r}.")

    def namespace_add_endpoint(self, rec: dict[str, Any], ep: dict[str, Any]) -> None:
        if ep["doc"].get("HostComputeNamespace"):
            raise Reject(HCN_E_ENDPOINT_ALREADY_ATTACHED)
        ep["doc"]["HostComputeNamespace"] = rec["doc"]["ID"]
        rec["doc"].setdefault("Resources", []).append(
            {"Type": "Endpoint", "Data": {"Id": ep["doc"]["ID"]}})

    def namespace_remove_endpoint(self, rec: dict[str, Any], ep: dict[str, Any]) -> None:
        ep_id = ep["doc"]["ID"]
        if not any(_is_endpoint(r, ep_id) for r in rec["doc"].get("Resources") or ()):
            raise Reject(HCN_E_ENDPOINT_NOT_ATTACHED)
        rec["doc"]["Resources"] = [r for r in rec["doc"]["Resources"] if not _is_endpoint(r, ep_id)]
        ep["doc"].pop("HostComputeNamespace", None)
        ep["base_state"] = 4

    def delete_namespace(self, id_: str) -> dict[str, Any]:
        rec = self.get("Namespace", id_)
        for r in rec["doc"].get("Resources") or ():
            if (r.get("Type") or "").casefold() == "endpoint":
                ep = _lookup(self.table("Endpoint"), str(P.get_ci(r.get("Data") or {}, "Id")))
                if ep is not None:
                    ep["doc"].pop("HostComputeNamespace", None)
                    ep["base_state"] = 4
        return self.table("Namespace").pop(rec["doc"]["ID"])

    # --- load balancers (stored, not interpreted) --------------------------------------------
    def create_loadbalancer(self, doc: Mapping[str, Any], id_: str | None = None) -> dict[str, Any]:
        id_ = self._fresh_id("LoadBalancer", id_ or _nonzero_id(P.get_ci(doc, "ID")))
        for ep in P.get_ci(doc, "HostComputeEndpoints") or ():
            self.get("Endpoint", ep)
        stored = {**{k: v for k, v in doc.items() if k.casefold() != "id"}, "ID": id_}
        rec = {"doc": stored}
        self.table("LoadBalancer")[id_] = rec
        return rec

    # --- HCS compute systems (simulator-only registration) -------------------------------------
    def container(self, container_id: str) -> dict[str, Any]:
        cont = self.data.setdefault("containers", {}).get(container_id.casefold())
        if cont is None:
            raise Reject(HCS_E_SYSTEM_NOT_FOUND)
        return cont


def _nonzero_id(value: Any) -> str | None:
    if not value:
        return None
    return None if norm_id(value) == "00000000-0000-0000-0000-000000000000" else value


def _is_endpoint(resource: Mapping[str, Any], ep_id: str) -> bool:
    data = resource.get("Data") or {}
    return ((resource.get("Type") or "").casefold() == "endpoint"
            and str(P.get_ci(data, "Id") or "").upper() == ep_id.upper())


def _modify_policies(current: list[dict[str, Any]], new: list[dict[str, Any]],
                     request_type: Any) -> list[dict[str, Any]]:
    action = str(request_type or "").casefold()
    if action == "add":
        for p in new:
            if p in current:
                raise Reject(HCN_E_POLICY_ALREADY_EXISTS)
        return current + new
    if action == "remove":
        for p in new:
            if p not in current:
                raise Reject(HCN_E_POLICY_NOT_FOUND)
        return [p for p in current if p not in new]
    if action in ("update", "refresh"):
        types = {p["Type"] for p in new}
        return [p for p in current if p["Type"] not in types] + new
    raise Reject(E_INVALIDARG, f"Unsupported RequestType {request_type!r}.")
