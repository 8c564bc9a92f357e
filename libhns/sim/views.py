"""One store, two APIs: the V1 (HNSCall) view of stored V2 documents, and V1 requests as V2.

The store keeps V2 documents only, so that an endpoint created through ``POST /endpoints/`` is
the same object ``HcnEnumerateEndpoints`` finds. V1 answers are derived here: lowercase types,
``Subnets[{AddressPrefix,GatewayAddress,Policies}]``, top-level ``ManagementIP``/``DrMacAddress``,
flat policies, comma-string DNS lists.
"""
from __future__ import annotations

import ipaddress
import time

from libhns import policies as P
from libhns.sim.validate import E_INVALIDARG, Reject, check_v1_policies

TYPE_CHECKING = False  # the simulator is imported by every simulated pod command: no typing
if TYPE_CHECKING:
    from typing import Any, Mapping

_DEFAULT_ROUTES = ("0.0.0.0/0", "::/0")
#: Network policies V1 shows as top-level fields instead of in ``Policies``.
_V1_TOP_LEVEL_POLICIES = {"netadaptername", "provideraddress", "drmacaddress"}

_V1_NETWORK_KEYS = {"id", "name", "type", "networkadaptername", "policies", "macpools", "subnets",
                    "dnssuffix", "dnsserverlist", "managementip", "flags", "drmacaddress",
                    "sourcemac", "state"}
_V1_ENDPOINT_KEYS = {"id", "name", "virtualnetwork", "virtualnetworkname", "policies",
                     "macaddress", "ipaddress", "ipv6address", "prefixlength", "ipv6prefixlength",
                     "gatewayaddress", "gatewayaddressv6", "dnssuffix", "dnsserverlist", "dnsdomain",
                     "isremoteendpoint", "disableicc", "enablelowmetric", "sharedcontainers",
                     "state", "namespace"}

#: EndpointFlags bits and the V1 booleans they stand for.
_ENDPOINT_FLAG_FIELDS = (("IsRemoteEndpoint", 1), ("DisableICC", 2), ("EnableLowMetric", 8))


def _split(text: Any) -> list[str]:
    if isinstance(text, list):
        return [str(t) for t in text]
    return [t.strip() for t in str(text or "").split(",") if t.strip()]


def _gateway(routes: Any, version: int) -> str | None:
    for r in routes or ():
        if isinstance(r, dict) and P.get_ci(r, "DestinationPrefix") in _DEFAULT_ROUTES:
            hop = P.get_ci(r, "NextHop")
            try:
                if hop and ipaddress.ip_address(hop).version == version:
                    return hop
            except ValueError:
                continue
    return None


def _dns_v1(dns: Any) -> dict[str, str]:
    """V2 ``Dns`` lists as V1's comma strings (``DNSServerList``, ``DNSSuffix``)."""
    dns = dns or {}
    out = {}
    if P.get_ci(dns, "ServerList"):
        out["DNSServerList"] = ",".join(P.get_ci(dns, "ServerList"))
    if P.get_ci(dns, "Search"):
        out["DNSSuffix"] = ",".join(P.get_ci(dns, "Search"))
    return out


def mgmt_pending(rec: Mapping[str, Any]) -> bool:
    """True while a new network's management IP is not set up yet (``LIBHNS_SIM_MGMT_DELAY``)."""
    return float(rec.get("mgmt_at") or 0) > time.time()


def network_v2(rec: Mapping[str, Any]) -> dict[str, Any]:
    """The stored document, without the ProviderAddress policy while it is pending."""
    doc = rec["doc"]
    if not mgmt_pending(rec):
        return doc
    return {**doc, "Policies": [p for p in doc.get("Policies") or ()
                                if (P.policy_type(p) or "").casefold() != "provideraddress"]}


# --- V2 -> V1 -----------------------------------------------------------------------------------

