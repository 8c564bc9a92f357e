"""plugins.netpol: the cluster reader, selectors, the per-pod model and ``allows`` (pure)."""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given
from hypothesis import strategies as st

from plugins.netpol import model, resources, selectors
from plugins.netpol.errors import BadObject


def ns(name: str, **labels: str) -> dict:
    return {"metadata": {"name": name, "labels": labels}}


def pod(key: str, ip: str, node: str = "node-0", ports=(("serve-80-tcp", 80, "TCP"),), **labels: str) -> dict:
    namespace, name = key.split("/")
    return {
        "metadata": {"namespace": namespace, "name": name, "labels": {"pod": name, **labels}},
        "spec": {
            "nodeName": node,
            "containers": [
                {"name": "c", "ports": [{"name": n, "containerPort": p, "protocol": pr} for n, p, pr in ports]}
            ],
        },
        "status": {"podIP": ip},
    }


def policy(key: str, selector: dict, types=("Ingress",), ingress=None, egress=None) -> dict:
    namespace, name = key.split("/")
    spec = {"podSelector": selector, "policyTypes": list(types)}
    if ingress is not None:
        spec["ingress"] = ingress
    if egress is not None:
        spec["egress"] = egress
    return {"metadata": {"namespace": namespace, "name": name}, "spec": spec}


NAMESPACES = [ns("x", team="a"), ns("y", team="b")]
PODS = [
    pod("x/a", "10.244.0.10"),
    pod("x/b", "10.244.1.10", node="node-1", ports=(("serve-81-tcp", 81, "TCP"),)),
    pod("y/a", "10.244.2.10", node="node-2", ports=(("serve-80-tcp", 8080, "TCP"), ("dns", 53, "UDP"))),
]
IP = {"x/a": "10.244.0.10", "x/b": "10.244.1.10", "y/a": "10.244.2.10"}


def world(*policies: dict) -> resources.Cluster:
    return resources.read(NAMESPACES, PODS, list(policies))


def allowed(c, src: str, dst: str, port: int, proto: str = "TCP") -> tuple[bool, bool]:
    return model.allows(c, IP.get(src, src), IP.get(dst, dst), port, proto)


def test_no_policy_allows_everything():
    c = world()
    assert allowed(c, "x/a", "y/a", 80) == (True, True)
    assert model.access(c, c.pods[0]).ingress == model.OPEN


def test_ingress_isolation_allows_only_the_selected_peer_and_port():
    c = world(
        policy(
            "x/p",
            {"matchLabels": {"pod": "a"}},
            ingress=[
                {"from": [{"podSelector": {"matchLabels": {"pod": "b"}}}], "ports": [{"protocol": "TCP", "port": 80}]}
            ],
        )
    )
    assert allowed(c, "x/b", "x/a", 80) == (True, True)
    assert allowed(c, "x/b", "x/a", 81) == (False, True)
    assert allowed(c, "x/b", "x/a", 80, "UDP") == (False, True)
    assert allowed(c, "y/a", "x/a", 80) == (False, True)
    assert allowed(c, "x/a", "x/b", 81) == (True, True)  # x/b is not selected


def test_a_pod_reaches_itself_whatever_isolates_it():
    c = world(policy("x/deny", {}, types=("Ingress", "Egress")))
    assert allowed(c, "x/a", "x/a", 80) == (True, True)
    assert allowed(c, "x/a", "x/b", 80) == (False, False)


def test_ingress_and_egress_are_independent():
    c = world(policy("x/deny-out", {}, types=("Egress",)))
    assert allowed(c, "x/a", "y/a", 80) == (True, False)
    assert allowed(c, "y/a", "x/a", 80) == (True, True)


def test_policies_union():
    c = world(
        policy("x/p1", {"matchLabels": {"pod": "a"}}, ingress=[{"ports": [{"protocol": "TCP", "port": 80}]}]),
        policy("x/p2", {"matchLabels": {"pod": "a"}}, ingress=[{"ports": [{"protocol": "UDP", "port": 53}]}]),
    )
    assert allowed(c, "y/a", "x/a", 80) == (True, True)
    assert allowed(c, "y/a", "x/a", 53, "UDP") == (True, True)
    assert allowed(c, "y/a", "x/a", 53) == (False, True)


def test_namespace_selector_with_default_name_label_and_pod_selector_together():
    peer = {
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "y"}},
        "podSelector": {"matchLabels": {"pod": "a"}},
    }
    c = world(policy("x/p", {"matchLabels": {"pod": "a"}}, ingress=[{"from": [peer]}]))
    assert allowed(c, "y/a", "x/a", 80) == (True, True)
    assert allowed(c, "x/b", "x/a", 80) == (False, True)


def test_named_ports_resolve_per_destination_pod():
    # egress from x/a to the port named serve-80-tcp: 80 on x/a's peers that have it, 8080 on y/a
    c = world(
        policy(
            "x/p",
            {"matchLabels": {"pod": "a"}},
            types=("Egress",),
            egress=[{"ports": [{"protocol": "TCP", "port": "serve-80-tcp"}]}],
        )
    )
    assert allowed(c, "x/a", "y/a", 8080) == (True, True)
    assert allowed(c, "x/a", "y/a", 80) == (True, False)
    assert allowed(c, "x/a", "x/b", 81) == (True, False)  # x/b has no such name
    assert allowed(c, "x/a", "192.0.2.1", 80) == (True, False)  # no pod, no names
    # ingress: the subject's own names
    c = world(policy("y/p", {}, ingress=[{"ports": [{"protocol": "UDP", "port": "dns"}]}]))
    assert allowed(c, "x/a", "y/a", 53, "UDP") == (True, True)


