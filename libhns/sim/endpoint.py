"""A simulated HNS endpoint: its stored record and HNS's rules for it (addresses and MACs on
create, policies and ports on modify, attachment to the host, a container or a namespace, the
V1 view and V1 requests)."""

from __future__ import annotations

from basics import ipaddr
from libhns import guid
from libhns import policies as P
from libhns.errors import (
    E_INVALIDARG,
    HCN_E_ADDR_INVALID_OR_RESERVED,
    HCN_E_ENDPOINT_ALREADY_ATTACHED,
    HCN_E_ENDPOINT_NOT_ATTACHED,
    HCN_E_ENDPOINT_NOT_FOUND,
    HCN_E_INVALID_ENDPOINT,
    HCN_E_NETWORK_NOT_FOUND,
    HCN_E_REQUEST_UNSUPPORTED,
)
from libhns.objects import REMOTE_ENDPOINT_FLAG, default_gateway, default_prefix
from libhns.sim import v1form
from libhns.sim.network import DEFAULT_MAC_POOL, is_v1_document, mac_int, mac_str, modify_policies
from libhns.sim.record import StoredObject, norm_id, requested_id, without
from libhns.sim.validate import Reject, check_v1_policies, check_v2_policies

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Mapping

    from libhns.sim.network import Network
    from libhns.sim.state import HnsState

#: EndpointState values
CREATED, ATTACHED, ATTACHED_SHARING, DETACHED = 1, 2, 3, 4
_V1_KEYS = {
    "id",
    "name",
    "virtualnetwork",
    "virtualnetworkname",
    "policies",
    "macaddress",
    "ipaddress",
    "ipv6address",
    "prefixlength",
    "ipv6prefixlength",
    "gatewayaddress",
    "gatewayaddressv6",
    "dnssuffix",
    "dnsserverlist",
    "dnsdomain",
    "isremoteendpoint",
    "disableicc",
    "enablelowmetric",
    "sharedcontainers",
    "state",
    "namespace",
}
#: keys HcnCreateEndpoint takes in a V1-schema document (and never in a V2 one)
_V1_CREATE_KEYS = ("VirtualNetwork", "IPAddress", "VirtualNetworkName", "DNSServerList", "GatewayAddress")
#: EndpointFlags bits and the V1 booleans they stand for.
_FLAG_FIELDS = (("IsRemoteEndpoint", 1), ("DisableICC", 2), ("EnableLowMetric", 8))


