"""The two ways to drive HNS for a pod endpoint — HCN (V2) and HNSCall (V1) — behind one shape.

The lifecycle asks these adapters for networks and endpoints and to attach, remove and list
them, and what an endpoint of their API can hold; it never branches on the API itself.
``EndpointApi`` is the whole of what they do: a caller needing anything else adds it there and
to both adapters, and an API that cannot do it refuses with a libhns error saying so. Each
adapter holds both clients of ``libhns.client`` over one raw stack, taken by keyword: its own
API's, and the other's for what only that one does (HNS's version, flanneld's host vNIC, whether
a sandbox is alive).
"""

from __future__ import annotations

from basics import ipaddr

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Protocol, Sequence

    from libhns.client import Features, HcnClient, HnsCallClient
    from libhns.policies import Kind
else:
    Protocol = object  # EndpointApi is a Protocol for type checkers, a plain class at run time

from libhns import errors as hns_errors
from libhns.guid import is_guid
from libhns.guid import normalize as guid_normalize
from libhns.objects import same_id, v1_list
from plugins.cni import log
from plugins.cni.errors import INVALID_CONFIG, INVALID_ENV, CniError

from .config import DnsSettings
from .documents import Address, EndpointPlan, v1_document, v2_document
from .policies import V1, V2


class EndpointApi(Protocol):
    """All that callers may ask of an adapter, and all that both adapters do
    (``tests/unit/test_winnet_hnsapi.py`` holds them to it)."""

    policy_form: Any  # policies.V1 | V2: the form this API's policies and DNS take
    shared: bool  # this command joins a container to its pod's existing endpoint
    lacks: tuple[str, ...]  # ``libhns.client.Features`` this API never has, whatever HNS's version
    attach_target: str  # what the pod's endpoint is attached to, as CHECK names it

    def network(self, name: str) -> Any | None: ...
    def create_network(self, doc: dict) -> Any: ...
    def management_ip(self, network: Any) -> str | None: ...
    def shows_management_ip(self, network: Any) -> bool: ...
    def delete_network(self, network: Any) -> None: ...
    def add_network_policy(self, network: Any, kind: Kind, *args: Any, **settings: Any) -> None: ...
    def endpoint(self, name: str) -> Any | None: ...
    def endpoint_to_remove(self, name: str) -> Any | None: ...
    def require_sandbox(self) -> None: ...
    def usable_ips(self, ips: Sequence[Any]) -> Sequence[Any]: ...
    def create(self, plan: EndpointPlan) -> Any: ...
    def attach(self, ep: Any) -> None: ...
    def is_attached(self, ep: Any) -> bool: ...
    def remove(self, ep: Any) -> None: ...
    def delete(self, ep: Any) -> None: ...
    def endpoints_of(self, network: Any) -> list[Any]: ...
    def survey(self, network: Any) -> list[Any]: ...
    def own_view(self, ep: Any) -> Any | None: ...
    def dns(self, ep: Any) -> DnsSettings: ...
    def remove_stale(self, ep: Any) -> None: ...
    def in_use(self, ep: Any) -> bool: ...
    def in_use_each(self, eps: Sequence[Any]) -> list[bool]: ...
    def features(self) -> Any: ...
    def create_host_endpoint(self, network: Any, name: str, ip: str) -> Any: ...
    def set_acls(self, ep: Any, acls: list[dict]) -> None: ...
    def delete_host_endpoint(self, name: str) -> None: ...
    def undo_window(self) -> Any: ...


