"""Hypothesis strategies for NetworkPolicy: clusters (namespaces, pods, policies as the API server
returns them) and packets over them, in the format of README.md, and ``features``, what a drawn
cluster exercises, so a test can show its stream was not trivial.

The vocabulary is small on purpose: few label keys and values, few ports, pods in one /16 spread
over three nodes, so selectors, named ports and ipBlocks hit and miss the drawn pods alike.
"""

from __future__ import annotations

import ipaddress

from hypothesis import strategies as st

NAMESPACES = ("x", "y", "z")
NODES = ("node-0", "node-1", "node-2")
NAME_LABEL = "kubernetes.io/metadata.name"
KEYS, VALUES = ("app", "tier"), ("web", "db", "cache")
TEAMS = ("red", "blue")
#: (name, port, protocol) a container may serve: one name on two numbers, one number on two protocols
CONTAINER_PORTS = (
    ("http", 80, "TCP"),
    ("http", 8080, "TCP"),
    ("dns", 53, "UDP"),
    ("dns-tcp", 53, "TCP"),
    ("metrics", 9090, "TCP"),
    ("stream", 5000, "UDP"),
)
PORT_NUMBERS = (53, 80, 5000, 8080, 9090)
PORT_NAMES = ("http", "dns", "dns-tcp", "metrics", "stream", "absent")
PROTOCOLS = ("TCP", "UDP")
#: addresses no pod holds: one inside the pods' /16, two outside it
OUTSIDE = ("10.244.3.250", "192.0.2.10", "198.51.100.7")
CIDRS = ("10.244.0.0/16", "10.244.0.0/23", "10.244.1.0/24", "10.244.2.0/25", "0.0.0.0/0", "192.0.2.0/24")


def _pod_address(node: int, index: int) -> str:
    return f"10.244.{node}.{index * 5 + 2}"  # spread so /29 and /30 holes take some pods and not others


@st.composite
def namespaces(draw) -> list[dict]:
    names = draw(st.lists(st.sampled_from(NAMESPACES), min_size=1, max_size=3, unique=True))
    out = []
    for name in sorted(names):
        labels = {NAME_LABEL: name}
        team = draw(st.none() | st.sampled_from(TEAMS))
        if team:
            labels["team"] = team
        out.append({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}})
    return out


@st.composite
def pods(draw, namespace_names: list[str]) -> list[dict]:
    count = draw(st.integers(2, 7))
    out = []
    for i in range(count):
        node = draw(st.integers(0, len(NODES) - 1))
        labels = draw(st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=2))
        served = draw(st.lists(st.sampled_from(CONTAINER_PORTS), max_size=3, unique_by=lambda p: (p[1], p[2])))
        served = list({name: (name, port, proto) for name, port, proto in served}.values())  # names unique per pod
        out.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"namespace": draw(st.sampled_from(namespace_names)), "name": f"p{i}", "labels": labels},
                "spec": {
                    "nodeName": NODES[node],
                    "containers": [
                        {"name": f"c{j}", "ports": [{"name": n, "containerPort": p, "protocol": pr}]}
                        for j, (n, p, pr) in enumerate(served)
                    ],
                },
                "status": {"podIP": _pod_address(node, i)},
            }
        )
    return out


def _expression(key: str, operator: str, values: list[str]) -> dict:
    return {"key": key, "operator": operator, **({"values": values} if operator in ("In", "NotIn") else {})}