def test_end_port_makes_a_range():
    c = world(
        policy(
            "x/p", {"matchLabels": {"pod": "a"}}, ingress=[{"ports": [{"protocol": "TCP", "port": 80, "endPort": 90}]}]
        )
    )
    assert [allowed(c, "y/a", "x/a", p)[0] for p in (79, 80, 85, 90, 91)] == [False, True, True, True, False]


def test_ip_block_with_except():
    block = {"ipBlock": {"cidr": "10.244.0.0/16", "except": ["10.244.1.0/24"]}}
    c = world(policy("x/p", {"matchLabels": {"pod": "a"}}, ingress=[{"from": [block]}]))
    assert allowed(c, "y/a", "x/a", 80) == (True, True)
    assert allowed(c, "x/b", "x/a", 80) == (False, True)
    assert allowed(c, "10.9.0.1", "x/a", 80) == (False, True)


def test_sctp_is_refused_by_name_and_stays_isolated():
    c = world(policy("x/p", {"matchLabels": {"pod": "a"}}, ingress=[{"ports": [{"protocol": "SCTP", "port": 80}]}]))
    a = model.access(c, c.pods[0])
    assert a.ingress == model.Direction(True, ())
    [refusal] = a.refusals
    assert (refusal.policy, refusal.field, refusal.direction) == ("x/p", "spec.ingress[0].ports[0].protocol", "ingress")
    assert "SCTP" in refusal.reason
    assert allowed(c, "y/a", "x/a", 80) == (False, True)


def test_node_access_lists_this_nodes_pods_in_order():
    c = world()
    assert [a.pod.key for a in model.node_access(c, "node-0")] == ["x/a"]
    assert model.node_access(c, "node-9") == ()


def test_grants_normalise_peers_and_ports():
    g = model.normalise(
        [
            model.Grant("TCP", ((80, 80),), (ipaddress.ip_network("10.0.0.0/25"),)),
            model.Grant("TCP", ((80, 80),), (ipaddress.ip_network("10.0.0.128/25"),)),
            model.Grant("TCP", ((81, 81),), (ipaddress.ip_network("10.0.0.0/24"),)),
            model.Grant("UDP", None, ()),
        ]
    )
    assert g == (model.Grant("TCP", ((80, 81),), (ipaddress.ip_network("10.0.0.0/24"),)),)


@pytest.mark.parametrize(
    "bad,field",
    [
        (policy("x/p", {}, types=()), "policies[0].spec.policyTypes"),
        (
            policy("x/p", {}, ingress=[{"ports": [{"protocol": "ICMP", "port": 1}]}]),
            "policies[0].spec.ingress[0].ports[0].protocol",
        ),
        (
            policy("x/p", {}, ingress=[{"from": [{"ipBlock": {"cidr": "10.0.0.0/8", "except": ["11.0.0.0/8"]}}]}]),
            "policies[0].spec.ingress[0].from[0].ipBlock.except[0]",
        ),
        (
            policy("x/p", {"matchExpressions": [{"key": "a", "operator": "In"}]}),
            "policies[0].spec.podSelector.matchExpressions[0].values",
        ),
        (
            policy("x/p", {}, ingress=[{"ports": [{"protocol": "TCP", "port": "web", "endPort": 90}]}]),
            "policies[0].spec.ingress[0].ports[0].endPort",
        ),
    ],
)
def test_bad_objects_name_the_field(bad, field):
    with pytest.raises(BadObject) as err:
        world(bad)
    assert err.value.field == field


# ---------------------------------------------------------------- selector algebra

LABELS = st.dictionaries(st.sampled_from("abc"), st.sampled_from("xyz"), max_size=3)
EXPRESSION = st.one_of(
    st.tuples(
        st.sampled_from("abc"),
        st.sampled_from(["In", "NotIn"]),
        st.lists(st.sampled_from("xyz"), min_size=1, max_size=2),
    ),
    st.tuples(st.sampled_from("abc"), st.sampled_from(["Exists", "DoesNotExist"]), st.just([])),
)


def _raw(match_labels, expressions) -> dict:
    return {
        "matchLabels": match_labels,
        "matchExpressions": [{"key": k, "operator": op, **({"values": v} if v else {})} for k, op, v in expressions],
    }


@given(LABELS, st.lists(EXPRESSION, max_size=3), LABELS)
def test_a_selector_is_the_conjunction_of_its_requirements(match_labels, expressions, labels):
    whole = selectors.parse(_raw(match_labels, expressions), "s").matches(labels)
    parts = [selectors.parse(_raw({k: v}, []), "s").matches(labels) for k, v in match_labels.items()]
    parts += [selectors.parse(_raw({}, [e]), "s").matches(labels) for e in expressions]
    assert whole == all(parts)


@given(st.sampled_from("abc"), st.lists(st.sampled_from("xyz"), min_size=1, max_size=3), LABELS)
def test_in_and_notin_are_complements_only_where_the_key_exists(key, values, labels):
    inside = selectors.parse(_raw({}, [(key, "In", values)]), "s").matches(labels)
    outside = selectors.parse(_raw({}, [(key, "NotIn", values)]), "s").matches(labels)
    exists = selectors.parse(_raw({}, [(key, "Exists", [])]), "s").matches(labels)
    absent = selectors.parse(_raw({}, [(key, "DoesNotExist", [])]), "s").matches(labels)
    assert exists != absent
    assert inside != outside
    assert not (inside and absent)