class _Adapter:
    """What both adapters do alike, through the client of the API that does it. Both take the
    two clients, the pod's container ID and CNI_NETNS by keyword: the clients' types are
    alike enough that a swapped pair would run for a while before failing."""

    shared = False

    def __init__(self, *, hcn: HcnClient, hnscall: HnsCallClient, container_id: str, netns: str) -> None:
        self.hcn = hcn
        self.hnscall = hnscall
        self.container_id = container_id
        self.netns = netns

    def create_host_endpoint(self, network: Any, name: str, ip: str) -> Any:
        """flanneld's host vNIC on a bridge (``<network>_ep``): made, host-attached and deleted
        through HNSCall under either API, as flanneld does."""
        ep = self.hnscall.create_endpoint({"Name": name, "VirtualNetwork": network.id, "IPAddress": ip})
        self.hnscall.host_attach(ep.id, 1)
        return ep

    def delete_host_endpoint(self, name: str) -> None:
        ep = self.hnscall.get_endpoint_by_name(name)
        if ep is not None:
            self.hnscall.delete_endpoint(ep.id, missing_ok=True)

    def features(self) -> Features:
        return self.hnscall.features()  # only HNSCall tells HNS's version

    def undo_window(self) -> Any:
        return self.hnscall.undo_window()  # one deadline under both clients

    def in_use(self, ep: Any) -> bool:
        """Its sandbox is alive (the adapter's ``_held``): its namespace queried alone."""
        return self._held(ep, lambda id_: self.hcn.get_namespace(id_) is not None)

    def in_use_each(self, eps: Sequence[Any]) -> list[bool]:
        """``in_use`` of each of ``eps`` for a pass over many: the namespaces enumerated once,
        not one open and query per endpoint."""
        live = self.hcn.namespace_ids() if any(ep.namespace_id for ep in eps) else set()
        return [self._held(ep, lambda id_: guid_normalize(id_) in live) for ep in eps]

    def _held(self, ep: Any, namespace_exists: Any) -> bool:
        """Its sandbox is alive: the namespace it is attached to still exists."""
        return bool(ep.namespace_id) and namespace_exists(ep.namespace_id)


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