class Endpoint(StoredObject):
    """``base_state``: the EndpointState when attached to nothing (Created, or Detached once it
    was); ``shared``: the containers it is hot-attached to (V1, HCS); ``host``: the host
    compartment it is attached to (V1), or None; ``port``: a ResourceType Port setting;
    ``v1extra``: keys of a V1 request HNS echoes back. A namespace attachment is the document's
    ``HostComputeNamespace``, as HNS shows it."""

    __slots__ = ("base_state", "shared", "host", "port", "v1extra")
    KIND, TABLE, NOT_FOUND, PARENT = "Endpoint", "endpoints", HCN_E_ENDPOINT_NOT_FOUND, "Network"
    FIELDS = __slots__
    V1_COLLECTION = "endpoints"
    V1_ACTIONS = ("attach", "detach")

    def __init__(
        self,
        doc: dict[str, Any],
        base_state: int = CREATED,
        shared: list[str] | None = None,
        host: int | None = None,
        port: dict[str, Any] | None = None,
        v1extra: dict[str, Any] | None = None,
    ) -> None:
        self.doc, self.base_state, self.host, self.port = doc, base_state, host, port
        self.shared = shared or []
        self.v1extra = v1extra or {}

    @property
    def network_id(self) -> str:
        return self.doc.get("HostComputeNetwork", "")

    @property
    def namespace_id(self) -> str | None:
        return self.doc.get("HostComputeNamespace")

    def ips(self) -> list[str]:
        return [c["IpAddress"] for c in self.doc.get("IpConfigurations") or ()]

    def is_remote(self) -> bool:
        """Another node's pod or a Service VIP (EndpointFlags RemoteEndpoint, V1 IsRemoteEndpoint)."""
        return bool(int(self.doc.get("Flags") or 0) & REMOTE_ENDPOINT_FLAG)

    @classmethod
    def create(
        cls,
        st: HnsState,
        network_id: str,
        doc: Mapping[str, Any],
        id_: str | None = None,
        *,
        v1extra: Mapping[str, Any] | None = None,
    ) -> Endpoint:
        """A V2 endpoint document as HNS stores it: its network's, checked policies, addresses
        from the network's subnets (the first free one when none is asked for), a MAC."""
        net: Network = st.get("Network", network_id)
        doc = dict(doc)
        id_ = cls.fresh_id(st, id_ or requested_id(doc))
        given_net = P.get_ci(doc, "HostComputeNetwork")
        if given_net and norm_id(given_net) != net.id:
            raise Reject(
                HCN_E_INVALID_ENDPOINT, "HostComputeNetwork differs from the network the endpoint is created on."
            )
        if P.get_ci(doc, "HostComputeNamespace"):
            raise Reject(HCN_E_INVALID_ENDPOINT, "HostComputeNamespace is read-only; attach through the namespace.")
        policies = check_v2_policies(P.get_ci(doc, "Policies"), P.KNOWN_V2_ENDPOINT_TYPES, "endpoint")
        remote = bool(int(P.get_ci(doc, "Flags") or 0) & REMOTE_ENDPOINT_FLAG)
        cfgs = _ip_configurations(st, net, P.get_ci(doc, "IpConfigurations"), remote)
        mac = P.get_ci(doc, "MacAddress")
        mac = mac.upper().replace(":", "-") if isinstance(mac, str) and mac else _assign_mac(st, net)
        rest = without(
            doc,
            "id",
            "name",
            "hostcomputenetwork",
            "policies",
            "ipconfigurations",
            "dns",
            "routes",
            "macaddress",
            "flags",
            "schemaversion",
            "state",
            "health",
        )
        stored: dict[str, Any] = {"ID": id_, "Name": P.get_ci(doc, "Name") or "", "HostComputeNetwork": net.id}
        if policies:
            stored["Policies"] = policies
        stored.update({"IpConfigurations": cfgs, "Dns": P.get_ci(doc, "Dns") or {}})
        if P.get_ci(doc, "Routes"):
            stored["Routes"] = [dict(r) for r in P.get_ci(doc, "Routes")]
        stored.update(
            {
                "MacAddress": mac,
                "Flags": int(P.get_ci(doc, "Flags") or 0),
                "SchemaVersion": P.get_ci(doc, "SchemaVersion") or {"Major": 2, "Minor": 0},
                **rest,
            }
        )
        return st.add(cls(stored, v1extra=dict(v1extra or {})))

    @classmethod
    def hcn_create(cls, st: HnsState, doc: dict[str, Any], id_: str | None, parent: str | None) -> Endpoint:
        if is_v1_document(doc, _V1_CREATE_KEYS):
            v2, extra = from_v1(doc, parent)
            return cls.create(st, parent, v2, id_, v1extra=extra)
        return cls.create(st, parent, doc, id_)

    def modify(self, st: HnsState, request: Mapping[str, Any]) -> None:
        rtype = str(P.get_ci(request, "ResourceType") or "")
        if rtype.casefold() == "policy":
            modify_policies(self.doc, request, P.KNOWN_V2_ENDPOINT_TYPES, "endpoint")
        elif rtype.casefold() == "port":
            removed = str(P.get_ci(request, "RequestType")) == "Remove"
            self.port = None if removed else dict(P.get_ci(request, "Settings") or {})
        else:
            raise Reject(HCN_E_REQUEST_UNSUPPORTED, f"Unsupported endpoint ResourceType {rtype!r}.")

    def delete(self, st: HnsState) -> None:
        """Deleting an attached endpoint detaches it from its namespace and containers; load
        balancers over it keep referencing it (``loadbalancer.py``)."""
        ns = st.find("Namespace", self.namespace_id) if self.namespace_id else None
        if ns is not None:
            ns.drop_endpoint(self.id)
        for c in st.table("ComputeSystem").values():
            c.endpoints = [e for e in c.endpoints if e != self.id]
        self.base_state = DETACHED

    def matches(self, st: HnsState, key: str, want: Any) -> bool:
        low = key.casefold()
        if low in ("virtualnetwork", "hostcomputenetwork"):
            return isinstance(want, str) and self.network_id.upper() == guid.normalize(want)
        if low == "virtualnetworkname":
            net = st.find("Network", self.network_id)
            return net is not None and net.name == want
        return super().matches(st, key, want)

    # --- attachment ------------------------------------------------------------------------------
    def state(self) -> int:
        """EndpointState: Attached while anything holds it, AttachedSharing for several containers."""
        if len(self.shared) > 1:
            return ATTACHED_SHARING
        attached = bool(self.shared or self.host is not None or self.namespace_id)
        return ATTACHED if attached else self.base_state

    def host_attach(self, compartment: int) -> None:
        if self.host is not None:
            raise Reject(HCN_E_ENDPOINT_ALREADY_ATTACHED)
        self.host = compartment

    def host_detach(self) -> None:
        if self.host is None:
            raise Reject(HCN_E_ENDPOINT_NOT_ATTACHED)
        self.host, self.base_state = None, DETACHED

    def container_attach(self, st: HnsState, container_id: str) -> None:
        """HcsModifyComputeSystem Add: the container shares the endpoint (V1 hot attach)."""
        if any(c.casefold() == container_id.casefold() for c in self.shared):
            raise Reject(HCN_E_ENDPOINT_ALREADY_ATTACHED)
        self.shared.append(container_id)
        cont = st.find("ComputeSystem", container_id)
        if cont is not None:
            cont.endpoints.append(self.id)

    def container_detach(self, st: HnsState, container_id: str) -> None:
        keep = [c for c in self.shared if c.casefold() != container_id.casefold()]
        if len(keep) == len(self.shared):
            raise Reject(HCN_E_ENDPOINT_NOT_ATTACHED)
        self.shared, self.base_state = keep, DETACHED
        cont = st.find("ComputeSystem", container_id)
        if cont is not None:
            cont.endpoints = [e for e in cont.endpoints if e != self.id]

    # --- views ----------------------------------------------------------------------------------
    def v2(self, st: HnsState) -> dict[str, Any]:
        return {**self.doc, "State": self.state()}

    def v1(self, st: HnsState) -> dict[str, Any]:
        """First IPv4 / IPv6 configuration as ``IPAddress`` / ``IPv6Address``, gateways from the
        default routes, flags as booleans, ``SharedContainers``, the namespace by ID."""
        doc = self.doc
        net = st.find("Network", self.network_id)
        out: dict[str, Any] = {
            "ID": doc["ID"],
            "Name": doc.get("Name", ""),
            "VirtualNetwork": doc.get("HostComputeNetwork"),
            "VirtualNetworkName": net.name if net is not None else "",
        }
        out["Policies"] = [P.to_v1(p) for p in doc.get("Policies") or ()]
        if doc.get("MacAddress"):
            out["MacAddress"] = doc["MacAddress"]
        for cfg in doc.get("IpConfigurations") or ():
            ip = P.get_ci(cfg, "IpAddress")
            plen = P.get_ci(cfg, "PrefixLength")
            if ipaddr.ip_address(ip).version == 4 and "IPAddress" not in out:
                out["IPAddress"] = ip
                if plen is not None:
                    out["PrefixLength"] = plen
            elif ipaddr.ip_address(ip).version == 6 and "IPv6Address" not in out:
                out["IPv6Address"] = ip
                if plen is not None:
                    out["IPv6PrefixLength"] = plen
        gw4, gw6 = default_gateway(doc.get("Routes"), 4), default_gateway(doc.get("Routes"), 6)
        if gw4:
            out["GatewayAddress"] = gw4
        if gw6:
            out["GatewayAddressV6"] = gw6
        out.update(v1form.dns_to_v1(doc.get("Dns")))
        if P.get_ci(doc.get("Dns") or {}, "Domain"):
            out["DNSDomain"] = P.get_ci(doc["Dns"], "Domain")
        flags = int(doc.get("Flags") or 0)
        for name, bit in _FLAG_FIELDS:
            if flags & bit:
                out[name] = True
        if self.namespace_id:
            out["Namespace"] = {"ID": self.namespace_id}
        out["SharedContainers"] = list(self.shared)
        out["State"] = self.state()
        out.update(self.v1extra)
        return out

    # --- HNSCall (V1) ----------------------------------------------------------------------------
    @classmethod
    def v1_create(cls, st: HnsState, doc: dict[str, Any]) -> Endpoint:
        """``POST /endpoints/`` on ``VirtualNetwork`` (an ID) or ``VirtualNetworkName``."""
        net_id = P.get_ci(doc, "VirtualNetwork")
        if not net_id and P.get_ci(doc, "VirtualNetworkName"):
            ids = st.enumerate("Network", {"Name": P.get_ci(doc, "VirtualNetworkName")})
            net_id = ids[0] if ids else None
        if not net_id:
            raise Reject(HCN_E_NETWORK_NOT_FOUND)
        net = st.get("Network", net_id)
        v2, extra = from_v1(doc, net.id)
        return cls.create(st, net.id, v2, v1extra=extra)

    def v1_update(self, st: HnsState, doc: Mapping[str, Any]) -> None:
        """``POST /endpoints/<id>``: only ``Policies`` (V1 form) is taken. The request's ACLs
        replace the endpoint's ACL list, an absent or empty list clearing it (hcsshim PR #143:
        ApplyACLPolicy "will overwrite any existing policies which were previously applied";
        Felix logs "all rules will be removed" when it applies none, and hcsshim then omits the
        empty ``Policies``). Each other type the request holds replaces the endpoint's policies
        of that type, as a V2 Update does; a type it does not hold stays: Felix sends only ACLs
        on ``HNSEndpoint{Id}`` and the CNI's OutBoundNAT and routes go on working
        (reference/netpol.md, "How rules are applied")."""
        new = from_v1({"Policies": P.get_ci(doc, "Policies") or []}, "")[0]["Policies"]
        replaced = {p["Type"] for p in new} | {"ACL"}
        self.doc["Policies"] = [p for p in self.doc.get("Policies") or () if p["Type"] not in replaced] + new

    def v1_action(self, st: HnsState, action: str, doc: Mapping[str, Any]) -> None:
        """EndpointAttachDetachRequest: Host (CompartmentId) or Container (ContainerId)."""
        system = str(P.get_ci(doc, "SystemType") or "").casefold()
        attach = action == "attach"
        if system == "host":
            if attach:
                self.host_attach(int(P.get_ci(doc, "CompartmentId") or 1))
            else:
                self.host_detach()
        elif system == "container":
            cid = P.get_ci(doc, "ContainerId")
            if not cid:
                raise Reject(E_INVALIDARG, "ContainerId is required for SystemType Container.")
            if attach:
                self.container_attach(st, str(cid))
            else:
                self.container_detach(st, str(cid))
        else:
            raise Reject(E_INVALIDARG, f"Unsupported SystemType {P.get_ci(doc, 'SystemType')!r}.")