EXPRESSION = st.builds(
    _expression,
    st.sampled_from(KEYS),
    st.sampled_from(("In", "NotIn", "Exists", "DoesNotExist")),
    st.lists(st.sampled_from(VALUES), min_size=1, max_size=2, unique=True),
)
MATCH_LABELS = st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), min_size=1, max_size=2)
EXPRESSIONS = st.lists(EXPRESSION, min_size=1, max_size=2)
POD_SELECTOR = st.one_of(
    st.just({}),
    st.builds(lambda labels: {"matchLabels": labels}, MATCH_LABELS),
    st.builds(lambda expressions: {"matchExpressions": expressions}, EXPRESSIONS),
    st.builds(
        lambda labels, expressions: {"matchLabels": labels, "matchExpressions": expressions}, MATCH_LABELS, EXPRESSIONS
    ),
)
NAMESPACE_SELECTOR = st.one_of(
    st.just({}),
    st.builds(lambda n: {"matchLabels": {NAME_LABEL: n}}, st.sampled_from(NAMESPACES)),
    st.builds(
        lambda ns: {"matchExpressions": [_expression(NAME_LABEL, "In", ns)]},
        st.lists(st.sampled_from(NAMESPACES), min_size=1, max_size=2, unique=True),
    ),
    st.builds(lambda t: {"matchLabels": {"team": t}}, st.sampled_from(TEAMS)),
    st.builds(
        lambda op, ts: {"matchExpressions": [_expression("team", op, ts)]},
        st.sampled_from(("In", "NotIn", "Exists", "DoesNotExist")),
        st.lists(st.sampled_from(TEAMS), min_size=1, max_size=2, unique=True),
    ),
)


@st.composite
def ip_block(draw) -> dict:
    """A CIDR with up to two holes inside it, each around an address a drawn packet may carry."""
    cidr = ipaddress.ip_network(draw(st.sampled_from(CIDRS)))
    candidates = [_pod_address(n, i) for n in range(len(NODES)) for i in range(7)] + list(OUTSIDE)
    inside = [a for a in candidates if ipaddress.ip_address(a) in cidr] or [str(cidr.network_address)]
    holes = set()
    for _ in range(draw(st.integers(0, 2))):
        length = draw(st.sampled_from([n for n in (32, 30, 29, 25, 24) if n > cidr.prefixlen]))
        holes.add(str(ipaddress.ip_network(f"{draw(st.sampled_from(inside))}/{length}", strict=False)))
    return {"ipBlock": {"cidr": str(cidr), **({"except": sorted(holes)} if holes else {})}}


PEER = st.one_of(
    st.builds(lambda s: {"podSelector": s}, POD_SELECTOR),
    st.builds(lambda s: {"namespaceSelector": s}, NAMESPACE_SELECTOR),
    st.builds(lambda p, n: {"podSelector": p, "namespaceSelector": n}, POD_SELECTOR, NAMESPACE_SELECTOR),
    ip_block(),
)
POLICY_PORT = st.one_of(
    st.builds(lambda pr: {"protocol": pr}, st.sampled_from(PROTOCOLS)),
    st.builds(lambda p, pr: {"protocol": pr, "port": p}, st.sampled_from(PORT_NUMBERS), st.sampled_from(PROTOCOLS)),
    st.builds(lambda n, pr: {"protocol": pr, "port": n}, st.sampled_from(PORT_NAMES), st.sampled_from(PROTOCOLS)),
    st.builds(
        lambda p, width, pr: {"protocol": pr, "port": p, "endPort": p + width},
        st.sampled_from(PORT_NUMBERS),
        st.sampled_from((0, 1, 100, 5000)),
        st.sampled_from(PROTOCOLS),
    ),
    # what HNS cannot carry: refused, so it must open nothing for TCP or UDP either
    st.builds(lambda p: {"protocol": "SCTP", "port": p}, st.sampled_from(PORT_NUMBERS)),
)


@st.composite
def rules(draw, peers_key: str) -> list[dict]:
    out = []
    for _ in range(draw(st.integers(0, 2))):
        rule = {}
        if draw(st.booleans()):
            rule[peers_key] = draw(st.lists(PEER, min_size=1, max_size=2))
        if draw(st.booleans()):
            rule["ports"] = draw(st.lists(POLICY_PORT, min_size=1, max_size=2))
        out.append(rule)
    return out


