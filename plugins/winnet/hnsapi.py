"""The two ways to drive HNS for a pod endpoint — HCN (V2) and HNSCall (V1) — behind one shape.

The lifecycle asks these adapters for networks and endpoints and to attach, release and list
them; it never branches on the API itself. Everything goes through ``libhns.client.HnsClient``.
"""
from __future__ import annotations

from basics import ipaddr
TYPE_CHECKING = False  # typing costs more to import than a plugin's VERSION command
if TYPE_CHECKING:
    from typing import Any, Protocol
else:
    Protocol = object  # EndpointApi is a Protocol for type checkers, a plain class at run time

from libhns import errors as hns_errors
from plugins.cni import log
from libhns.objects import same_id, v1_list

from .documents import V1, V2, Address, EndpointPlan, v1_document, v2_document
from libhns.guid import is_guid

from .config import DnsSettings


class EndpointApi(Protocol):
    schema: str  # "v1" | "v2": the policy schema this API takes
    policy_form: Any  # documents.V1 | V2: the form this API's policies and DNS take

    def network(self, name: str) -> Any | None: ...
    def create_network(self, doc: dict) -> Any: ...
    def management_ip(self, network: Any) -> str | None: ...
    def delete_network(self, network: Any) -> None: ...
    def endpoint(self, name: str) -> Any | None: ...
    def endpoint_to_release(self, name: str) -> Any | None: ...
    def create(self, plan: EndpointPlan) -> Any: ...
    def attach(self, ep: Any) -> None: ...
    def is_attached(self, ep: Any) -> bool: ...
    def release(self, ep: Any) -> None: ...
    def delete(self, ep: Any) -> None: ...
    def endpoints_of(self, network: Any) -> list[Any]: ...
    def dns(self, ep: Any) -> DnsSettings: ...
    def release_stale(self, ep: Any) -> None: ...
    def in_use(self, ep: Any) -> bool: ...
    def features(self) -> Any: ...
    def create_host_endpoint(self, network: Any, name: str, ip: str) -> Any: ...
    def delete_host_endpoint(self, name: str) -> None: ...


class _HostVnic:
    """flanneld's host vNIC on a bridge (``<network>_ep``): made, host-attached and deleted
    through HNSCall under either API, as flanneld does; both adapters inherit it."""
    client: Any

    def create_host_endpoint(self, network: Any, name: str, ip: str) -> Any:
        ep = self.client.v1_create_endpoint({"Name": name, "VirtualNetwork": network.id, "IPAddress": ip})
        self.client.v1_host_attach(ep.id, 1)
        return ep

    def delete_host_endpoint(self, name: str) -> None:
        ep = self.client.v1_get_endpoint_by_name(name)
        if ep is not None:
            self.client.v1_delete_endpoint(ep.id, missing_ok=True)


def addresses_of(ep: Any, network: Any) -> tuple[Address, ...]:
    """An existing endpoint's addresses with their prefix and gateway (for retries and CHECK)."""
    out = []
    for ip in ep.ip_addresses:
        addr = ipaddr.ip_address(ip)
        prefix = _prefix_for(ep, network, addr)
        gateway = ep.gateway_of(addr.version) or ""
        out.append(Address(interface=f"{ip}/{prefix}", gateway=gateway))
    return tuple(out)


def _prefix_for(ep: Any, network: Any, addr: Any) -> int:
    for subnet in network.subnets:
        net = ipaddr.ip_network(subnet.prefix, strict=False)
        if addr in net:
            return net.prefixlen
    if addr.version == 4 and getattr(ep, "prefix_length", None):
        return int(ep.prefix_length)
    return 32 if addr.version == 4 else 128


class HcnApi(_HostVnic):
    """HCN: every pod sandbox has its own HostComputeNamespace (CNI_NETNS is its GUID)."""
    schema = "v2"
    policy_form = V2

    def __init__(self, client: Any, netns: str) -> None:
        self.client = client
        self.netns = netns

    def network(self, name: str) -> Any | None:
        return self.client.get_network_by_name(name)

    def create_network(self, doc: dict) -> Any:
        return self.client.create_network(doc)

    def management_ip(self, network: Any) -> str | None:
        """HCN shows it on Overlay networks only (ProviderAddress); for the others ask V1, as
        flanneld does for cbr0."""
        if network.management_ip or network.is_type("Overlay"):
            return network.management_ip
        v1 = self.client.v1_get_network(network.id)
        return v1.management_ip if v1 is not None else None

    def delete_network(self, network: Any) -> None:
        self.client.delete_network(network.id, missing_ok=True)

    def add_network_policy(self, network: Any, policy: dict) -> None:
        self.client.modify_network(network.id, {"ResourceType": "Policy", "RequestType": "Add",
                                                "Settings": {"Policies": [policy]}})

    def endpoint(self, name: str) -> Any | None:
        return self.client.get_endpoint_by_name(name)

    def endpoint_to_release(self, name: str) -> Any | None:
        """DEL: when CNI_NETNS names the namespace, the endpoint's ID is all ``release`` needs,
        so its properties are not queried."""
        if not is_guid(self.netns):
            return self.endpoint(name)
        ids = self.client.endpoint_ids_by_name(name)
        return _Attached(ids[0], self.netns) if ids else None

    def create(self, plan: EndpointPlan) -> Any:
        return self.client.create_endpoint(plan.network_id, v2_document(plan))

    def attach(self, ep: Any) -> None:
        self.client.namespace_add_endpoint(self.netns, ep.id)

    def is_attached(self, ep: Any) -> bool:
        return same_id(ep.namespace_id, self.netns)

    def release(self, ep: Any) -> None:
        """Detach from whatever namespace holds it (gone is fine), then delete."""
        namespace = ep.namespace_id or self.netns
        if namespace:
            try:
                self.client.namespace_remove_endpoint(namespace, ep.id)
            except hns_errors.HnsError as err:
                if not _ignorable_detach(err):
                    raise
        self.delete(ep)

    def delete(self, ep: Any) -> None:
        try:
            self.client.delete_endpoint(ep.id)
        except hns_errors.NotFound:
            pass

    def endpoints_of(self, network: Any) -> list[Any]:
        return self.client.list_endpoints(network.id)

    def dns(self, ep: Any) -> DnsSettings:
        d = ep.dns or {}
        return DnsSettings(nameservers=tuple(d.get("ServerList") or ()), domain=d.get("Domain") or "",
                           search=tuple(d.get("Search") or ()), options=tuple(d.get("Options") or ()))

    def release_stale(self, ep: Any) -> None:
        """GC has no CNI_NETNS: ``release`` already detaches from the namespace the endpoint names."""
        self.release(ep)

    def in_use(self, ep: Any) -> bool:
        """Its sandbox is alive: the namespace it is attached to still exists."""
        return _namespace_exists(self.client, ep)

    def features(self) -> Any:
        return self.client.features()