def network_v1(rec: Mapping[str, Any], endpoint_count: int = 0) -> dict[str, Any]:
    doc = rec["doc"]
    out: dict[str, Any] = {"ID": doc["ID"], "Name": doc.get("Name", ""),
                           "Type": doc.get("Type", "NAT").lower()}
    adapter = _policy_setting(doc.get("Policies"), "NetAdapterName", "NetworkAdapterName")
    if adapter:
        out["NetworkAdapterName"] = adapter
    out["Policies"] = [P.to_v1(p) for p in doc.get("Policies") or ()
                       if (P.policy_type(p) or "").casefold() not in _V1_TOP_LEVEL_POLICIES]
    ranges = P.get_ci(doc.get("MacPool") or {}, "Ranges") or []
    out["MacPools"] = [dict(r) for r in ranges]
    subnets = []
    for ipam in doc.get("Ipams") or ():
        for s in P.get_ci(ipam, "Subnets") or ():
            sub: dict[str, Any] = {"AddressPrefix": P.get_ci(s, "IpAddressPrefix")}
            gw = _gateway(P.get_ci(s, "Routes"), ipaddress.ip_network(
                sub["AddressPrefix"], strict=False).version)
            if gw:
                sub["GatewayAddress"] = gw
            sub["Policies"] = [P.to_v1(p) for p in P.get_ci(s, "Policies") or ()]
            subnets.append(sub)
    out["Subnets"] = subnets
    out.update(_dns_v1(doc.get("Dns")))
    if rec.get("mgmt_ip") and not mgmt_pending(rec):
        out["ManagementIP"] = rec["mgmt_ip"]
    drmac = _policy_setting(doc.get("Policies"), "DrMacAddress", "Address")
    if drmac:
        out["DrMacAddress"] = drmac
    out["Flags"] = doc.get("Flags", 0)
    out["CurrentEndpointCount"] = endpoint_count
    out["State"] = 1
    out.update(rec.get("v1extra") or {})
    return out


def endpoint_state(rec: Mapping[str, Any]) -> int:
    """EndpointState: 1 Created, 2 Attached, 3 AttachedSharing, 4 Detached."""
    shared = rec.get("shared") or []
    attached = bool(shared or rec.get("host") is not None or rec["doc"].get("HostComputeNamespace"))
    if len(shared) > 1:
        return 3
    return 2 if attached else int(rec.get("base_state", 1))


def endpoint_v1(rec: Mapping[str, Any], network_name: str | None) -> dict[str, Any]:
    doc = rec["doc"]
    out: dict[str, Any] = {"ID": doc["ID"], "Name": doc.get("Name", ""),
                           "VirtualNetwork": doc.get("HostComputeNetwork"),
                           "VirtualNetworkName": network_name or ""}
    out["Policies"] = [P.to_v1(p) for p in doc.get("Policies") or ()]
    if doc.get("MacAddress"):
        out["MacAddress"] = doc["MacAddress"]
    for cfg in doc.get("IpConfigurations") or ():
        ip = P.get_ci(cfg, "IpAddress")
        plen = P.get_ci(cfg, "PrefixLength")
        if ipaddress.ip_address(ip).version == 4 and "IPAddress" not in out:
            out["IPAddress"] = ip
            if plen is not None:
                out["PrefixLength"] = plen
        elif ipaddress.ip_address(ip).version == 6 and "IPv6Address" not in out:
            out["IPv6Address"] = ip
            if plen is not None:
                out["IPv6PrefixLength"] = plen
    gw4, gw6 = _gateway(doc.get("Routes"), 4), _gateway(doc.get("Routes"), 6)
    if gw4:
        out["GatewayAddress"] = gw4
    if gw6:
        out["GatewayAddressV6"] = gw6
    out.update(_dns_v1(doc.get("Dns")))
    if P.get_ci(doc.get("Dns") or {}, "Domain"):
        out["DNSDomain"] = P.get_ci(doc["Dns"], "Domain")
    flags = int(doc.get("Flags") or 0)
    for name, bit in _ENDPOINT_FLAG_FIELDS:
        if flags & bit:
            out[name] = True
    if doc.get("HostComputeNamespace"):
        out["Namespace"] = {"ID": doc["HostComputeNamespace"]}
    out["SharedContainers"] = list(rec.get("shared") or [])
    out["State"] = endpoint_state(rec)
    out.update(rec.get("v1extra") or {})
    return out


def namespace_v1(rec: Mapping[str, Any]) -> dict[str, Any]:
    doc = rec["doc"]
    return {"ID": doc["ID"], "IsDefault": bool((rec.get("v1extra") or {}).get("IsDefault")),
            "ResourceList": [dict(r) for r in doc.get("Resources") or ()],
            "CompartmentId": doc.get("NamespaceId")}


