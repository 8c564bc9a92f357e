"""Benchmark NetworkPolicy's translation: 200 policies for the 100 pods of one node in a cluster of
5,000 pods (50 nodes, 50 namespaces), from API objects to every endpoint's ACL documents, in CPU
seconds; with the rules per endpoint that come out.

The policies mix what real ones hold: pod selectors by label and by expression, namespace
selectors (the default name label among them), ipBlock with ``except``, ports by number, by name
and as ranges, UDP DNS egress, ingress and egress.

    python bench/netpol_translate.py
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from plugins.netpol import model, resources, translate
from plugins.winnet.policies import V2

NODES, NAMESPACES, PODS, POLICIES = 50, 50, 5000, 200
NODE = "node-0"
NODE_ADDRESSES = ["10.127.130.36"]


def objects() -> tuple[list, list, list]:
    namespaces = [{"metadata": {"name": f"ns{n}", "labels": {"team": f"t{n % 5}"}}} for n in range(NAMESPACES)]
    pods = []
    for i in range(PODS):
        node, n = i % NODES, i // NODES  # each node holds pods of every namespace and app
        pods.append(
            {
                "metadata": {
                    "namespace": f"ns{n % NAMESPACES}",
                    "name": f"pod{i}",
                    "labels": {"app": f"app{n * 7 % 10}", "tier": ("web", "db", "cache")[n % 3]},
                },
                "spec": {
                    "nodeName": f"node-{node}",
                    "containers": [
                        {
                            "name": "c",
                            "ports": [
                                {"name": "http", "containerPort": 8000 + n % 7, "protocol": "TCP"},
                                {"name": "metrics", "containerPort": 9100, "protocol": "TCP"},
                            ],
                        }
                    ],
                },
                "status": {"podIP": f"10.244.{node}.{n + 2}"},
            }
        )
    policies = [_policy(n) for n in range(POLICIES)]
    return namespaces, pods, policies


def _policy(n: int) -> dict:
    ns = f"ns{n % NAMESPACES}"
    ingress = [
        {
            "from": [
                {"podSelector": {"matchLabels": {"app": f"app{(n + 1) % 10}"}}},
                {
                    "namespaceSelector": {"matchLabels": {"team": f"t{n % 5}"}},
                    "podSelector": {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["web"]}]},
                },
            ],
            "ports": [{"protocol": "TCP", "port": "http"}, {"protocol": "TCP", "port": 443}],
        },
        {
            "from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "ns0"}}}],
            "ports": [{"protocol": "TCP", "port": 9100}],
        },
    ]
    egress = [
        {"to": [{"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.96.0.0/12", f"10.244.{n % 50}.0/24"]}}]},
        {
            "to": [{"namespaceSelector": {}, "podSelector": {"matchLabels": {"app": f"app{n % 10}"}}}],
            "ports": [{"protocol": "TCP", "port": 5000, "endPort": 5100}, {"protocol": "TCP", "port": "metrics"}],
        },
        {"ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]},
    ]
    types = (["Ingress"], ["Egress"], ["Ingress", "Egress"])[n % 3]
    spec = {
        "podSelector": {"matchExpressions": [{"key": "app", "operator": "NotIn", "values": [f"app{n % 10}"]}]}
        if n % 4 == 0
        else {"matchLabels": {"app": f"app{n % 10}"}},
        "policyTypes": types,
    }
    if "Ingress" in types:
        spec["ingress"] = ingress
    if "Egress" in types:
        spec["egress"] = egress
    return {"metadata": {"namespace": ns, "name": f"pol{n}"}, "spec": spec}


def translate_node(namespaces: list, pods: list, policies: list) -> list[list[dict]]:
    c = resources.read(namespaces, pods, policies)
    return [translate.endpoint_acls(a, NODE_ADDRESSES, V2) for a in model.node_access(c, NODE)]


def measure() -> dict:
    """CPU seconds of one translation, the first in the process (the translation's caches cold),
    and the rules per endpoint."""
    inputs = objects()
    started = time.process_time()
    out = translate_node(*inputs)
    cpu = time.process_time() - started
    counts = [len(rules) for rules in out]
    return {
        "cpu s": cpu,
        "endpoints": len(out),
        "rules per endpoint": {"min": min(counts), "median": statistics.median(counts), "max": max(counts)},
    }


def main() -> int:
    res = measure()
    per = res["rules per endpoint"]
    print(
        f"netpol: {POLICIES} policies, {res['endpoints']} pods on the node ({PODS} in the cluster): "
        f"{res['cpu s']:.3f} s CPU; rules per endpoint min {per['min']}, median {per['median']}, max {per['max']}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
