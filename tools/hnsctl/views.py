"""What the commands read and change through one HNS API: ``HcnView`` (HCN) or ``HnsCallView``
(HNSCall), the same shape, so a command is written once and ``--v1`` only picks the view."""

from __future__ import annotations

from typing import Any

from libhns import errors, guid
from libhns.client import HcnClient, HnsCallClient
from libhns.objects import REMOTE_ENDPOINT_FLAG
from libhns.policies import PROVIDER_ADDRESS
from tools.hnsctl import tables


class ApiView:
    def __init__(self, client: Any) -> None:
        self.c = client

    def network(self, ref: str) -> Any:
        return self.c.get_network(ref) if guid.is_guid(ref) else self.c.get_network_by_name(ref)

    def networks(self) -> list[Any]:
        return self.c.list_networks()

    def delete_network(self, id_: str) -> None:
        self.c.delete_network(id_)

    def endpoint(self, ref: str) -> Any:
        return self.c.get_endpoint(ref) if guid.is_guid(ref) else self.c.get_endpoint_by_name(ref)

    def endpoints(self, network_id: str | None = None) -> list[Any]:
        return self.c.list_endpoints(network_id)

    def delete_endpoint(self, id_: str) -> None:
        self.c.delete_endpoint(id_)

    def namespaces(self) -> list[Any]:
        return self.c.list_namespaces()


class HcnView(ApiView):
    c: HcnClient
    #: what kube-proxy's load balancers are called in this API's dump, and their table
    BALANCERS = "loadbalancers"
    BALANCER_HEADERS = tables.LB_HEADERS
    balancer_rows = staticmethod(tables.load_balancer_rows)

    def load_balancers(self) -> list[Any]:
        return self.c.list_load_balancers()

    def create_network(self, doc: dict[str, Any]) -> Any:
        return self.c.create_network(doc)

    def create_endpoint(
        self, name: str, network: Any, ip: str | None, mac: str | None, remote: bool, provider_address: str | None
    ) -> Any:
        settings: dict[str, Any] = {"Name": name}
        if ip:
            settings["IpConfigurations"] = [{"IpAddress": ip}]
        if mac:
            settings["MacAddress"] = mac
        if remote:
            settings["Flags"] = REMOTE_ENDPOINT_FLAG
        if provider_address:
            settings["Policies"] = [PROVIDER_ADDRESS.v2(provider_address)]
        return self.c.create_endpoint(network.id, settings)

    def namespace(self, ref: str) -> Any:
        return self.c.get_namespace(ref) if guid.is_guid(ref) else None


class HnsCallView(ApiView):
    c: HnsCallClient
    BALANCERS = "policylists"
    BALANCER_HEADERS = tables.POLICY_LIST_HEADERS
    balancer_rows = staticmethod(tables.policy_list_rows)

    def load_balancers(self) -> list[Any] | None:
        """V1 shows them as policy lists, where HNS still serves those; None where it does not."""
        try:
            return self.c.list_policy_lists()
        except errors.HnsError:
            return None

    def create_network(self, doc: dict[str, Any]) -> Any:
        from libhns.networks import v1_network_document

        return self.c.create_network(v1_network_document(doc))

    def create_endpoint(
        self, name: str, network: Any, ip: str | None, mac: str | None, remote: bool, provider_address: str | None
    ) -> Any:
        doc: dict[str, Any] = {"Name": name, "VirtualNetwork": network.id}
        if ip:
            doc["IPAddress"] = ip
        if mac:
            doc["MacAddress"] = mac
        if remote:
            doc["IsRemoteEndpoint"] = True
        if provider_address:
            doc["Policies"] = [PROVIDER_ADDRESS.v1(provider_address)]
        return self.c.create_endpoint(doc)

    def namespace(self, ref: str) -> Any:
        return next((n for n in self.c.list_namespaces() if str(n.get("ID", "")).upper() == guid.normalize(ref)), None)
