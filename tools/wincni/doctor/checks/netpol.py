"""The doctor's checks of the NetworkPolicy agent (``wincni netpol``), pure functions of
``NodeFacts`` like every check: whether it runs and syncs, endpoints whose ACLs differ from what
it wants, and isolated pods whose endpoints hold none of its rules.

They read the state the agent writes for ADD (``STATE``, recorded in a bundle as any check's
file): its ``status`` names, by address, each endpoint it keeps, its pod and the digest of the
rules it wants there (``plugins.winnet.aclcompare``, the agent's own compare), and ``alive``,
rewritten at least once a ``HEARTBEAT`` while it runs. HNS's side is the facts' endpoints on the
pods' network that the ownership rule gives the agent (``ownership.acl_target``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Mapping

from basics.inputfile import Input
from plugins.winnet.netpolstate import HEARTBEAT
from tools.wincni.doctor.checks.common import command, not_checked
from tools.wincni.doctor.facts import CheckFile, NodeFacts
from tools.wincni.judge.verdict import FAIL, OK, WARN, Check
from tools.wincni.node.source import Problem


def _placed(env: Mapping[str, str], platform: str) -> str:
    """Where the agent writes it and ADD reads it (``WINCNI_NETPOL_STATE``, ``WINCNI_LOCK_DIR``)."""
    from plugins.winnet.lifecycle import netpol_state

    return netpol_state(env, platform)


STATE = CheckFile(
    "--netpol-state",
    "the NetworkPolicy agent's state (wincni netpol writes it, ADD reads it)",
    r"C:\ProgramData\wincni\netpol.json",
    "/run/wincni/netpol.json",
    cap=32 << 20,
    placed=_placed,
)
#: A heartbeat older than three, and the agent is taken for stopped.
STALE = 3 * HEARTBEAT
OFF = "pods get no NetworkPolicy; ADD applies none (deploy/'s netpol component turns the agent on)"
DOWN = (
    "meanwhile the endpoints keep the rules last applied and no policy change reaches them; a new pod gets "
    "the rules the state holds for it, one the agent had not seen fails closed in each direction its "
    "namespace's policies isolate as the state last recorded them (the node's addresses allowed in), one of a "
    "namespace the state knows no policy of none"
)


@dataclass(frozen=True)
class AgentState:
    """The state as read: ``doc`` (None: absent), or why it cannot be read (``problem``)."""

    path: str
    doc: dict | None = None
    problem: Problem | None = None

    @property
    def status(self) -> dict:
        found = (self.doc or {}).get("status")
        return found if isinstance(found, dict) else {}

    @property
    def endpoints(self) -> dict:
        found = self.status.get("endpoints")
        return found if isinstance(found, dict) else {}


def agent_state(f: NodeFacts) -> AgentState:
    """The agent's state from the facts' files: absent, unreadable (why), or its document."""
    from plugins.winnet.netpolstate import VERSION

    got = f.files.get(STATE.flag)
    path = got.path if isinstance(got, Input) else ""
    if isinstance(got, Problem):
        return AgentState(path, problem=got)
    if not isinstance(got, Input):
        return AgentState(path)
    try:
        doc = json.loads(got.data)
    except (ValueError, UnicodeDecodeError, RecursionError):
        doc = None
    if not isinstance(doc, dict) or doc.get("version") != VERSION:
        fix = "the agent writes it again when it runs; remove it to run without NetworkPolicy"
        return AgentState(path, problem=Problem(f"{path} is not a state the plugins read: every ADD fails", fix))
    return AgentState(path, doc)


def netpol_agent(f: NodeFacts) -> Check:
    """Whether the agent runs (its heartbeat) and its last sync applied everything; off (no
    state) is a choice, said once."""
    st = agent_state(f)
    if st.problem is not None:
        return Check(
            "netpol-agent",
            FAIL,
            st.problem.message,
            f"ADD fails with code 5 rather than start a pod open: {st.problem.fix}",
        )
    if st.doc is None:
        return Check("netpol-agent", OK, f"off: no agent state; {OFF}")
    s = st.status
    alive, synced = _number(s.get("alive")), _number(s.get("synced"))
    if alive is None:
        return Check("netpol-agent", WARN, f"{st.path} holds no status: written by an older agent", "upgrade the agent")
    if f.now - alive > STALE:
        return Check(
            "netpol-agent",
            WARN,
            f"the agent last wrote {st.path} {_ago(f.now, alive)}, and writes it every minute while it runs: "
            f"it is down or stuck; {DOWN}",
            "restart it: kubectl rollout restart daemonset wincni-netpol-windows -n <deploy/'s namespace>, then read "
            "its pod's log on this node; to stop NetworkPolicy here for good, remove the state file (new pods start "
            "without rules) and then the endpoints' ACLs in NetworkPolicy's band",
        )
    error = s.get("lastError") if isinstance(s.get("lastError"), dict) else None
    failed_at = _number(error.get("time")) if error else None
    if s.get("failed") or (failed_at is not None and failed_at > (synced or 0)):
        return Check(
            "netpol-agent",
            WARN,
            f"the agent's last sync failed: {(error or {}).get('text', '?')}",
            "it reads HNS again and retries at its next sync; its log (the pod's, on this node) says more",
        )
    return Check(
        "netpol-agent",
        OK,
        f"running (last heard {_ago(f.now, alive)}); last full sync {_ago(f.now, synced)} in "
        f"{_number(s.get('seconds')) or 0:.3f}s, {len(st.endpoints)} endpoints kept, "
        f"{int(s.get('watchErrors') or 0)} API server errors since it started",
    )


def netpol_drift(f: NodeFacts) -> Check:
    """Endpoints whose NetworkPolicy ACLs differ from what the agent wants: someone else set
    them, or an HNS restart re-made the endpoint; the agent repairs it at its next resync."""
    st, found = _judged(f, "netpol-drift")
    if isinstance(found, Check):
        return found
    differ = _differ(found)
    if not differ:
        return Check("netpol-drift", OK, f"{len(found)} endpoints hold the rules the agent wants")
    return Check(
        "netpol-drift",
        WARN,
        f"{len(differ)} endpoints hold ACLs other than the NetworkPolicy agent wants: "
        + ", ".join(f"{name} ({pod})" for name, pod in differ),
        "the running agent sets them again at its next periodic resync; now: this, where "
        "the agent's service account is (kubectl exec into this node's wincni-netpol-windows pod)",
        _repair(f, st),
    )


def netpol_unprotected(f: NodeFacts) -> Check:
    """Pods a policy isolates whose endpoints hold none of the agent's rules: open to all."""
    st, found = _judged(f, "netpol-unprotected")
    if isinstance(found, Check):
        return found
    open_ = [(name, pod) for name, pod, _, count, want in found if want.get("rules") and not count]
    if not open_:
        return Check("netpol-unprotected", OK, "every pod a policy isolates holds its rules")
    return Check(
        "netpol-unprotected",
        FAIL,
        f"{len(open_)} pods a NetworkPolicy isolates have endpoints without any of its rules, open to all: "
        + ", ".join(f"{pod} ({name})" for name, pod in open_),
        "set them now, where the agent's service account is (kubectl exec into this node's wincni-netpol-windows pod)",
        _repair(f, st),
    )