def _namespace_exists(client: Any, ep: Any) -> bool:
    return bool(ep.namespace_id) and client.get_namespace(ep.namespace_id) is not None


class _Attached:
    """An endpoint known only by ID and namespace (what a V2 DEL needs)."""
    __slots__ = ("id", "namespace_id")

    def __init__(self, id_: str, namespace_id: str) -> None:
        self.id = id_
        self.namespace_id = namespace_id


def _ignorable_detach(err: Exception) -> bool:
    # Already gone, or never attached: the goal of a detach is reached.
    return isinstance(err, hns_errors.NotFound) or getattr(err, "hresult", None) == hns_errors.HCN_E_ENDPOINT_NOT_ATTACHED


def _unless_timeout(err: Exception) -> None:
    """A best-effort step may fail, but a hung HNS is reported (code 11), never passed over."""
    if isinstance(err, hns_errors.Timeout):
        raise err


class HnsV1Api(_HostVnic):
    """HNSCall: dockershim's pause container gets the endpoint by HCS hot attach; app containers
    (CNI_NETNS=container:<pause id>) share it."""
    schema = "v1"
    policy_form = V1

    def __init__(self, client: Any, container_id: str, netns: str) -> None:
        self.client = client
        self.container_id = container_id
        self.netns = netns

    @property
    def shared(self) -> bool:
        return self.netns.startswith("container:")

    def network(self, name: str) -> Any | None:
        return self.client.v1_get_network_by_name(name)

    def create_network(self, doc: dict) -> Any:
        """``doc`` is the V2 form (standalone mode builds that); HNSCall takes its V1 equivalent."""
        from libhns.networks import v1_network_document
        return self.client.v1_create_network(v1_network_document(doc))

    def management_ip(self, network: Any) -> str | None:
        return network.management_ip

    def delete_network(self, network: Any) -> None:
        self.client.v1_delete_network(network.id)

    def endpoint_to_release(self, name: str) -> Any | None:
        return self.endpoint(name)  # V1 detach needs the endpoint's own view (shared containers)

    def endpoint(self, name: str) -> Any | None:
        return self.client.v1_get_endpoint_by_name(name)

    def create(self, plan: EndpointPlan) -> Any:
        return self.client.v1_create_endpoint(v1_document(plan))

    def attach(self, ep: Any) -> None:
        try:
            self.client.v1_hot_attach(self.container_id, ep.id, endpoint=ep)
        except hns_errors.NotFound:
            # An app container that HCS does not know (already gone or not yet a compute system)
            # shares the pause container's endpoint anyway, as in the reference.
            if not self.shared:
                raise

    def is_attached(self, ep: Any) -> bool:
        return any(c.lower() == self.container_id.lower() for c in ep.shared_containers or ())

    def release(self, ep: Any) -> None:
        """App container: detach it and keep the shared endpoint. Pause (or unknown netns): detach and delete."""
        if self.shared:
            try:
                self.client.v1_container_detach(self.container_id, ep.id)
            except hns_errors.HnsError as err:
                _unless_timeout(err)  # best effort, like the reference: the pause container's DEL removes the endpoint
            return
        if self.is_attached(ep):
            try:
                self.client.v1_hot_detach(self.container_id, ep.id)
            except hns_errors.HnsError as err:
                _unless_timeout(err)  # the container may already be gone; the endpoint must go regardless
        self.delete(ep)

    def delete(self, ep: Any) -> None:
        try:
            self.client.v1_delete_endpoint(ep.id)
        except hns_errors.NotFound:
            pass

    def endpoints_of(self, network: Any) -> list[Any]:
        return self.client.v1_list_endpoints(network.id)

    def dns(self, ep: Any) -> DnsSettings:
        return DnsSettings(nameservers=tuple(v1_list(ep.dns_server_list)), search=tuple(v1_list(ep.dns_suffix)))

    def release_stale(self, ep: Any) -> None:
        """GC has no container to act for: detach every container still listed, then delete."""
        for container in list(ep.shared_containers or ()):
            try:
                self.client.v1_hot_detach(container, ep.id)
            except hns_errors.HnsError as err:  # the container is usually gone already
                _unless_timeout(err)
                log.event("gc-detach-failed", container=container, error=str(err))
        self.delete(ep)

    def in_use(self, ep: Any) -> bool:
        """Its sandbox is alive: a container sharing it still runs, or its namespace exists."""
        return (any(self.client.compute_system_exists(c) for c in ep.shared_containers or ())
                or _namespace_exists(self.client, ep))

    def features(self) -> Any:
        return self.client.features()