def _used_ips(st: HnsState, network_id: str, remote: bool | None = None) -> set[Any]:
    """The addresses the network's endpoints hold (only the remote or only the local ones)."""
    return {
        ipaddr.ip_address(ip)
        for ep in st.endpoints_of(network_id)
        if remote is None or ep.is_remote() == remote
        for ip in ep.ips()
    }


def _ip_configurations(st: HnsState, net: Network, cfgs: Any, remote: bool) -> list[dict[str, Any]]:
    """The requested addresses: a local endpoint's each in a subnet of the network, not
    reserved, not held by another local endpoint.

    A remote endpoint's address is taken as given: kube-proxy makes one for each Service VIP on
    an Overlay network, outside every subnet of it, and one for each pod of another node
    (neighbours.md: it does so on every Overlay node, so HNS accepts it). A local and a remote
    endpoint may hold the same address (kube-proxy's hns.go getAllEndpointsByNetwork: "a bug in
    Windows Server 2019 and 2022 that can cause two endpoints (local and remote) to be created
    with the same IP address"; kubernetes#130963); no source says HNS refuses two remote
    endpoints of one address, so the simulator does not either. An address HNS assigns is free
    of every endpoint's."""
    subnets = net.subnets()
    if not cfgs:
        return _allocate_ip(subnets, _used_ips(st, net.id))
    used = set() if remote else _used_ips(st, net.id, remote=False)
    if not isinstance(cfgs, list):
        raise Reject(HCN_E_INVALID_ENDPOINT, "IpConfigurations must be a list.")
    out = []
    for c in cfgs:
        text = P.get_ci(c, "IpAddress") if isinstance(c, dict) else None
        try:
            ip = ipaddr.ip_address(str(text))
        except ValueError:
            raise Reject(HCN_E_ADDR_INVALID_OR_RESERVED, f"Invalid IP address {text!r}.") from None
        match = None if remote else next(((sn, res) for sn, res in subnets if ip in sn), None)
        if subnets and match is None and not remote:
            raise Reject(HCN_E_ADDR_INVALID_OR_RESERVED, f"{ip} is not in a subnet of network {net.name!r}.")
        if match is not None and ip in match[1]:
            raise Reject(HCN_E_ADDR_INVALID_OR_RESERVED, f"{ip} is reserved in {match[0]}.")
        if ip in used:
            raise Reject(HCN_E_ADDR_INVALID_OR_RESERVED, f"{ip} is already in use.")
        used.add(ip)
        cfg = {"IpAddress": str(ip), **without(c, "ipaddress", "prefixlength")}
        plen = P.get_ci(c, "PrefixLength")
        if plen is None and match is not None:
            plen = match[0].prefixlen
        if plen is not None:
            cfg["PrefixLength"] = plen
        out.append(cfg)
    return out


