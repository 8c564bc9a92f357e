"""The cluster as NetworkPolicy sees it, read from API objects as the API server returns them
(defaults filled: ``spec.policyTypes``, every ``ports[].protocol``): namespaces with their labels,
pods with labels, address, node and named container ports, and the policies. Pure; an object of
the wrong shape is ``BadObject`` naming its field."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field

from plugins.netpol import selectors
from plugins.netpol.errors import BadObject

#: The label the API server puts on every namespace (Kubernetes ≥ 1.21, NamespaceDefaultLabelName).
NAME_LABEL = "kubernetes.io/metadata.name"
PROTOCOLS = ("TCP", "UDP", "SCTP")


@dataclass(frozen=True)
class ClusterNamespace:
    name: str
    labels: dict


@dataclass(frozen=True)
class ContainerPort:
    name: str
    port: int
    protocol: str


@dataclass(frozen=True)
class Pod:
    """``ip`` is None for a pod without an address yet (no endpoint, nothing to reach)."""

    namespace: str
    name: str
    labels: dict
    ip: ipaddress.IPv4Address | ipaddress.IPv6Address | None
    node: str
    ports: tuple[ContainerPort, ...]

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def named_port(self, name: str, protocol: str) -> int | None:
        """The container port of that name and protocol (the API server keeps names unique per pod)."""
        return next((p.port for p in self.ports if p.name == name and p.protocol == protocol), None)


@dataclass(frozen=True)
class IpBlock:
    cidr: ipaddress.IPv4Network | ipaddress.IPv6Network
    excepts: tuple


@dataclass(frozen=True)
class Peer:
    """One ``from`` / ``to`` entry: an ``ip_block``, or pods chosen by ``pods`` within the
    namespaces ``namespaces`` selects (None: the policy's own namespace)."""

    pods: selectors.Selector | None = None
    namespaces: selectors.Selector | None = None
    ip_block: IpBlock | None = None


@dataclass(frozen=True)
class PolicyPort:
    """``port`` a number, a container port's name, or None (every port of ``protocol``)."""

    protocol: str
    port: int | str | None = None
    end_port: int | None = None


@dataclass(frozen=True)
class Rule:
    """``peers`` empty: every peer; ``ports`` empty: every port of every protocol."""

    peers: tuple[Peer, ...]
    ports: tuple[PolicyPort, ...]


@dataclass(frozen=True)
class Policy:
    """``ingress`` / ``egress`` None when ``policyTypes`` leaves that direction out (the policy
    does not isolate it); an empty tuple isolates it and allows nothing."""

    namespace: str
    name: str
    selector: selectors.Selector
    ingress: tuple[Rule, ...] | None
    egress: tuple[Rule, ...] | None

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True)
class Cluster:
    namespaces: dict
    pods: tuple[Pod, ...]
    policies: tuple[Policy, ...]
    by_ip: dict = field(init=False, compare=False, repr=False)
    by_namespace: dict = field(init=False, compare=False, repr=False)
    policies_by_namespace: dict = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        by_namespace: dict = {}
        for p in self.pods:
            by_namespace.setdefault(p.namespace, []).append(p)
        policies: dict = {}
        for pol in self.policies:
            policies.setdefault(pol.namespace, []).append(pol)
        object.__setattr__(self, "by_ip", {p.ip: p for p in self.pods if p.ip is not None})
        object.__setattr__(self, "by_namespace", by_namespace)
        object.__setattr__(self, "policies_by_namespace", policies)

    def pods_in(self, namespace: str) -> list[Pod]:
        return self.by_namespace.get(namespace, [])

    def namespaces_of_pods(self) -> list[str]:
        """The namespaces that hold pods, in a fixed order."""
        return sorted(self.by_namespace)

    def policies_in(self, namespace: str) -> list[Policy]:
        return self.policies_by_namespace.get(namespace, [])

    def namespace_labels(self, name: str) -> dict:
        ns = self.namespaces.get(name)
        return ns.labels if ns is not None else {NAME_LABEL: name}

    def pod_at(self, ip) -> Pod | None:
        """The pod holding address ``ip`` (an address object), or None (no pod of the cluster)."""
        return self.by_ip.get(ip)


def read(namespaces: list, pods: list, policies: list) -> Cluster:
    """The cluster from lists of Namespace, Pod and NetworkPolicy objects."""
    nss = {}
    for i, raw in enumerate(namespaces):
        ns = _namespace(raw, f"namespaces[{i}]")
        nss[ns.name] = ns
    return Cluster(
        nss,
        tuple(_pod(raw, f"pods[{i}]") for i, raw in enumerate(pods)),
        tuple(_policy(raw, f"policies[{i}]") for i, raw in enumerate(policies)),
    )


# ---------------------------------------------------------------- objects


def _get(raw, where: str, *path: str, kind=dict, default=None):
    value = raw
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    if value is None:
        return default
    if not isinstance(value, kind):
        raise BadObject(f"{where}.{'.'.join(path)}", f"{value!r} is not a {kind.__name__}", "fix the object's shape")
    return value


def _name(raw, where: str, *path: str) -> str:
    value = _get(raw, where, *path, kind=str)
    if not value:
        raise BadObject(f"{where}.{'.'.join(path)}", "missing", "give the object's name")
    return value


def _labels(raw, where: str) -> dict:
    labels = _get(raw, where, "metadata", "labels", default={})
    if not all(isinstance(v, str) for v in labels.values()):
        raise BadObject(f"{where}.metadata.labels", "label values must be strings", "quote the values")
    return dict(labels)


def _namespace(raw, where: str) -> ClusterNamespace:
    name = _name(raw, where, "metadata", "name")
    return ClusterNamespace(name, {NAME_LABEL: name, **_labels(raw, where)})


