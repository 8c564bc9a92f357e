"""Our NetworkPolicy, judged by the oracles: cyclonus's default cases, every step, through the
model and through the ACLs each node would hold as the simulator walks them."""

from __future__ import annotations

import enforced
from oracles import cyclonus_cases, steps

from plugins.netpol import model

NODES = tuple(enforced.NODE_ADDRESSES)


def _misjudged(step, v1: bool) -> list[tuple]:
    """The probes of one step where we differ from the step's table: the model's two directions,
    and on each node the walk of the packets one of whose ends is there. A pod reaching itself is
    loopback, allowed whatever the table says (the table answers as if it were subject)."""
    c = enforced.read(step.cluster)
    rows = [p for p in step.probes if p["port"] is not None]
    ips = step.addresses
    wrong = []
    for row in rows:
        src, dst = ips[row["from"]], ips[row["to"]]
        loopback = src == dst
        want = (True, True) if loopback else (row["ingress"], row["egress"])
        got = model.allows(c, src, dst, row["port"], row["protocol"])
        if got != want:
            wrong.append(("model", row, got))
    for node in NODES:
        endpoints = enforced.node_endpoints(c, node, v1)
        local = {ip for _, addresses, _ in endpoints for ip in addresses}
        for row in rows:
            src, dst = ips[row["from"]], ips[row["to"]]
            if src not in local and dst not in local:
                continue
            want = src == dst or ((row["ingress"] or dst not in local) and (row["egress"] or src not in local))
            got = enforced.walked(endpoints, src, dst, row["port"], row["protocol"])
            if got != want:
                wrong.append((node, row, got))
    return wrong


def test_every_cyclonus_step_is_enforced_as_its_table_says():
    judged = misjudged = 0
    report = []
    for i, step in enumerate(steps(cyclonus_cases())):
        wrong = _misjudged(step, v1=bool(i % 2))  # the ACLs sent in V1 form every other step
        judged += 1
        misjudged += bool(wrong)
        report += [f"{step.case!r} step {step.index} ({where}): {row} -> ours {got}" for where, row, got in wrong[:3]]
    assert judged == 122
    assert misjudged == 0, "\n".join(report[:30])


def test_cyclonus_s_sctp_policies_are_refused_by_name():
    refused = 0
    for step in steps(cyclonus_cases()):
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
    assert refused == 10