def _policy_setting(policies: Any, type_: str, key: str) -> Any:
    for p in policies or ():
        if (P.policy_type(p) or "").casefold() == type_.casefold():
            settings = P.get_ci(p, "Settings")
            return P.get_ci(settings, key) if isinstance(settings, dict) else P.get_ci(p, key)
    return None


# --- V1 -> V2 -----------------------------------------------------------------------------------

def _extra(doc: Mapping[str, Any], known: set[str]) -> dict[str, Any]:
    return {k: v for k, v in doc.items() if k.casefold() not in known}


def network_from_v1(doc: Mapping[str, Any]) -> tuple[dict[str, Any], str | None, dict[str, Any]]:
    """(V2 document, requested ManagementIP, V1-only keys to echo back) of a V1 network request."""
    g = lambda key: P.get_ci(doc, key)  # noqa: E731
    policies = [P.to_v2(p) for p in check_v1_policies(g("Policies"), "network")]
    if g("NetworkAdapterName"):
        policies.insert(0, {"Type": "NetAdapterName",
                            "Settings": {"NetworkAdapterName": g("NetworkAdapterName")}})
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
            default = "::/0" if ":" in str(prefix) else "0.0.0.0/0"
            sub["Routes"] = [{"NextHop": gw, "DestinationPrefix": default}]
        subnets.append(sub)
    v2: dict[str, Any] = {"Name": g("Name"), "Type": g("Type")}
    if g("ID"):
        v2["ID"] = g("ID")
    v2["Policies"] = policies
    pools = g("MacPools")
    if pools:
        v2["MacPool"] = {"Ranges": [dict(r) for r in pools]}
    dns: dict[str, Any] = {}
    if g("DNSServerList"):
        dns["ServerList"] = _split(g("DNSServerList"))
    if g("DNSSuffix"):
        dns["Search"] = _split(g("DNSSuffix"))
    v2["Dns"] = dns
    v2["Ipams"] = [{"Type": "Static", "Subnets": subnets}] if subnets else []
    if g("Flags") is not None:
        v2["Flags"] = g("Flags")
    v2["SchemaVersion"] = {"Major": 2, "Minor": 0}
    return v2, g("ManagementIP"), _extra(doc, _V1_NETWORK_KEYS)


def endpoint_from_v1(doc: Mapping[str, Any], network_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(V2 document, V1-only keys to echo back) of a V1 endpoint request."""
    g = lambda key: P.get_ci(doc, key)  # noqa: E731
    v2: dict[str, Any] = {"Name": g("Name") or "", "HostComputeNetwork": network_id}
    if g("ID"):
        v2["ID"] = g("ID")
    v2["Policies"] = [P.to_v2(p) for p in check_v1_policies(g("Policies"), "endpoint")]
    cfgs = []
    for ip_key, len_key in (("IPAddress", "PrefixLength"), ("IPv6Address", "IPv6PrefixLength")):
        if g(ip_key):
            cfg: dict[str, Any] = {"IpAddress": g(ip_key)}
            if g(len_key) is not None:
                cfg["PrefixLength"] = g(len_key)
            cfgs.append(cfg)
    if cfgs:
        v2["IpConfigurations"] = cfgs
    routes = []
    if g("GatewayAddress"):
        routes.append({"NextHop": g("GatewayAddress"), "DestinationPrefix": "0.0.0.0/0"})
    if g("GatewayAddressV6"):
        routes.append({"NextHop": g("GatewayAddressV6"), "DestinationPrefix": "::/0"})
    if routes:
        v2["Routes"] = routes
    dns: dict[str, Any] = {}
    if g("DNSServerList"):
        dns["ServerList"] = _split(g("DNSServerList"))
    if g("DNSSuffix"):
        dns["Search"] = _split(g("DNSSuffix"))
    if g("DNSDomain"):
        dns["Domain"] = g("DNSDomain")
    v2["Dns"] = dns
    if g("MacAddress"):
        v2["MacAddress"] = g("MacAddress")
    flags = 0
    for name, bit in _ENDPOINT_FLAG_FIELDS:
        if g(name):
            flags |= bit
    v2["Flags"] = flags
    v2["SchemaVersion"] = {"Major": 2, "Minor": 0}
    return v2, _extra(doc, _V1_ENDPOINT_KEYS)