def _pod(raw, where: str) -> Pod:
    ip_text = _get(raw, where, "status", "podIP", kind=str)
    try:
        ip = ipaddress.ip_address(ip_text) if ip_text else None
    except ValueError:
        raise BadObject(f"{where}.status.podIP", f"{ip_text!r} is not an address", "give the pod's IP") from None
    ports = []
    for c, container in enumerate(_get(raw, where, "spec", "containers", kind=list, default=[])):
        for p, port in enumerate(_get(container, f"{where}.spec.containers[{c}]", "ports", kind=list, default=[])):
            at = f"{where}.spec.containers[{c}].ports[{p}]"
            number = _get(port, at, "containerPort", kind=int)
            if number is None or not 0 < number < 65536:
                raise BadObject(f"{at}.containerPort", f"{number!r} is not a port", "ports are 1-65535")
            ports.append(ContainerPort(_get(port, at, "name", kind=str, default=""), number, _protocol(port, at)))
    return Pod(
        _name(raw, where, "metadata", "namespace"),
        _name(raw, where, "metadata", "name"),
        _labels(raw, where),
        ip,
        _get(raw, where, "spec", "nodeName", kind=str, default=""),
        tuple(ports),
    )


def _protocol(raw: dict, where: str) -> str:
    proto = _get(raw, where, "protocol", kind=str, default="TCP")
    if proto not in PROTOCOLS:
        raise BadObject(f"{where}.protocol", f"{proto!r} is not a protocol", "use TCP, UDP or SCTP")
    return proto


def _policy(raw, where: str) -> Policy:
    spec = _get(raw, where, "spec", default={})
    types = _get(raw, where, "spec", "policyTypes", kind=list)
    if not types or not set(types) <= {"Ingress", "Egress"}:
        raise BadObject(
            f"{where}.spec.policyTypes",
            f"{types!r}: the API server always fills it with Ingress and/or Egress",
            "read the policy back from the API server",
        )
    rules = {}
    for key, peers_key, direction in (("ingress", "from", "Ingress"), ("egress", "to", "Egress")):
        raw_rules = _get(spec, f"{where}.spec", key, kind=list, default=[])
        rules[key] = (
            tuple(_rule(r, f"{where}.spec.{key}[{i}]", peers_key) for i, r in enumerate(raw_rules))
            if direction in types
            else None
        )
    return Policy(
        _name(raw, where, "metadata", "namespace"),
        _name(raw, where, "metadata", "name"),
        selectors.parse(_get(spec, f"{where}.spec", "podSelector", default={}), f"{where}.spec.podSelector"),
        rules["ingress"],
        rules["egress"],
    )


def _rule(raw, where: str, peers_key: str) -> Rule:
    peers = _get(raw, where, peers_key, kind=list, default=[])
    ports = _get(raw, where, "ports", kind=list, default=[])
    return Rule(
        tuple(_peer(p, f"{where}.{peers_key}[{i}]") for i, p in enumerate(peers)),
        tuple(_port(p, f"{where}.ports[{i}]") for i, p in enumerate(ports)),
    )


def _peer(raw, where: str) -> Peer:
    if not isinstance(raw, dict):
        raise BadObject(where, f"{raw!r} is not a peer", "give podSelector, namespaceSelector or ipBlock")
    block = raw.get("ipBlock")
    if block is not None:
        if "podSelector" in raw or "namespaceSelector" in raw:
            raise BadObject(where, "ipBlock cannot be combined with selectors", "split the peer in two")
        return Peer(ip_block=_ip_block(block, f"{where}.ipBlock"))
    if "podSelector" not in raw and "namespaceSelector" not in raw:
        raise BadObject(where, "an empty peer", "give podSelector, namespaceSelector or ipBlock")
    pods = raw.get("podSelector")
    namespaces = raw.get("namespaceSelector")
    return Peer(
        pods=selectors.parse(pods, f"{where}.podSelector"),
        namespaces=None if namespaces is None else selectors.parse(namespaces, f"{where}.namespaceSelector"),
    )


def _network(text, where: str):
    try:
        return ipaddress.ip_network(text, strict=False)
    except (TypeError, ValueError):
        raise BadObject(where, f"{text!r} is not a CIDR", 'write "10.0.0.0/8"') from None


def _ip_block(raw, where: str) -> IpBlock:
    cidr = _network(_get(raw, where, "cidr", kind=str), f"{where}.cidr")
    excepts = []
    for i, text in enumerate(_get(raw, where, "except", kind=list, default=[])):
        net = _network(text, f"{where}.except[{i}]")
        if net.version != cidr.version or not net.subnet_of(cidr) or net == cidr:
            raise BadObject(f"{where}.except[{i}]", f"{net} is not strictly inside {cidr}", "remove it or fix cidr")
        excepts.append(net)
    return IpBlock(cidr, tuple(excepts))


def _port(raw, where: str) -> PolicyPort:
    if not isinstance(raw, dict):
        raise BadObject(where, f"{raw!r} is not a port", "give protocol and port")
    port = raw.get("port")
    end = _get(raw, where, "endPort", kind=int)
    if port is not None and not (isinstance(port, str) and port) and not (isinstance(port, int) and 0 < port < 65536):
        raise BadObject(f"{where}.port", f"{port!r} is neither a port number nor a port name", "1-65535 or a name")
    if end is not None and not (isinstance(port, int) and port <= end < 65536):
        raise BadObject(f"{where}.endPort", f"{end} needs a numeric port at or below it", "fix port / endPort")
    return PolicyPort(_protocol(raw, where), port, end)