class HcnApi(_Adapter):
    """HCN: every pod sandbox has its own HostComputeNamespace (CNI_NETNS is its GUID)."""

    policy_form = V2
    lacks = ()
    _v1_missing = False  # HNSCall did not list endpoints once: ``survey`` asks HCN from then on

    @property
    def attach_target(self) -> str:
        return self.netns

    def network(self, name: str) -> Any | None:
        return self.hcn.get_network_by_name(name)

    def create_network(self, doc: dict) -> Any:
        return self.hcn.create_network(doc)

    def management_ip(self, network: Any) -> str | None:
        """HCN shows it on Overlay networks only; for the others ask HNSCall, as flanneld does
        for cbr0."""
        if network.management_ip or self.shows_management_ip(network):
            return network.management_ip
        v1 = self.hnscall.get_network(network.id)
        return v1.management_ip if v1 is not None else None

    def shows_management_ip(self, network: Any) -> bool:
        """Whether the network's own document shows it: as the ProviderAddress policy of Overlay."""
        return network.is_type("Overlay")

    def delete_network(self, network: Any) -> None:
        self.hcn.delete_network(network.id, missing_ok=True)

    def add_network_policy(self, network: Any, kind: Kind, *args: Any, **settings: Any) -> None:
        """A policy of ``kind`` added to an existing network (flanneld's HostRoute)."""
        from libhns.client import policy_request

        self.hcn.modify_network(network.id, policy_request("Add", [self.policy_form.policy(kind, *args, **settings)]))

    def endpoint(self, name: str) -> Any | None:
        return self.hcn.get_endpoint_by_name(name)

    def endpoint_to_remove(self, name: str) -> Any | None:
        """DEL: when CNI_NETNS names the namespace, the endpoint's ID is all ``remove`` needs,
        so its properties are not queried."""
        if not is_guid(self.netns):
            return self.endpoint(name)
        ids = self.hcn.endpoint_ids_by_name(name)
        return _Attached(ids[0], self.netns) if ids else None

    def require_sandbox(self) -> None:
        """ADD and CHECK attach to the pod's namespace: CNI_NETNS must be its GUID."""
        if not is_guid(self.netns):
            raise CniError(
                INVALID_ENV,
                f"apiVersion 2 (HCN) needs CNI_NETNS to be a HostComputeNamespace GUID, got {self.netns!r}",
                "this runtime looks dockershim-style: set apiVersion to 1 or remove it",
            )

    def usable_ips(self, ips: Sequence[Any]) -> Sequence[Any]:
        return ips

    def create(self, plan: EndpointPlan) -> Any:
        return self.hcn.create_endpoint(plan.network_id, v2_document(plan))

    def attach(self, ep: Any) -> None:
        self.hcn.namespace_add_endpoint(self.netns, ep.id)

    def is_attached(self, ep: Any) -> bool:
        return same_id(ep.namespace_id, self.netns)

    def remove(self, ep: Any) -> None:
        """Detach from whatever namespace holds it (gone is fine), then delete."""
        namespace = ep.namespace_id or self.netns
        if namespace:
            try:
                self.hcn.namespace_remove_endpoint(namespace, ep.id)
            except hns_errors.HnsError as err:
                if not _ignorable_detach(err):
                    raise
        self.delete(ep)

    def delete(self, ep: Any) -> None:
        self.hcn.delete_endpoint(ep.id, missing_ok=True)

    def endpoints_of(self, network: Any) -> list[Any]:
        return self.hcn.list_endpoints(network.id)

    def survey(self, network: Any) -> list[Any]:
        """The network's endpoints as HNSCall lists them, in one call whatever their number (HCN
        costs an open, a query and a close each): V1 documents, for a pass that reads many and
        acts on few (``own_view`` before acting). Where HNS serves no HNSCall, HCN's, said once."""
        if not self._v1_missing:
            try:
                return self.hnscall.list_endpoints(network.id)
            except (hns_errors.Unsupported, OSError, AttributeError) as err:  # no vmcompute.dll, or no HNSCall in it
                self._v1_missing = True
                log.warning(f"HNSCall does not list endpoints ({err}): each is read through HCN")
        return self.endpoints_of(network)

    def own_view(self, ep: Any) -> Any | None:
        """``ep`` as HCN shows it (read again by ID when ``survey`` gave its V1 view); None when gone."""
        from libhns.objects import HostComputeEndpoint

        return ep if isinstance(ep, HostComputeEndpoint) else self.hcn.get_endpoint(ep.id)

    def dns(self, ep: Any) -> DnsSettings:
        d = ep.dns or {}
        return DnsSettings(
            nameservers=tuple(d.get("ServerList") or ()),
            domain=d.get("Domain") or "",
            search=tuple(d.get("Search") or ()),
            options=tuple(d.get("Options") or ()),
        )

    def set_acls(self, ep: Any, acls: list[dict]) -> None:
        """Make ``acls`` (V2 documents) the endpoint's whole ACL list, its other policies as they
        are: one Update of the other policies ``ep`` (as last read) holds, then ``acls``, as Azure
        NPM sends it, so they stay whether HNS's Update replaces each type it is given (hcsshim:
        "replaces settings with the ones provided") or the whole list; an empty list is a Remove
        of the ACLs ``ep`` holds, nothing when it holds none. One HcnModifyEndpoint at most."""
        from libhns.client import policy_request
        from libhns.policies import policy_type

        held = [p for p in ep.policies or () if policy_type(p) == "ACL"]
        if acls:
            others = [p for p in ep.policies or () if policy_type(p) != "ACL"]
            self.hcn.modify_endpoint(ep.id, policy_request("Update", others + acls))
        elif held:
            self.hcn.modify_endpoint(ep.id, policy_request("Remove", held))

    def remove_stale(self, ep: Any) -> None:
        """GC has no CNI_NETNS: ``remove`` already detaches from the namespace the endpoint names."""
        self.remove(ep)


class _Attached:
    """An endpoint known only by ID and namespace (what a V2 DEL needs)."""

    __slots__ = ("id", "namespace_id")

    def __init__(self, id_: str, namespace_id: str) -> None:
        self.id = id_
        self.namespace_id = namespace_id