def drifted(f: NodeFacts) -> list[tuple[str, str]] | None:
    """(endpoint name, pod) of each drifted endpoint; None when there is nothing to compare."""
    _, found = _judged(f, "netpol-drift")
    return None if isinstance(found, Check) else _differ(found)


def _differ(found: list) -> list[tuple[str, str]]:
    return [(name, pod) for name, pod, held, _, want in found if held != want.get("acls")]


def _judged(f: NodeFacts, id_: str) -> tuple[AgentState, list | Check]:
    """(name, pod, digest and count of the NetworkPolicy ACLs HNS holds, what the agent wants) for each
    endpoint the agent keeps; or the check's verdict when there is nothing to compare."""
    from libhns.objects import same_id
    from plugins.cni import ownership
    from plugins.winnet.aclcompare import digest, is_acl
    from plugins.winnet.acls import netpol_owned

    st = agent_state(f)
    if st.doc is None:
        if st.problem is not None:
            return st, not_checked(id_, "the agent's state")
        return st, Check(id_, OK, "nothing to compare: the agent is off (netpol-agent)")
    if f.inventory is None or f.network is None:
        return st, not_checked(id_, "the pods' HNS network and its endpoints")
    wants = st.endpoints
    found = []
    for ep in f.inventory.endpoints:
        if not same_id(ep.virtual_network, f.network.id) or not ownership.acl_target(
            ep.name or "", f.name, ep.is_remote
        ):
            continue
        want = next((wants[ip] for ip in ep.ip_addresses if isinstance(wants.get(ip), dict)), None)
        if want is not None:
            held = [p for p in ep.policies or () if isinstance(p, dict) and is_acl(p) and netpol_owned(p)]
            found.append((ep.name, str(want.get("pod", "")), digest(held), len(held), want))
    return st, found


def _repair(f: NodeFacts, st: AgentState) -> str:
    node = str((st.doc or {}).get("node") or "")
    return command(f, "wincni", "netpol", "--once", "--node-name", node, "--cni-conf", f.conf_path)


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _ago(now: float, then: float | None) -> str:
    return "never" if then is None else f"{max(0.0, now - then):.0f} s ago"
