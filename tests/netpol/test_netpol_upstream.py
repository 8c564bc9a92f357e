"""The upstream e2e NetworkPolicy cases as data (data/upstream-e2e.json): their expectations are
kube-network-policies' answers, recomputed here, and agree with what each upstream test states."""

from __future__ import annotations

from oracles import knp_verdicts, load, steps

VERDICT = ("ingress", "egress", "allowed")


def test_the_42_cases_that_run_on_windows_are_all_there():
    document = load("upstream-e2e.json")
    names = [case["name"] for case in document["cases"]]
    all_steps = list(steps(document))
    assert document["oracle"] == "upstream-e2e v1.34.4"
    assert (len(names), len(set(names)), len(all_steps)) == (42, 42, 52)
    assert sum(len(s.probes) for s in all_steps) == 4779  # 59 tables of 9 x 9 pods
    assert all(name.startswith("should ") for name in names)
    assert {p["protocol"] for s in all_steps for p in s.probes} == {"TCP", "UDP"}  # UDP in one case only


def test_the_expectations_are_kube_network_policies_answers_and_the_upstream_tests_own():
    wrong, stated_otherwise, stated = [], [], 0
    for step in steps(load("upstream-e2e.json")):
        verdicts = knp_verdicts(step.cluster, [step.packet(p) for p in step.probes])
        for row, verdict in zip(step.probes, verdicts, strict=True):
            if tuple(row[k] for k in VERDICT) != tuple(verdict[k] for k in VERDICT):
                wrong.append((step.case, step.index, row, verdict))
            if row["stated"] is None:  # upstream ignores a pod reaching itself (kubernetes#95879)
                assert row["from"] == row["to"], row
                continue
            stated += 1
            if row["stated"] != verdict["allowed"]:
                stated_otherwise.append((step.case, step.index, row, "knp", verdict))
    assert stated == 4779 - 59 * 9
    assert wrong == [], "the file's expectations are not knp's (row, then knp's answer)"
    assert stated_otherwise == [], "the upstream test states otherwise than knp answers"