def _ignorable_detach(err: Exception) -> bool:
    # Already gone, or never attached: the goal of a detach is reached.
    return (
        isinstance(err, hns_errors.NotFound) or getattr(err, "hresult", None) == hns_errors.HCN_E_ENDPOINT_NOT_ATTACHED
    )


def _unless_timeout(err: Exception) -> None:
    """A best-effort step may fail, but a hung HNS is reported (code 11), never passed over."""
    if isinstance(err, hns_errors.Timeout):
        raise err


class HnsV1Api(_Adapter):
    """HNSCall: dockershim's pause container gets the endpoint by HCS hot attach; app containers
    (CNI_NETNS=container:<pause id>) share it."""

    policy_form = V1
    #: HCN's network policies: HNSCall's VXLAN uses 4789 anyway, and ``add_network_policy``
    #: refuses HostRoute.
    lacks = ("vxlan_port", "host_route")

    def __init__(self, *, hcn: HcnClient, hnscall: HnsCallClient, container_id: str, netns: str) -> None:
        super().__init__(hcn=hcn, hnscall=hnscall, container_id=container_id, netns=netns)
        self.shared = netns.startswith("container:")  # an app container joins its pause container's

    @property
    def attach_target(self) -> str:
        return "container " + self.container_id

    def network(self, name: str) -> Any | None:
        return self.hnscall.get_network_by_name(name)

    def create_network(self, doc: dict) -> Any:
        """``doc`` is the V2 form (standalone mode builds that); HNSCall takes its V1 equivalent."""
        from libhns.networks import v1_network_document

        return self.hnscall.create_network(v1_network_document(doc))

    def management_ip(self, network: Any) -> str | None:
        return network.management_ip

    def shows_management_ip(self, network: Any) -> bool:
        """``ManagementIP`` is in every adapter-bound network's document."""
        return True

    def delete_network(self, network: Any) -> None:
        self.hnscall.delete_network(network.id)

    def add_network_policy(self, network: Any, kind: Kind, *args: Any, **settings: Any) -> None:
        """HNSCall sets a network's policies when it creates it, and changes them never after."""
        raise hns_errors.Unsupported(
            "HNSCall",
            None,
            None,
            f"cannot add a {kind.v1_type} policy to the existing network {network.id}; "
            "only HCN (apiVersion 2) changes a network's policies",
        )

    def require_sandbox(self) -> None:
        """HNSCall attaches to the container CNI_CONTAINERID names: nothing to check."""

    def endpoint_to_remove(self, name: str) -> Any | None:
        return self.endpoint(name)  # V1 detach needs the endpoint's own view (shared containers)

    def endpoint(self, name: str) -> Any | None:
        return self.hnscall.get_endpoint_by_name(name)

    def usable_ips(self, ips: Sequence[Any]) -> Sequence[Any]:
        """A V1 endpoint holds one address, an IPv4 one: the first IPAM gave."""
        v4 = [ip for ip in ips if ip.family == 4][:1]
        if not v4:
            raise CniError(
                INVALID_CONFIG, "HNS V1 endpoints need an IPv4 address; IPAM returned none", "use apiVersion 2 for IPv6"
            )
        return v4

    def create(self, plan: EndpointPlan) -> Any:
        return self.hnscall.create_endpoint(v1_document(plan))

    def attach(self, ep: Any) -> None:
        try:
            self.hnscall.hot_attach(self.container_id, ep.id, endpoint=ep)
        except hns_errors.NotFound:
            # An app container that HCS does not know (already gone or not yet a compute system)
            # shares the pause container's endpoint anyway, as in the reference.
            if not self.shared:
                raise

    def is_attached(self, ep: Any) -> bool:
        return ep.has_container(self.container_id)

    def remove(self, ep: Any) -> None:
        """App container: detach it and keep the shared endpoint. Pause (or unknown netns): detach and delete."""
        if self.shared:
            try:
                self.hnscall.container_detach(self.container_id, ep.id)
            except hns_errors.HnsError as err:
                _unless_timeout(err)  # best effort, like the reference: the pause container's DEL removes the endpoint
            return
        try:
            self.hnscall.hot_detach(self.container_id, ep.id, endpoint=ep)  # no call unless attached
        except hns_errors.HnsError as err:
            _unless_timeout(err)  # the container may already be gone; the endpoint must go regardless
        self.delete(ep)

    def delete(self, ep: Any) -> None:
        self.hnscall.delete_endpoint(ep.id, missing_ok=True)

    def endpoints_of(self, network: Any) -> list[Any]:
        return self.hnscall.list_endpoints(network.id)

    def survey(self, network: Any) -> list[Any]:
        """``endpoints_of``: HNSCall lists them all in one call already."""
        return self.endpoints_of(network)

    def own_view(self, ep: Any) -> Any | None:
        """``ep`` itself: ``survey`` gives HNSCall's own view."""
        return ep

    def dns(self, ep: Any) -> DnsSettings:
        return DnsSettings(nameservers=tuple(v1_list(ep.dns_server_list)), search=tuple(v1_list(ep.dns_suffix)))

    def set_acls(self, ep: Any, acls: list[dict]) -> None:
        """Make ``acls`` (V1 documents) the endpoint's whole ACL list, its other policies as they
        are: one ``POST /endpoints/<id>`` holding only them, as Calico's Felix sends it (HNS
        replaces the ACL list, an empty one clearing it)."""
        self.hnscall.update_endpoint(ep.id, {"ID": ep.id, "Policies": list(acls)})

    def remove_stale(self, ep: Any) -> None:
        """GC has no container to act for: detach every container still listed, then delete."""
        for container in list(ep.shared_containers or ()):
            try:
                self.hnscall.hot_detach(container, ep.id)
            except hns_errors.HnsError as err:  # the container is usually gone already
                _unless_timeout(err)
                log.event("gc-detach-failed", container=container, error=str(err))
        self.delete(ep)

    def _held(self, ep: Any, namespace_exists: Any) -> bool:
        """A container sharing it still runs (HCS asked for each), or its namespace exists."""
        return any(self.hnscall.compute_system_exists(c) for c in ep.shared_containers or ()) or super()._held(
            ep, namespace_exists
        )