@st.composite
def policies(draw, namespace_names: list[str]) -> list[dict]:
    out = []
    for i in range(draw(st.integers(0, 4))):
        types = draw(st.sampled_from((["Ingress"], ["Egress"], ["Ingress", "Egress"])))
        spec = {"podSelector": draw(POD_SELECTOR), "policyTypes": types}
        for direction, peers_key in (("ingress", "from"), ("egress", "to")):
            drawn = draw(rules(peers_key)) if direction.capitalize() in types else []
            if drawn:  # the API server returns no empty list (none is stored; it means isolation)
                spec[direction] = drawn
        namespace = draw(st.sampled_from(namespace_names))
        out.append(
            {
                "apiVersion": "networking.k8s.io/v1",
                "kind": "NetworkPolicy",
                "metadata": {"namespace": namespace, "name": f"np{i}"},
                "spec": spec,
            }
        )
    return out


@st.composite
def clusters(draw) -> dict:
    nss = draw(namespaces())
    names = [ns["metadata"]["name"] for ns in nss]
    return {"namespaces": nss, "pods": draw(pods(names)), "policies": draw(policies(names))}


@st.composite
def packets(draw, cluster: dict) -> list[dict]:
    """Packets between the cluster's pods and a few addresses no pod holds, never a pod to itself
    (loopback is not subject to policy, and the oracles answer it as if it were)."""
    pod_addresses = st.sampled_from([p["status"]["podIP"] for p in cluster["pods"]])
    address = st.one_of(pod_addresses, pod_addresses, pod_addresses, st.sampled_from(OUTSIDE))
    port = st.sampled_from(PORT_NUMBERS) | st.integers(1, 65535)
    drawn = draw(
        st.lists(
            st.builds(
                lambda s, d, p, pr: {"srcIP": s, "dstIP": d, "dstPort": p, "protocol": pr},
                address,
                address,
                port,
                st.sampled_from(PROTOCOLS),
            ),
            min_size=1,
            max_size=12,
        )
    )
    return [p for p in drawn if p["srcIP"] != p["dstIP"]]


def features(cluster: dict) -> set[str]:
    """What the cluster's policies exercise, by name."""
    found = set()
    for pol in cluster["policies"]:
        spec = pol["spec"]
        found.update(f"policyTypes {t}" for t in spec["policyTypes"])
        found.update(_selector_features("podSelector (subject)", spec["podSelector"]))
        for direction, key in (("ingress", "from"), ("egress", "to")):
            for rule in spec.get(direction, []):
                found.add(f"{direction} rule")
                for peer in rule.get(key, []):
                    for kind in ("podSelector", "namespaceSelector"):
                        if kind in peer:
                            found.update(_selector_features(f"{direction} {kind}", peer[kind]))
                    if "podSelector" in peer and "namespaceSelector" in peer:
                        found.add(f"{direction} podSelector and namespaceSelector")
                    if "ipBlock" in peer:
                        found.add(f"{direction} ipBlock" + (" with except" if "except" in peer["ipBlock"] else ""))
                for port in rule.get("ports", []):
                    found.add(f"{direction} port {port['protocol']}")
                    if "endPort" in port:
                        found.add(f"{direction} endPort")
                    elif isinstance(port.get("port"), str):
                        found.add(f"{direction} named port")
                    elif "port" in port:
                        found.add(f"{direction} numbered port")
    if len(cluster["policies"]) > 1:
        found.add("several policies")
    return found


def _selector_features(where: str, selector: dict) -> set[str]:
    found = set()
    if not selector:
        found.add(f"{where} empty")
    for key in selector.get("matchLabels", {}):
        found.add(f"{where} matchLabels" + (" default namespace label" if key == NAME_LABEL else ""))
    for expression in selector.get("matchExpressions", []):
        found.add(f"{where} matchExpressions {expression['operator']}")
    return found
