"""The doctor's checks of pods and their endpoints, pure functions of ``NodeFacts`` like ``checks``:
a pod whose sandbox runs without its HNS endpoint, and a pod endpoint in a bad V1 State.

Both read the sandbox host-local recorded at each ADD (``NodeFacts.sandboxes``) and whether it still
exists, and ask the one ownership rule (``plugins.cni.ownership``) what a reservation is kept for.
"""

from __future__ import annotations

from tools.wincni.doctor.facts import NodeFacts
from tools.wincni.judge.verdict import AFTER_FAILURE, FAIL, OK, SKIP, WARN, Check
from tools.wincni.node.sandboxes import NAMESPACE, Sandbox

#: V1 EndpointState (hcsshim): 0 Uninitialized, 1 Created, 2 Attached, 3 AttachedSharing (a running
#: pod's pause and app containers), 4 Detached, 5 Degraded, 6 Destroyed. networkhealth.ps1 counts
#: 2 and 3 as healthy.
HEALTHY_STATES = (2, 3)
STATE_NAMES = {
    0: "Uninitialized",
    1: "Created",
    2: "Attached",
    3: "AttachedSharing",
    4: "Detached",
    5: "Degraded",
    6: "Destroyed",
}


def recreate(pod: str, sandbox: Sandbox | None) -> str:
    """What the operator does for a pod whose sandbox runs without its network: its sandbox goes
    (the runtime's DEL releases its address), and the kubelet or the pod's controller starts it
    again with a new endpoint. The CNI container ID is the CRI pod sandbox ID."""
    if sandbox is not None and sandbox.kind == NAMESPACE:
        return (
            f"recreate pod sandbox {pod}: crictl inspectp {pod} names the pod (.status.metadata); "
            f"kubectl delete pod -n <namespace> <name> lets its controller start a new one, or crictl stopp {pod} "
            f"then crictl rmp {pod} lets the kubelet make it a new sandbox; either runs CNI DEL, which releases "
            "its address"
        )
    return (
        f"recreate pod sandbox {pod} (its pause container): kubectl delete pod -n <namespace> <name> (crictl "
        f"inspectp {pod} or docker inspect {pod} names it), or crictl rmp -f {pod} (docker rm -f {pod} with "
        "dockershim) lets the kubelet make it a new sandbox; either runs CNI DEL, which releases its address"
    )


def pod_endpoints(f: NodeFacts) -> Check:
    """A reservation whose recorded sandbox (namespace or pause container) still exists but whose
    HNS endpoint is gone: the pod runs without a network (its CHECK answers 101) until it is
    recreated. Reported at once: the ownership rule's in-flight age is about freeing an address,
    and a live sandbox keeps it whatever its age (so reclaim leaves it)."""
    from plugins.cni import ownership

    if f.hns_problem or f.network is None or f.reservations is None:
        return Check("pod-endpoints", SKIP, "not checked: no host-local store or HNS network", AFTER_FAILURE)
    if f.sandboxes is None:
        return Check("pod-endpoints", SKIP, "not checked: host-local's sandbox records were not read", "")
    pods = {ownership.pod_of(name, f.name) for name, _ in f.endpoints} - {""}
    recorded = {p.ip: p for p in f.sandboxes}
    lost, unknown, unrecorded = [], [], []
    for ip, cid in f.reservations:
        if not cid or cid in pods or ownership.pinned(cid):
            continue
        p = recorded.get(ip) or next((q for q in f.sandboxes if q.container == cid), None)
        if p is None or p.sandbox is None:
            unrecorded.append(f"{ip} ({cid})")
        elif p.exists is None:
            unknown.append(f"{ip} ({cid}, {p.sandbox}): {p.problem or 'not asked'}")
        elif ownership.sandbox_lost_endpoint(cid, pods, p.exists):
            lost.append((ip, cid, p))
    if lost:
        fixes = {cid: recreate(cid, p.sandbox) for _, cid, p in lost}
        return Check(
            "pod-endpoints",
            FAIL,
            "; ".join(
                f"pod sandbox {cid} ({p.sandbox}) still exists but its HNS endpoint {cid}_{f.name} is gone: "
                f"the pod has no network, it keeps {ip}"
                for ip, cid, p in lost
            ),
            "; ".join(fixes.values()),
        )
    if unknown:
        return Check(
            "pod-endpoints",
            WARN,
            "could not tell whether the sandbox of a reservation without an endpoint exists: " + "; ".join(unknown),
            "run the doctor again once HNS answers",
        )
    recorded_note = (
        f"; {len(unrecorded)} reservation(s) without an endpoint have no sandbox record (made by the Go plugin "
        f"or a wincni before it recorded them: {', '.join(unrecorded)}), which the ipam-store check judges by age"
        if unrecorded
        else ""
    )
    return Check("pod-endpoints", OK, f"no pod on {f.name} runs without its HNS endpoint{recorded_note}")


def endpoint_state(f: NodeFacts) -> Check:
    """A pod endpoint of ours whose V1 State is not Attached or AttachedSharing once its ADD is
    over (its address older than an ADD in flight; networkhealth.ps1's test of a healthy endpoint).
    A failure when the sandbox recorded at its ADD still exists: that pod runs on an endpoint HNS
    does not hold attached. Else a warning: the State is HNS's own bookkeeping, and an endpoint whose
    sandbox is gone is the stale-endpoints check's (reported there, not here)."""
    from plugins.cni import ownership

    if f.inventory is None or f.network is None:
        return Check("endpoint-state", SKIP, "not checked: no HNS network or endpoint list", AFTER_FAILURE)
    from libhns.objects import same_id

    stale = {name for name, _, _ in f.stale_endpoints}
    by_pod = {p.container: p for p in f.sandboxes or ()}
    bad, broken = [], []
    for ep in f.inventory.endpoints:
        pod = ownership.pod_of(ep.name or "", f.name)
        if not pod or ep.is_remote or not same_id(ep.virtual_network, f.network.id):
            continue
        if ep.state in HEALTHY_STATES or ep.state is None or any(ip in f.young for ip in ep.ip_addresses):
            continue
        p = by_pod.get(pod)
        what = f"{ep.name} ({ep.id}) is in State {ep.state} ({STATE_NAMES.get(ep.state, 'unknown')})"
        if p is not None and p.exists:
            broken.append((what, pod, p.sandbox))
        elif ep.name not in stale:
            bad.append(what)
    if broken:
        return Check(
            "endpoint-state",
            FAIL,
            "; ".join(f"{what}, while its pod sandbox {pod} ({sandbox}) still exists" for what, pod, sandbox in broken),
            "; ".join(recreate(pod, sandbox) for _, pod, sandbox in broken),
        )
    if bad:
        return Check(
            "endpoint-state",
            WARN,
            "; ".join(bad) + ": HNS does not hold it attached",
            "if its pod still runs, recreate it (crictl rmp -f <its sandbox>, or kubectl delete pod); once no "
            "sandbox holds it, the stale-endpoints check names it for removal",
        )
    return Check("endpoint-state", OK, f"every pod endpoint on {f.name} is Attached or AttachedSharing")
