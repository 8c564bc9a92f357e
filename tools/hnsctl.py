"""``hnsctl``: look at and shape HNS from the command line, on real HNS and the simulator alike.

It plays ``Get-HnsNetwork``/``Get-HnsEndpoint`` for people, and flanneld/``start.ps1`` for the
demo (``network create`` builds the same documents they send). Output goes to the ``stdout``
given to ``main``; failures are one line on ``stderr`` and a non-zero exit, never a traceback.
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import os
import sys
from typing import Any, Mapping, Sequence, TextIO

from basics.cli import Parser, UsageError, add_version, ip_address, parse
from basics.jsonci import get_ci
from libhns import errors, guid
from libhns.client import HcnClient, HnsCallClient, open_clients
from libhns.objects import LB_DSR, PORT_MAPPING_LOCAL_ROUTED_VIP, REMOTE_ENDPOINT_FLAG, HnsObject
from libhns.policies import PROVIDER_ADDRESS

NETWORK_TYPES = ("L2Bridge", "Overlay", "NAT", "L2Tunnel", "Transparent", "ICS", "Private", "Internal")


def _output_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "-o", "--output", choices=("table", "json"), default="table", help="table (default) or json documents"
    )
    p.add_argument("--v1", action="store_true", help="the V1 (HNSCall) view")


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="hnsctl",
        description="Inspect and manage HNS networks, endpoints, "
        "namespaces and load balancers (real HNS or the simulator, per LIBHNS_BACKEND).",
    )
    sub = parser.add_subparsers(dest="group", required=True, parser_class=Parser)

    p = add_version(parser, sub, "hnsctl's build, Python and platform, and HNS's version and features")
    _output_options(p)
    p = sub.add_parser("dump", help="every network, endpoint, namespace and load balancer (V1: policy list)")
    _output_options(p)

    net = sub.add_parser("network", help="networks").add_subparsers(dest="action", required=True, parser_class=Parser)
    p = net.add_parser("list", help="every network")
    _output_options(p)
    for action, what in (("show", "one network's document"), ("delete", "delete a network")):
        p = net.add_parser(action, help=what)
        p.add_argument("network", help="name or ID")
        _output_options(p)
    p = net.add_parser("create", help="create a network as flanneld/start.ps1 would")
    p.add_argument("name")
    p.add_argument(
        "--type", default="L2Bridge", type=_network_type, help="L2Bridge (default), Overlay, NAT, L2Tunnel, …"
    )
    p.add_argument(
        "--subnet",
        type=_cidr,
        action="append",
        default=[],
        help="address prefix, e.g. 10.244.1.0/24; repeat it for dual stack (one IPv4 and one IPv6 prefix)",
    )
    p.add_argument(
        "--gateway",
        type=ip_address,
        action="append",
        default=[],
        help="default gateway of the subnet of its family (default: first address)",
    )
    p.add_argument("--vsid", type=int, help="overlay VSID / VNI (default 4096 on Overlay)")
    p.add_argument("--adapter", help="host network adapter, e.g. Ethernet")
    p.add_argument(
        "--management-ip",
        type=ip_address,
        help="ProviderAddress to report (honoured by the simulator; real HNS takes it from the adapter)",
    )
    p.add_argument("--vxlan-port", type=int, help="VxlanPort network policy (HNS >= 10.3)")
    _output_options(p)

    ep = sub.add_parser("endpoint", help="endpoints").add_subparsers(dest="action", required=True, parser_class=Parser)
    p = ep.add_parser("list", help="every endpoint, or one network's")
    p.add_argument("--network", help="only this network's (name or ID)")
    _output_options(p)
    _show_and_delete(ep, "endpoint", "name or ID", " (several: the doctor's stale-endpoints fix)")
    p = ep.add_parser("create", help="create an endpoint (as a plugin or flanneld would)")
    p.add_argument("name")
    p.add_argument("--network", required=True, help="name or ID")
    p.add_argument("--ip", type=ip_address, help="IP address (default: HNS assigns one)")
    p.add_argument("--mac", help="MAC address (default: HNS assigns one)")
    p.add_argument(
        "--host", action="store_true", help="attach to the host compartment (1), as flanneld does for cbr0_ep"
    )
    p.add_argument(
        "--remote",
        action="store_true",
        help="another node's pod or a Service VIP, as kube-proxy makes them for its load balancers "
        "(IsRemoteEndpoint; its --ip may lie outside the network's subnets)",
    )
    p.add_argument(
        "--provider-address",
        type=ip_address,
        help="with --remote: the other node's address (a ProviderAddress policy, as kube-proxy sets on Overlay)",
    )
    _output_options(p)

    lb = sub.add_parser("loadbalancer", help="load balancers (kube-proxy's Services)").add_subparsers(
        dest="action", required=True, parser_class=Parser
    )
    _output_options(lb.add_parser("list", help="every load balancer"))
    _show_and_delete(lb, "loadbalancer", "ID")
    p = lb.add_parser("create", help="create a load balancer as kube-proxy would (only on the simulator)")
    p.add_argument("--endpoint", action="append", default=[], required=True, help="a backend's name or ID (repeat)")
    p.add_argument("--vip", type=ip_address, action="append", default=[], help="a frontend VIP (repeat)")
    p.add_argument("--source-vip", type=ip_address, help="the source VIP (overlay)")
    p.add_argument("--protocol", choices=tuple(PROTOCOLS), default="tcp", help="tcp (default) or udp")
    p.add_argument("--port", type=_port, required=True, help="the frontend (external) port")
    p.add_argument("--target-port", type=_port, help="the backends' port (default: --port)")
    p.add_argument("--dsr", action="store_true", help="direct server return (load balancer Flags 1, WinDSR)")
    p.add_argument(
        "--local-routed-vip",
        action="store_true",
        help="a NodePort Service's mapping (port mapping Flags 2), usually without --vip",
    )
    _output_options(p)

    pl = sub.add_parser(
        "policylist", help="V1 policy lists (HNSCall /policylists/: the load balancers as HNSCall shows them)"
    ).add_subparsers(dest="action", required=True, parser_class=Parser)
    _output_options(pl.add_parser("list", help="every policy list"))
    _show_and_delete(pl, "policylist", "ID")

    ns = sub.add_parser("namespace", help="namespaces").add_subparsers(
        dest="action", required=True, parser_class=Parser
    )
    for action, what in (("list", "every namespace"), ("create", "create a namespace (as containerd does for a pod)")):
        _output_options(ns.add_parser(action, help=what))
    for action, what in (("show", "one namespace's document"), ("delete", "delete a namespace")):
        p = ns.add_parser(action, help=what)
        p.add_argument("namespace", help="ID")
        _output_options(p)
    for action in ("attach", "detach"):
        p = ns.add_parser(action, help=f"{action} an endpoint")
        p.add_argument("namespace", help="ID")
        p.add_argument("endpoint", help="name or ID")
        _output_options(p)

    ct = sub.add_parser(
        "container", help="running containers for V1 hot attach (only on the simulator)"
    ).add_subparsers(dest="action", required=True, parser_class=Parser)
    _output_options(ct.add_parser("list", help="every simulated container"))
    p = sub.add_parser(
        "restart",
        help="restart HNS as Restart-Service hns would: non-persistent "
        "networks and their endpoints are lost (only on the simulator)",
    )
    _output_options(p)
    for action, what in (
        ("create", "start a simulated container (a pause container)"),
        ("delete", "stop a simulated container"),
    ):
        p = ct.add_parser(action, help=what)
        p.add_argument("container", help="container ID")
        _output_options(p)
    return parser


def _show_and_delete(group: Any, kind: str, ref: str, several: str = "") -> None:
    """``show`` (one object's document) and ``delete`` (one or more) of a ``kind``."""
    what = {"loadbalancer": "load balancer", "policylist": "policy list"}.get(kind, kind)
    p = group.add_parser("show", help=f"one {what}'s document")
    p.add_argument(kind, help=ref)
    _output_options(p)
    p = group.add_parser("delete", help=f"delete {what}s")
    p.add_argument(kind, nargs="+", help=ref + several)
    _output_options(p)


#: IANA protocol numbers, as load balancers' PortMappings carry them.
PROTOCOLS = {"tcp": 6, "udp": 17}


def _port(text: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise argparse.ArgumentTypeError(f"not a port: {text!r}")
    return int(text)


def _network_type(text: str) -> str:
    for t in NETWORK_TYPES:
        if t.casefold() == text.casefold():
            return t
    raise argparse.ArgumentTypeError(f"unknown network type {text!r} (one of {', '.join(NETWORK_TYPES)})")


def _cidr(text: str) -> str:
    try:
        return str(ipaddress.ip_network(text, strict=False))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a CIDR prefix: {text!r}") from None


# --- documents ----------------------------------------------------------------------------------


def network_document(args: argparse.Namespace) -> dict[str, Any]:
    """The V2 network flanneld (vxlan) / start.ps1 would send for these arguments."""
    from libhns import networks

    families = [ipaddress.ip_network(s).version for s in args.subnet]
    if len(set(families)) != len(families):
        raise UsageError("hnsctl: at most one --subnet per IP family (one IPv4, one IPv6)")
    gateways = {ipaddress.ip_address(g).version: g for g in args.gateway}
    if len(gateways) != len(args.gateway) or not set(gateways) <= set(families):
        raise UsageError("hnsctl: each --gateway needs a --subnet of its IP family")
    if args.vsid is not None and not args.subnet:
        raise UsageError("hnsctl: --vsid needs --subnet")
    vsid = args.vsid if args.vsid is not None else (4096 if args.type == "Overlay" else None)
    try:
        subnets = [networks.NewSubnet(s, gateways.get(v, ""), vsid) for s, v in zip(args.subnet, families)]
    except ValueError as err:
        raise UsageError(f"hnsctl: {err}") from None
    return networks.network_document(
        args.name,
        args.type,
        subnets,
        adapter=args.adapter or "",
        management_ip=args.management_ip or "",
        vxlan_port=args.vxlan_port,
        flags=networks.NON_PERSISTENT if args.type == "Overlay" else 0,
    )


# --- rendering ----------------------------------------------------------------------------------


def _doc(obj: HnsObject | Mapping[str, Any]) -> Any:
    return obj.to_json() if isinstance(obj, HnsObject) else obj


def _json(out: TextIO, value: Any) -> None:
    out.write(json.dumps(value, indent=2) + "\n")


def _table(out: TextIO, headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    cells = [[str(h) for h in headers]] + [["" if c is None else str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    for r in cells:
        out.write("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() + "\n")


def _show(out: TextIO, args: argparse.Namespace, obj: HnsObject | Mapping[str, Any]) -> None:
    doc = _doc(obj)
    if args.output == "json":
        _json(out, doc)
        return
    for k, v in doc.items():
        out.write(f"{k}: {v if isinstance(v, (str, int, float)) else json.dumps(v)}\n")


def _network_rows(nets: Sequence[Any]) -> list[list[Any]]:
    return [[n.id, n.name, n.network_type, ",".join(s.prefix for s in n.subnets), n.management_ip or ""] for n in nets]


def _endpoint_rows(eps: Sequence[Any], names: Mapping[str, str]) -> list[list[Any]]:
    return [
        [
            e.id,
            e.name,
            names.get((e.network_id or "").upper(), e.network_id),
            ",".join(e.ip_addresses),
            e.mac or "",
            e.namespace_id or "",
            "remote" if e.is_remote else "",
        ]
        for e in eps
    ]


def _load_balancer_rows(lbs: Sequence[Any]) -> list[list[Any]]:
    names = {n: p for p, n in PROTOCOLS.items()}
    return [
        [
            lb.id,
            ",".join(lb.frontend_vips or ()) or "-",
            ",".join(
                f"{get_ci(m, 'ExternalPort')}->{get_ci(m, 'InternalPort')}/"
                f"{names.get(get_ci(m, 'Protocol'), get_ci(m, 'Protocol'))}"
                for m in lb.port_mappings or ()
                if isinstance(m, dict)
            ),
            lb.source_vip or "",
            ",".join(lb.host_compute_endpoints or ()),
        ]
        for lb in lbs
    ]


LB_HEADERS = ["ID", "FRONTEND", "PORTS", "SOURCE-VIP", "BACKENDS"]


# --- commands -----------------------------------------------------------------------------------


class _View:
    """What the commands read and change through one API: ``_V2View`` (HCN) or ``_V1View``
    (HNSCall), the same shape, so a command is written once and ``--v1`` only picks the view."""

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


class _V2View(_View):
    c: HcnClient
    #: what kube-proxy's load balancers are called in this API's dump
    BALANCERS = "loadbalancers"

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


class _V1View(_View):
    c: HnsCallClient
    BALANCERS = "policylists"

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


class _Ctl:
    def __init__(self, hcn: HcnClient, hnscall: HnsCallClient, out: TextIO, env: Mapping[str, str]) -> None:
        self.hcn, self.hnscall, self.out, self.env = hcn, hnscall, out, env

    def _view(self, a: argparse.Namespace) -> _View:
        return _V1View(self.hnscall) if getattr(a, "v1", False) else _V2View(self.hcn)

    def _found(self, what: str, ref: str, obj: Any) -> Any:
        if obj is None:
            raise errors.NotFound(f"{what} {ref!r}", None, None, "not found")
        return obj

    def _network(self, a: argparse.Namespace, ref: str) -> Any:
        return self._found("network", ref, self._view(a).network(ref))

    def _endpoint(self, a: argparse.Namespace, ref: str) -> Any:
        return self._found("endpoint", ref, self._view(a).endpoint(ref))

    def dump(self, a: argparse.Namespace) -> None:
        view = self._view(a)
        nets, eps, nss, lbs = view.networks(), view.endpoints(), view.namespaces(), view.load_balancers()
        if a.output == "json":
            _json(
                self.out,
                {
                    "networks": [_doc(n) for n in nets],
                    "endpoints": [_doc(e) for e in eps],
                    "namespaces": [_doc(n) for n in nss],
                    **({view.BALANCERS: [_doc(lb) for lb in lbs]} if lbs is not None else {}),
                },
            )
            return
        self.out.write("NETWORKS\n")
        _table(self.out, ["ID", "NAME", "TYPE", "SUBNETS", "MANAGEMENT-IP"], _network_rows(nets))
        self.out.write("\nENDPOINTS\n")
        self._endpoint_table(eps, nets)
        self.out.write("\nNAMESPACES\n")
        self._namespace_table(nss)
        if lbs is not None:
            self.out.write(f"\n{view.BALANCERS.upper()}\n")
            self._balancer_table(view, lbs)

    def _balancer_table(self, view: _View, lbs: Sequence[Any]) -> None:
        if view.BALANCERS == "loadbalancers":
            _table(self.out, LB_HEADERS, _load_balancer_rows(lbs))
        else:
            _table(self.out, ["ID", "POLICIES"], [[p.get("ID"), len(p.get("Policies") or ())] for p in lbs])

    def _endpoint_table(self, eps: Sequence[Any], nets: Sequence[Any] | None = None) -> None:
        names = {(n.id or "").upper(): n.name for n in nets or ()}
        _table(self.out, ["ID", "NAME", "NETWORK", "IP", "MAC", "NAMESPACE", "REMOTE"], _endpoint_rows(eps, names))

    def _namespace_table(self, nss: Sequence[Any]) -> None:
        rows = []
        for n in nss:
            if isinstance(n, HnsObject):
                rows.append([n.id, n.compartment_id, n.type, ",".join(n.endpoint_ids)])
            else:
                rows.append(
                    [
                        n.get("ID"),
                        n.get("CompartmentId"),
                        "",
                        ",".join(str((r.get("Data") or {}).get("Id", "")) for r in n.get("ResourceList") or ()),
                    ]
                )
        _table(self.out, ["ID", "COMPARTMENT", "TYPE", "ENDPOINTS"], rows)

    # network
    def network_list(self, a: argparse.Namespace) -> None:
        nets = self._view(a).networks()
        if a.output == "json":
            _json(self.out, [_doc(n) for n in nets])
        else:
            _table(self.out, ["ID", "NAME", "TYPE", "SUBNETS", "MANAGEMENT-IP"], _network_rows(nets))

    def network_show(self, a: argparse.Namespace) -> None:
        _show(self.out, a, self._network(a, a.network))

    def network_create(self, a: argparse.Namespace) -> None:
        _show(self.out, a, self._view(a).create_network(network_document(a)))

    def network_delete(self, a: argparse.Namespace) -> None:
        """HNS deletes the network's endpoints with it: the output says how many went."""
        net = self._network(a, a.network)
        view = self._view(a)
        gone = len(view.endpoints(net.id))
        view.delete_network(net.id)
        self.out.write(
            f"deleted network {net.name} ({net.id})" + (f" and its {gone} endpoint(s)" if gone else "") + "\n"
        )

    # endpoint
    def endpoint_list(self, a: argparse.Namespace) -> None:
        view = self._view(a)
        net = self._network(a, a.network) if a.network else None
        eps = view.endpoints(net.id if net else None)
        nets = ([net] if net else view.networks()) if a.output == "table" else []
        if a.output == "json":
            _json(self.out, [_doc(e) for e in eps])
        else:
            self._endpoint_table(eps, nets)

    def endpoint_show(self, a: argparse.Namespace) -> None:
        _show(self.out, a, self._endpoint(a, a.endpoint))

    def endpoint_create(self, a: argparse.Namespace) -> None:
        if a.provider_address and not a.remote:
            raise UsageError("hnsctl: --provider-address is for a remote endpoint: add --remote")
        view = self._view(a)
        ep = view.create_endpoint(a.name, self._network(a, a.network), a.ip, a.mac, a.remote, a.provider_address)
        if a.host:
            try:
                self.hnscall.host_attach(ep.id, 1)
            except errors.HnsError:
                view.delete_endpoint(ep.id)
                raise
            ep = view.endpoint(ep.id)
        _show(self.out, a, ep)

    def endpoint_delete(self, a: argparse.Namespace) -> None:
        """Each in turn; the first that fails stops the rest (those before it stay deleted)."""
        for ref in a.endpoint:
            ep = self._endpoint(a, ref)
            self._view(a).delete_endpoint(ep.id)
            self.out.write(f"deleted endpoint {ep.name} ({ep.id})\n")

    # load balancers (HCN) and policy lists (HNSCall)
    def loadbalancer_list(self, a: argparse.Namespace) -> None:
        lbs = self.hcn.list_load_balancers()
        if a.output == "json":
            _json(self.out, [_doc(lb) for lb in lbs])
        else:
            _table(self.out, LB_HEADERS, _load_balancer_rows(lbs))

    def loadbalancer_show(self, a: argparse.Namespace) -> None:
        _show(self.out, a, self._found("load balancer", a.loadbalancer, self.hcn.get_load_balancer(a.loadbalancer)))

    def _delete_each(self, ids: Sequence[str], delete: Any, what: str) -> None:
        """Each in turn; the first that fails stops the rest (those before it stay deleted)."""
        for id_ in ids:
            delete(id_)
            self.out.write(f"deleted {what} {id_}\n")

    def loadbalancer_delete(self, a: argparse.Namespace) -> None:
        self._delete_each(a.loadbalancer, self.hcn.delete_load_balancer, "load balancer")

    def loadbalancer_create(self, a: argparse.Namespace) -> None:
        """The document kube-proxy (winkernel) sends for one Service port; simulator only, so no
        operator makes a Service's load balancer behind kube-proxy's back."""
        self._simulator()
        backends = [self._endpoint(a, ref).id for ref in a.endpoint]
        doc: dict[str, Any] = {
            "HostComputeEndpoints": backends,
            "FrontendVIPs": list(a.vip),
            "PortMappings": [
                {
                    "Protocol": PROTOCOLS[a.protocol],
                    "InternalPort": a.target_port or a.port,
                    "ExternalPort": a.port,
                    "Flags": PORT_MAPPING_LOCAL_ROUTED_VIP if a.local_routed_vip else 0,
                }
            ],
        }
        if a.source_vip:
            doc["SourceVIP"] = a.source_vip
        if a.dsr:
            doc["Flags"] = LB_DSR
        _show(self.out, a, self.hcn.create_load_balancer(doc))

    def policylist_list(self, a: argparse.Namespace) -> None:
        lists = self.hnscall.list_policy_lists()
        if a.output == "json":
            _json(self.out, lists)
        else:
            self._balancer_table(_V1View(self.hnscall), lists)

    def policylist_show(self, a: argparse.Namespace) -> None:
        _show(self.out, a, self._found("policy list", a.policylist, self.hnscall.get_policy_list(a.policylist)))

    def policylist_delete(self, a: argparse.Namespace) -> None:
        self._delete_each(a.policylist, self.hnscall.delete_policy_list, "policy list")

    # namespace
    def namespace_list(self, a: argparse.Namespace) -> None:
        nss = self._view(a).namespaces()
        if a.output == "json":
            _json(self.out, [_doc(n) for n in nss])
        else:
            self._namespace_table(nss)

    def namespace_show(self, a: argparse.Namespace) -> None:
        _show(self.out, a, self._found("namespace", a.namespace, self._view(a).namespace(a.namespace)))

    def namespace_create(self, a: argparse.Namespace) -> None:
        ns = self.hcn.create_namespace()
        if a.output == "json":
            _json(self.out, ns.to_json())
        else:
            self.out.write(f"{ns.id}\n")

    def namespace_delete(self, a: argparse.Namespace) -> None:
        self.hcn.delete_namespace(a.namespace)
        self.out.write(f"deleted namespace {a.namespace}\n")

    def namespace_attach(self, a: argparse.Namespace) -> None:
        ep = self._endpoint(a, a.endpoint)
        self.hcn.namespace_add_endpoint(a.namespace, ep.id)
        self.out.write(f"attached endpoint {ep.name} to namespace {a.namespace}\n")

    def namespace_detach(self, a: argparse.Namespace) -> None:
        ep = self._endpoint(a, a.endpoint)
        self.hcn.namespace_remove_endpoint(a.namespace, ep.id)
        self.out.write(f"detached endpoint {ep.name} from namespace {a.namespace}\n")

    # container (simulator only)
    def _simulator(self) -> Any:
        from libhns.backend import backend_name

        if backend_name(self.env) != "sim":
            raise UsageError("hnsctl: container and restart commands work only on the simulator (LIBHNS_BACKEND=sim)")
        from libhns.sim import Simulator

        return Simulator.from_env(self.env)

    def restart(self, a: argparse.Namespace) -> None:
        dropped = self._simulator().restart()
        if a.output == "json":
            _json(self.out, {"droppedNetworks": dropped})
        else:
            self.out.write(f"HNS restarted; non-persistent networks dropped: {', '.join(dropped) or 'none'}\n")

    def container_list(self, a: argparse.Namespace) -> None:
        conts = self._simulator().containers()
        if a.output == "json":
            _json(self.out, conts)
        else:
            _table(
                self.out,
                ["ID", "STATE", "ENDPOINTS"],
                [[c["Id"], c.get("State"), ",".join(c.get("Endpoints") or ())] for c in conts],
            )

    def container_create(self, a: argparse.Namespace) -> None:
        self._simulator().register_container(a.container)
        self.out.write(f"created container {a.container}\n")

    def container_delete(self, a: argparse.Namespace) -> None:
        self._simulator().remove_container(a.container)
        self.out.write(f"deleted container {a.container}\n")


class Refused(Exception):
    """HNS refused a command for a reason the operator can remove: the message says how."""


def version(a: argparse.Namespace, out: TextIO, env: Mapping[str, str]) -> None:
    """hnsctl's build beside HNS's version and features; HNS not answering is said, not failed on:
    the build is what an operator most often asks."""
    from plugins.cni import buildinfo

    try:
        hnscall = open_clients(env)[1]
        (major, minor), feats = hnscall.version(), hnscall.features().as_dict()
    except (errors.HnsError, errors.EnvError, OSError) as exc:
        unreachable = f"HNS not reachable: {exc}"
        if a.output == "json":
            _json(out, {**buildinfo.document(), "HnsError": unreachable})
        else:
            out.write(buildinfo.about("hnsctl", unreachable))
        return
    if a.output == "json":
        _json(out, {**buildinfo.document(), "Major": major, "Minor": minor, "Features": feats})
    else:
        out.write(buildinfo.about("hnsctl", f"HNS {major}.{minor}"))
        _table(out, ["FEATURE", "SUPPORTED"], [[k, "yes" if v else "no"] for k, v in feats.items()])


def main(argv: Sequence[str], stdout: TextIO, stderr: TextIO, env: Mapping[str, str]) -> int:
    """Run one command; 0 on success, 1 for an HNS failure, 2 for bad arguments."""
    try:
        args = parse(build_parser(), list(argv))
    except UsageError as exc:
        stderr.write(f"{exc}\n")
        return 2
    except SystemExit as exc:  # --help
        return int(exc.code or 0)
    if args.group == "version":
        version(args, stdout, env)
        return 0
    try:
        ctl = _Ctl(*open_clients(env), stdout, env)
        handler = getattr(ctl, args.group if args.group in ("dump", "restart") else f"{args.group}_{args.action}")
        handler(args)
    except UsageError as exc:
        stderr.write(f"{exc}\n")
        return 2
    except (errors.HnsError, Refused) as exc:
        stderr.write(f"hnsctl: {exc}\n")
        return 1
    except (ValueError, OSError) as exc:
        stderr.write(f"hnsctl: {exc}\n")
        return 1
    return 0


def entry() -> None:
    """Console script ``hnsctl``."""
    from basics.closedpipe import exit_with

    exit_with(lambda stdout: main(sys.argv[1:], stdout, sys.stderr, os.environ))


if __name__ == "__main__":
    entry()
