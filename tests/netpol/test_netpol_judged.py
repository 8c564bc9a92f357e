"""Our NetworkPolicy, judged by the oracles' tables: cyclonus's default cases and the upstream e2e
cases, every step, through the model and through the ACLs each node would hold as the simulator
walks them."""

from __future__ import annotations

import enforced
import pytest
from oracles import cyclonus_cases, load, steps

from plugins.netpol import model


def test_every_cyclonus_step_is_enforced_as_its_table_says():
    judged = misjudged = 0
    report = []
    for i, step in enumerate(steps(cyclonus_cases())):
        wrong = enforced.misjudged(step, v1=bool(i % 2))  # the ACLs sent in V1 form every other step
        judged += 1
        misjudged += bool(wrong)
        report += [f"{step.case!r} step {step.index} ({where}): {row} -> ours {got}" for where, row, got in wrong[:3]]
    assert judged == 122
    assert misjudged == 0, "\n".join(report[:30])


@pytest.mark.parametrize(("cases", "with_sctp"), [(cyclonus_cases, 10), (lambda: load("upstream-e2e.json"), 2)])
def test_sctp_policies_are_refused_by_name(cases, with_sctp):
    refused = 0
    for step in steps(cases()):
        sctp = [
            pol["metadata"]["name"]
            for pol in step.policies
            for rule in pol["spec"].get("ingress", []) + pol["spec"].get("egress", [])
            if any(port["protocol"] == "SCTP" for port in rule.get("ports", []))
        ]
        if not sctp:
            continue
        c = enforced.read(step.cluster)
        refusals = [r for pod in c.pods for r in model.access(c, pod).refusals]
        assert refusals, step.case
        assert all("SCTP" in r.reason and r.policy.split("/")[-1] in sctp for r in refusals), refusals[:3]
        refused += 1
    assert refused == with_sctp


def test_every_upstream_e2e_step_is_enforced_as_its_table_says():
    judged = list(steps(load("upstream-e2e.json")))
    report = [
        f"{step.case!r} step {step.index} ({where}): {row} -> ours {got}"
        for i, step in enumerate(judged)
        for where, row, got in enforced.misjudged(step, v1=bool(i % 2))[:3]
    ]
    assert len(judged) == 52
    assert report == []