def backend_name(env: Any, platform: str) -> str:
    """The HNS backend this command's calls would use (``LIBHNS_BACKEND``, else the platform's),
    for the debug log's start line of every plugin: a node on the simulator shows in any log."""
    from libhns.backend import backend_name as name

    return name(env, platform)


def choose_api(api_version: int | None, netns: str) -> int:
    """2 = HCN, 1 = HNSCall. Unset: containerd hands us a namespace GUID (HCN); dockershim
    hands us 'none' or 'container:<id>' (HNSCall). This spares containerd users the
    reference's 'failed to find HNSEndpoint' when they forget apiVersion: 2."""
    if api_version in (1, 2):
        return api_version
    return 2 if is_guid(netns) else 1


def open_api(
    configured: int | None, env: Any, timeouts: Any, container_id: str, netns: str, cap: float | None = None
) -> EndpointApi:
    """The adapter for the HNS API ``choose_api`` picks from the config's ``apiVersion``
    (``configured``) and CNI_NETNS, both clients over one raw stack from ``env`` with the
    config's ``hnsTimeout`` (``timeouts``), every limit at most ``cap`` seconds when given."""
    version = choose_api(configured, netns)
    log.event("api", apiVersion=version, configured=configured, netns=netns)
    from libhns.client import open_clients

    hcn, hnscall = open_clients(env, timeouts=timeouts, cap=cap)
    adapter = HcnApi if version == 2 else HnsV1Api
    return adapter(hcn=hcn, hnscall=hnscall, container_id=container_id, netns=netns)