def _allocate_ip(subnets: list[tuple[Any, set[Any]]], used: set[Any]) -> list[dict[str, Any]]:
    """HNS's static IPAM: the first free address of the first subnet."""
    for sn, reserved in subnets:
        for ip, _ in zip(sn.hosts(), range(1 << 16)):  # HNS looks no further
            if ip not in reserved and ip not in used:
                return [{"IpAddress": str(ip), "PrefixLength": sn.prefixlen}]
        raise Reject(HCN_E_ADDR_INVALID_OR_RESERVED, f"No free address left in {sn}.")
    return []


def _assign_mac(st: HnsState, net: Network) -> str:
    """The next free MAC of the network's pool, by a host-wide counter: MACs are unique on the
    vSwitch."""
    ranges = P.get_ci(net.doc.get("MacPool") or {}, "Ranges") or [DEFAULT_MAC_POOL]
    start = mac_int(P.get_ci(ranges[0], "StartMacAddress"))
    end = mac_int(P.get_ci(ranges[0], "EndMacAddress"))
    taken = {ep.doc.get("MacAddress") for ep in st.table("Endpoint").values()}
    seq = st.data.setdefault("seq", {})
    for _ in range(end - start + 1):
        seq["mac"] = int(seq.get("mac", 0)) % (end - start) + 1
        mac = mac_str(start + seq["mac"])
        if mac not in taken:
            return mac
    raise Reject(HCN_E_ADDR_INVALID_OR_RESERVED, "The network's MAC pool is exhausted.")


def from_v1(doc: Mapping[str, Any], network_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(V2 document, V1-only keys to echo back) of a V1 endpoint request."""
    g = lambda key: P.get_ci(doc, key)  # noqa: E731 - shorthand for the reads that follow
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
        routes.append({"NextHop": g("GatewayAddress"), "DestinationPrefix": default_prefix(4)})
    if g("GatewayAddressV6"):
        routes.append({"NextHop": g("GatewayAddressV6"), "DestinationPrefix": default_prefix(6)})
    if routes:
        v2["Routes"] = routes
    dns = v1form.dns_from_v1(g)
    if g("DNSDomain"):
        dns["Domain"] = g("DNSDomain")
    v2["Dns"] = dns
    if g("MacAddress"):
        v2["MacAddress"] = g("MacAddress")
    flags = 0
    for name, bit in _FLAG_FIELDS:
        if g(name):
            flags |= bit
    v2["Flags"] = flags
    v2["SchemaVersion"] = {"Major": 2, "Minor": 0}
    return v2, without(doc, *_V1_KEYS)
