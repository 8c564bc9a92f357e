"""Drawn clusters and packets: our model, and node-0's ACLs as the simulator walks them, answer
as kube-network-policies does. The draws' features are counted, so a stream that never reaches a
selector kind, an ipBlock with except, a named port, an endPort or a direction fails."""

from __future__ import annotations

import collections

import enforced
import pytest
import strategies
from hypothesis import event, given, settings
from hypothesis import strategies as st
from oracles import knp_verdicts

from plugins.netpol import model

#: each must be drawn in at least 1 of 100 draws
COUNTED = (
    "ingress rule",
    "egress rule",
    "policyTypes Ingress",
    "policyTypes Egress",
    "several policies",
    "ingress podSelector matchLabels",
    "ingress podSelector matchExpressions In",
    "ingress podSelector matchExpressions NotIn",
    "ingress podSelector matchExpressions Exists",
    "ingress podSelector matchExpressions DoesNotExist",
    "egress namespaceSelector matchLabels",
    "egress namespaceSelector matchLabels default namespace label",
    "ingress namespaceSelector matchExpressions In",
    "ingress podSelector and namespaceSelector",
    "egress podSelector and namespaceSelector",
    "ingress ipBlock with except",
    "egress ipBlock with except",
    "ingress named port",
    "egress named port",
    "ingress endPort",
    "egress endPort",
    "ingress port UDP",
    "egress port TCP",
    "ingress port SCTP",
    "egress port SCTP",
)
NODE = "node-0"


def _judge(draws: int) -> tuple[collections.Counter, collections.Counter]:
    features, outcomes = collections.Counter(), collections.Counter()

    @settings(max_examples=draws, deadline=None, derandomize=True)  # the same stream, so counts never flake
    @given(st.data())
    def check(data):
        cluster = data.draw(strategies.clusters(), label="cluster")
        packets = data.draw(strategies.packets(cluster), label="packets")
        drawn = strategies.features(cluster)
        for feature in drawn:
            event(feature)
        features.update(drawn)
        c = enforced.read(cluster)
        endpoints = enforced.node_endpoints(c, NODE, v1=False)
        local = {ip for _, addresses, _ in endpoints for ip in addresses}
        for packet, verdict in zip(packets, knp_verdicts(cluster, packets), strict=True):
            src, dst, port, protocol = packet["srcIP"], packet["dstIP"], packet["dstPort"], packet["protocol"]
            ours = model.allows(c, src, dst, port, protocol)
            assert ours == (verdict["ingress"], verdict["egress"]), (packet, "ours", ours, "knp", verdict)
            outcomes.update(k for k in ("ingress", "egress") if not verdict[k])
            outcomes["asked"] += 1
            if src in local or dst in local:
                want = (verdict["ingress"] or dst not in local) and (verdict["egress"] or src not in local)
                assert enforced.walked(endpoints, src, dst, port, protocol) == want, (packet, NODE, verdict)
                outcomes["walked"] += 1

    check()
    return features, outcomes


def _assert_not_trivial(draws: int, features: collections.Counter, outcomes: collections.Counter) -> None:
    missing = {f: features[f] for f in COUNTED if features[f] * 100 < draws}
    assert not missing, f"features drawn too rarely in {draws} draws: {missing}"
    # more than 1 in 30 packets denied each way, more than 1 in 6 through node-0's ACLs
    assert outcomes["ingress"] * 30 > outcomes["asked"] and outcomes["egress"] * 30 > outcomes["asked"], outcomes
    assert outcomes["walked"] * 6 > outcomes["asked"], outcomes


def test_drawn_clusters_are_judged_as_kube_network_policies_judges_them():
    _assert_not_trivial(300, *_judge(300))


@pytest.mark.slow
def test_two_thousand_drawn_clusters_are_judged_as_kube_network_policies_judges_them():
    _assert_not_trivial(2000, *_judge(2000))
