"""The two oracles, judged by each other: every probe of cyclonus's default cases asked of
kube-network-policies, and each program held to what README.md says it prints and refuses."""

from __future__ import annotations

import collections

import pytest
from oracles import KnpError, cyclonus_cases, knp_verdicts, load, steps

# cyclonus v0.5.6 `generate`'s default run: its tags minus multi-peer, upstream-e2e, example,
# end-port and namespaces-by-default-label (pkg/cli/generate.go), 9 pods serving TCP and UDP on 80, 81
CYCLONUS_CASES, CYCLONUS_STEPS, CYCLONUS_PROBES = 112, 122, 39_764
VERDICT = ("ingress", "egress", "allowed")


def test_cyclonus_prints_its_default_cases_step_by_step():
    document = cyclonus_cases()
    all_steps = list(steps(document))
    assert document["oracle"] == "cyclonus v0.5.6"
    assert (len(document["cases"]), len(all_steps)) == (CYCLONUS_CASES, CYCLONUS_STEPS)
    assert sum(len(s.probes) for s in all_steps) == CYCLONUS_PROBES
    tags = collections.Counter(t for case in document["cases"] for t in case["tags"])
    assert not {"multi-peer", "upstream-e2e", "example", "end-port", "namespaces-by-default-label"} & set(tags)
    assert tags["sctp"] == 10  # their SCTP policies are probed on the TCP and UDP servers
    for step in all_steps:
        for ns in step.namespaces:
            assert ns["metadata"]["labels"]["kubernetes.io/metadata.name"] == ns["metadata"]["name"]
        assert {p["spec"]["nodeName"] for p in step.pods} == {"node-0", "node-1", "node-2"}
        assert {p["protocol"] for p in step.probes} == {"TCP", "UDP"}
        for policy in step.policies:  # as the API server returns them
            spec = policy["spec"]
            assert spec["policyTypes"]
            rules = spec.get("ingress", []) + spec.get("egress", [])
            assert all(port["protocol"] for rule in rules for port in rule.get("ports", []))


def test_every_cyclonus_probe_is_answered_alike_by_kube_network_policies():
    disagreements, asked, allowed = [], 0, collections.Counter()
    for step in steps(cyclonus_cases()):
        rows = [p for p in step.probes if p["port"] is not None]
        verdicts = knp_verdicts(step.cluster, [step.packet(p) for p in rows])
        asked += len(rows)
        for row, verdict in zip(rows, verdicts, strict=True):
            allowed.update(k for k in VERDICT if row[k])
            if tuple(row[k] for k in VERDICT) != tuple(verdict[k] for k in VERDICT):
                disagreements.append({"case": step.case, "step": step.index, "probe": row, "knp": verdict})
    assert asked == CYCLONUS_PROBES
    # each direction is decided both ways thousands of times, so agreement is not a trivial stream
    assert all(3000 < allowed[k] < asked - 3000 for k in VERDICT), allowed
    assert disagreements == [], f"{len(disagreements)} probes where cyclonus (the row) and knp differ"


def test_the_sample_s_table_is_kube_network_policies_answer():
    for step in steps(load("sample.json")):
        verdicts = knp_verdicts(step.cluster, [step.packet(p) for p in step.probes])
        assert [tuple(v[k] for k in VERDICT) for v in verdicts] == [tuple(p[k] for k in VERDICT) for p in step.probes]


def _sample_cluster() -> dict:
    return next(steps(load("sample.json"))).cluster


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (lambda c: c["policies"].append(_policy(policyTypes=[])), "spec.policyTypes is empty"),
        (lambda c: c["policies"].append(_policy(ingress=[{"ports": [{"port": 80}]}])), "a port has no protocol"),
        (lambda c: c["policies"].append(_policy(ingress=[])), "an empty spec.ingress or spec.egress list"),
        (lambda c: c["pods"][0]["metadata"].update(namespace="nowhere"), 'no namespace "nowhere"'),
        (lambda c: c["pods"][1]["status"].update(podIP=c["pods"][0]["status"]["podIP"]), "another pod's too"),
        (lambda c: c.update(packet=[]), 'unknown field "packet"'),
    ],
)
def test_knp_refuses_what_it_cannot_answer_saying_why(change, reason):
    cluster = _sample_cluster()
    change(cluster)
    with pytest.raises(KnpError, match=reason):
        knp_verdicts(cluster, [])
    assert knp_verdicts(_sample_cluster(), []) == []  # and the next question is answered


def _policy(**spec) -> dict:
    return {
        "metadata": {"namespace": "x", "name": "bad"},
        "spec": {"podSelector": {}, "policyTypes": ["Ingress"], **spec},
    }
