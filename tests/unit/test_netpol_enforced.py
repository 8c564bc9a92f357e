"""The model, translated to HNS ACLs and walked by the simulator, answers as the model does:
for drawn clusters and policies, every packet between pods of which one is on this node."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from libhns import policies as hp
from libhns.sim import aclwalk, validate
from plugins.netpol import model, resources, translate
from plugins.winnet.policies import V1, V2

NODE, NODE_ADDRESSES = "node-0", ["10.127.130.36"]
NAMESPACES = ("x", "y", "z")
PORTS = (("serve-80-tcp", 80, "TCP"), ("serve-81-udp", 81, "UDP"), ("web", 8080, "TCP"), ("web", 9090, "TCP"))
PROBES = ((80, "TCP"), (81, "UDP"), (8080, "TCP"), (9090, "TCP"), (80, "UDP"))

LABEL_SELECTOR = st.one_of(
    st.just({}),
    st.builds(lambda v: {"matchLabels": {"pod": v}}, st.sampled_from("ab")),
    st.builds(lambda v: {"matchLabels": {"tier": v}}, st.sampled_from(["web", "db"])),
    st.builds(
        lambda k, op, vs: {
            "matchExpressions": [{"key": k, "operator": op, **({"values": vs} if op in ("In", "NotIn") else {})}]
        },
        st.sampled_from(["pod", "tier", "ns"]),
        st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist"]),
        st.lists(st.sampled_from(["a", "b", "web", "db", "x", "y"]), min_size=1, max_size=2, unique=True),
    ),
)
NS_SELECTOR = st.one_of(
    st.just({}),
    st.builds(lambda n: {"matchLabels": {"kubernetes.io/metadata.name": n}}, st.sampled_from(NAMESPACES)),
    st.builds(
        lambda v: {"matchExpressions": [{"key": "team", "operator": "In", "values": [v]}]},
        st.sampled_from(["red", "blue"]),
    ),
)
IP_BLOCK = st.builds(
    lambda cidr, holes: {"ipBlock": {"cidr": cidr, **({"except": holes} if holes else {})}},
    st.sampled_from(["10.244.0.0/16", "10.244.0.0/24", "10.244.1.0/24", "0.0.0.0/0"]),
    st.lists(st.sampled_from(["10.244.0.8/29", "10.244.1.0/28", "10.244.0.3/32"]), max_size=2, unique=True),
).filter(
    lambda p: all(
        h.startswith(p["ipBlock"]["cidr"][:8]) or p["ipBlock"]["cidr"] == "0.0.0.0/0"
        for h in p["ipBlock"].get("except", [])
    )
)
PEER = st.one_of(
    st.builds(lambda s: {"podSelector": s}, LABEL_SELECTOR),
    st.builds(lambda s: {"namespaceSelector": s}, NS_SELECTOR),
    st.builds(lambda p, n: {"podSelector": p, "namespaceSelector": n}, LABEL_SELECTOR, NS_SELECTOR),
    IP_BLOCK,
)
PORT = st.one_of(
    st.builds(
        lambda p, pr: {"protocol": pr, "port": p}, st.sampled_from([80, 81, 8080]), st.sampled_from(["TCP", "UDP"])
    ),
    st.builds(lambda n: {"protocol": "TCP", "port": n}, st.sampled_from(["serve-80-tcp", "web", "nope"])),
    st.just({"protocol": "UDP", "port": "serve-81-udp"}),
    st.just({"protocol": "TCP", "port": 8000, "endPort": 9000}),
    st.sampled_from([{"protocol": "UDP"}, {"protocol": "SCTP", "port": 80}, {"protocol": "TCP"}]),
)
RULE = st.fixed_dictionaries({}, optional={"peers": st.lists(PEER, max_size=2), "ports": st.lists(PORT, max_size=2)})


def _policy(i, ns, selector, types, ingress, egress):
    spec = {"podSelector": selector, "policyTypes": types}
    if "Ingress" in types:
        spec["ingress"] = [
            {**({"from": r["peers"]} if "peers" in r else {}), **({"ports": r["ports"]} if "ports" in r else {})}
            for r in ingress
        ]
    if "Egress" in types:
        spec["egress"] = [
            {**({"to": r["peers"]} if "peers" in r else {}), **({"ports": r["ports"]} if "ports" in r else {})}
            for r in egress
        ]
    return {"metadata": {"namespace": ns, "name": f"p{i}"}, "spec": spec}


POLICIES = st.lists(
    st.tuples(
        st.sampled_from(NAMESPACES),
        LABEL_SELECTOR,
        st.sampled_from([["Ingress"], ["Egress"], ["Ingress", "Egress"]]),
        st.lists(RULE, max_size=2),
        st.lists(RULE, max_size=2),
    ),
    max_size=3,
).map(lambda ps: [_policy(i, *p) for i, p in enumerate(ps)])


def _pod(i, ns, name, node, tier, web):
    ports = [PORTS[0], PORTS[1], PORTS[2 + web]]
    return {
        "metadata": {"namespace": ns, "name": name, "labels": {"pod": name, "tier": tier}},
        "spec": {
            "nodeName": f"node-{node}",
            "containers": [
                {"name": "c", "ports": [{"name": n, "containerPort": p, "protocol": pr} for n, p, pr in ports]}
            ],
        },
        "status": {"podIP": f"10.244.{node}.{i + 2}"},
    }


PODS = st.lists(
    st.tuples(st.integers(0, 1), st.sampled_from(["web", "db"]), st.integers(0, 1)), min_size=6, max_size=6
).map(lambda draws: [_pod(i, NAMESPACES[i // 2], "ab"[i % 2], *d) for i, d in enumerate(draws)])
TEAMS = st.lists(st.sampled_from(["red", "blue"]), min_size=3, max_size=3).map(
    lambda teams: [{"metadata": {"name": n, "labels": {"team": t}}} for n, t in zip(NAMESPACES, teams)]
)


@pytest.mark.slow  # a big hypothesis run: every pod pair and port of 150 drawn clusters
@settings(max_examples=150, deadline=None)
@given(TEAMS, PODS, POLICIES, st.booleans())
def test_the_acls_hns_would_hold_enforce_the_model(namespaces, pods, policies, v1):
    c = resources.read(namespaces, pods, policies)
    endpoints = []
    for access in model.node_access(c, NODE):
        docs = translate.endpoint_acls(access, NODE_ADDRESSES, V1 if v1 else V2)
        if v1:  # the simulator takes them as HNSCall does, and stores their V2 form
            docs = [hp.to_v2(p) for p in validate.check_v1_policies(docs, "endpoint")]
        validate.check_v2_policies(docs, hp.KNOWN_V2_ENDPOINT_TYPES, "endpoint")
        endpoints.append((f"ep-{access.pod.key}", [str(access.pod.ip)], {"Policies": docs}))
    local = {str(p.ip) for p in c.pods if p.node == NODE}
    for src in c.pods:
        for dst in c.pods:
            if str(src.ip) not in local and str(dst.ip) not in local:
                continue
            for port, protocol in PROBES:
                ingress, egress = model.allows(c, str(src.ip), str(dst.ip), port, protocol)
                want = (ingress or str(dst.ip) not in local) and (egress or str(src.ip) not in local)
                steps, _ = aclwalk.walk(
                    endpoints, [], (str(src.ip), 40000), (str(dst.ip), port), {"TCP": 6, "UDP": 17}[protocol], 0
                )
                assert aclwalk.verdict(steps)[0] == want, (src.key, dst.key, port, protocol)
    # the node reaches every pod of its own on every port
    for ep, ips, _ in endpoints:
        steps, _ = aclwalk.walk(endpoints, [], (NODE_ADDRESSES[0], 40000), (ips[0], 1234), 6, 0)
        assert aclwalk.verdict(steps)[0], ep
