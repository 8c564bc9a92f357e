"""Whether a packet passes an endpoint's ACLs: the simulator's walk, pure.

It reads only the ACL policies of endpoint documents as the simulator stores them (V2
``{"Type": "ACL", "Settings": {...}}``, or a V1 policy's flat keys, with V1's older spellings) and
imports nothing of the code that writes them (``plugins.netpol``, ``plugins.winnet.acls``,
``libhns.policies``): a judge that shared the writer's code would share its mistakes
(``tests/unit/test_import_graph.py`` holds that). Each rule of the walk names its source; what
only a real node can confirm is listed in docs/DEVELOPING.md ("NetworkPolicy: what only a real
node can confirm").

A packet is taken from one endpoint's side: ``direction`` In (the endpoint receives it: local =
destination, remote = source) or Out (it sends it: local = source, remote = destination), as
Calico maps rules (policysets.go: inbound source → RemoteAddresses, outbound destination →
RemoteAddresses).
"""

from __future__ import annotations

from basics import ipaddr
from basics.jsonci import get_ci
from libhns.errors import SimulatorLimit

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Sequence

#: VFP keeps a flow this many seconds after its last packet: "Flow TTL: 240" on every rule of a
#: ``vfpctrl /list-rule`` dump of Calico-programmed endpoint ACLs (mrolmedo/rke2windows README).
FLOW_TTL = 240
#: Protocols whose ACL rules match ports (TCP 6, UDP 17): HNS's port fields are TCP/UDP ports
#: (hcsshim ACLPolicy LocalPorts/RemotePorts; Calico writes ports only for them).
_PORTED = (6, 17)
#: "Any protocol" as Calico and Azure NPM write it (policysets.go NewRule: Protocol 256).
_ANY_PROTOCOL = 256


class Decision:
    """An endpoint's verdict on a packet: ``allowed``, the deciding ``rule`` (its Settings as
    stored; None when no rule decided), and ``why`` in a few words."""

    __slots__ = ("allowed", "rule", "why")

    def __init__(self, allowed: bool, rule: dict | None, why: str) -> None:
        self.allowed, self.rule, self.why = allowed, rule, why

    def __repr__(self) -> str:
        return f"Decision({self.allowed!r}, {self.rule!r}, {self.why!r})"


def acl_rules(doc: dict) -> list[dict]:
    """The ACL rules of a stored endpoint document, each as its Settings (V2) or its flat keys
    less ``Type`` (V1), in the order the document lists them."""
    out = []
    for policy in get_ci(doc, "Policies") or ():
        if not isinstance(policy, dict) or str(get_ci(policy, "Type") or "").casefold() != "acl":
            continue
        settings = get_ci(policy, "Settings")
        out.append(
            settings if isinstance(settings, dict) else {k: v for k, v in policy.items() if k.casefold() != "type"}
        )
    return out


def decide(
    rules: Sequence[dict],
    direction: str,
    local: tuple[str, int],
    remote: tuple[str, int],
    protocol: int,
) -> Decision:
    """The endpoint's verdict on a packet seen from its side (module docstring).

    - No ACL on the endpoint: allowed. Without ACLs, containers default to inbound and outbound
      allow-all (MicrosoftDocs network-isolation-security.md).
    - Rules are grouped by ``RuleType``: ``Switch`` (VFP, the default when absent: Azure NPM sends
      none and its rules act in VFP) and ``Host`` (WFP); hcsshim hcnpolicy.go RuleType. The
      packet must pass both groups: Calico adds Host allow-all rules "Required by l2bridge
      network" beside its Switch rules (endpoint_mgr.go:427-432), so an empty Host group does
      not let traffic through once the endpoint has ACLs.
    - Within a group, lower ``Priority`` first and the first match ends the walk ("Match type:
      Priority-based match", "terminating" in the vfpctrl dump; Microsoft in hcsshim#1059 and
      Windows-Containers#616). An absent Priority is 0: hcsshim sends Priority with
      ``omitempty``, so a Go client's 0 arrives as no field.
    - Rules of equal priority that both match with different actions: HNS's tie-break is
      undocumented and differs from first-listed-wins (Calico policysets.go:153-163), so the
      walk refuses (``libhns.errors.SimulatorLimit`` naming both rules).
    - Nothing matches: denied. Once any ACL is on an endpoint HNS denies what no rule allows
      (Microsoft, Windows-Containers#616; since the April 2026 updates a lone Block blocks
      everything).
    """
    if not rules:
        return Decision(True, None, "no ACL on the endpoint")
    verdicts = []
    for rule_type in ("Switch", "Host"):
        group = [r for r in rules if _rule_type(r) == rule_type and _direction(r) == direction]
        verdicts.append(_first_match(group, local, remote, protocol, rule_type))
    denied = [d for d in verdicts if not d.allowed]
    return denied[0] if denied else verdicts[0]


def _rule_type(rule: dict) -> str:
    value = str(get_ci(rule, "RuleType") or "Switch")
    return "Host" if value.casefold() == "host" else "Switch"


def _direction(rule: dict) -> str:
    return "Out" if str(get_ci(rule, "Direction") or "").casefold() == "out" else "In"


def priority(rule: dict) -> int:
    value = get_ci(rule, "Priority")
    return value if isinstance(value, int) else 0


def _first_match(group: list[dict], local, remote, protocol: int, rule_type: str) -> Decision:
    hits = sorted((r for r in group if matches(r, local, remote, protocol)), key=priority)
    if not hits:
        return Decision(False, None, f"no {rule_type} rule matches: HNS denies what no rule allows")
    first = hits[0]
    for other in hits[1:]:
        if priority(other) != priority(first):
            break
        if _action(other) != _action(first):
            raise SimulatorLimit(
                "ACL walk",
                None,
                None,
                f"two {rule_type} rules of priority {priority(first)} match with different actions, "
                f"and HNS's tie-break is undocumented: {first} and {other}",
            )
    return Decision(_action(first) == "allow", first, f"{rule_type} rule, priority {priority(first)}")


def _action(rule: dict) -> str:
    return str(get_ci(rule, "Action") or "").casefold()


def matches(rule: dict, local: tuple[str, int], remote: tuple[str, int], protocol: int) -> bool:
    """Whether every field the rule sets holds for the packet; an absent or empty field matches
    anything (hcsshim omits empty fields; "Any" is refused, omit the field instead: Microsoft in
    hcsshim#1059). ``Protocols`` is a comma list of IANA numbers, 256 any (Calico, Azure NPM); V1
    may spell it ``Protocol`` (hcsshim internal/hns ACLPolicy). Ports match only TCP and UDP."""
    protocols = _field(rule, "Protocols", "Protocol")
    if protocols:
        numbers = {int(x) for x in protocols.split(",") if x.strip().isdigit()}
        if _ANY_PROTOCOL not in numbers and protocol not in numbers:
            return False
    for key, old, (address, port) in (("Local", "LocalPort", local), ("Remote", "RemotePort", remote)):
        addresses = _field(rule, f"{key}Addresses")
        if addresses and not _address_in(address, addresses):
            return False
        ports = _field(rule, f"{key}Ports", old)
        if ports and (protocol not in _PORTED or not _port_in(port, ports)):
            return False
    return True


def _field(rule: dict, key: str, older: str | None = None) -> str:
    value = get_ci(rule, key)
    if value in (None, "") and older is not None:
        value = get_ci(rule, older)
    return "" if value in (None, "", 0) else str(value)


def _address_in(address: str, listed: str) -> bool:
    ip = ipaddr.ip_address(address)
    for item in listed.split(","):
        item = item.strip()
        if "/" in item:
            net = ipaddr.ip_network(item, strict=False)
            if net.version == ip.version and ip in net:
                return True
        elif item and ipaddr.ip_address(item) == ip:
            return True
    return False


def _port_in(port: int, listed: str) -> bool:
    for item in listed.split(","):
        low, _, high = item.strip().partition("-")
        if low.isdigit() and int(low) <= port <= int(high or low):
            return True
    return False


# ---------------------------------------------------------------- stateful flows


def flow_key(protocol: int, src: tuple[str, int], dst: tuple[str, int]) -> list:
    return [protocol, src[0], src[1], dst[0], dst[1]]


def live_flow(flows: Sequence[dict], endpoint: str, key: list, now: float) -> dict | None:
    """The endpoint's live flow this packet belongs to, either way, or None. VFP ACL rules are
    "terminating stateful" (the vfpctrl dump): once a rule allows a flow, its later packets and
    its replies pass without the rules being asked again, until the flow idles ``FLOW_TTL``
    seconds."""
    reverse = [key[0], key[3], key[4], key[1], key[2]]
    for flow in flows:
        if flow["endpoint"] == endpoint and flow["expires"] > now and flow["key"] in (key, reverse):
            return flow
    return None


def remember(flows: list[dict], endpoint: str, key: list, rule: Any, now: float) -> list[dict]:
    """``flows`` with this packet's flow on the endpoint (new, or its idle timer restarted),
    expired flows dropped."""
    reverse = [key[0], key[3], key[4], key[1], key[2]]
    kept = [f for f in flows if f["expires"] > now and not (f["endpoint"] == endpoint and f["key"] in (key, reverse))]
    old = live_flow(flows, endpoint, key, now)
    entry = old or {"endpoint": endpoint, "key": key, "rule": rule}
    return [*kept, {**entry, "expires": now + FLOW_TTL}]


# ---------------------------------------------------------------- a packet through the node


class Step:
    """One endpoint's part in a packet's way: its ID, the direction it saw, its decision."""

    __slots__ = ("endpoint", "direction", "decision")

    def __init__(self, endpoint: str, direction: str, decision: Decision) -> None:
        self.endpoint, self.direction, self.decision = endpoint, direction, decision


def walk(
    endpoints: Sequence[tuple[str, Sequence[str], dict]],
    flows: list[dict],
    src: tuple[str, int],
    dst: tuple[str, int],
    protocol: int,
    now: float,
) -> tuple[list[Step], list[dict]]:
    """A packet from ``src`` to ``dst`` through this node's endpoints (``(ID, addresses,
    document)`` of each local one): the source's Out rules when it is one of them, then the
    destination's In rules when it is (the issue's model: each side's VFP port decides for its
    own endpoint; an address of another node has no rules here). Stops at the first denial.
    The steps taken, and the flows with what the packet left in them."""
    key = flow_key(protocol, src, dst)
    steps = []
    for address, direction, local, remote in ((src[0], "Out", src, dst), (dst[0], "In", dst, src)):
        found = next(((i, d) for i, ips, d in endpoints if address in ips), None)
        if found is None:
            continue
        endpoint, doc = found
        flow = live_flow(flows, endpoint, key, now)
        if flow is not None:
            decision = Decision(True, flow["rule"], "a packet of a flow a rule allowed (stateful)")
        else:
            decision = decide(acl_rules(doc), direction, local, remote, protocol)
        if decision.allowed and decision.rule is not None:
            flows = remember(flows, endpoint, key, decision.rule, now)
        steps.append(Step(endpoint, direction, decision))
        if not decision.allowed:
            break
    return steps, flows


def verdict(steps: Sequence[Step]) -> tuple[bool, dict | None]:
    """(allowed, the deciding rule's Settings): the rule that denied, else the last rule that
    allowed (the destination's before the source's); None when no ACL applied."""
    allowed = all(s.decision.allowed for s in steps)
    ruled = [s.decision.rule for s in steps if s.decision.rule is not None]
    if not allowed:
        return False, steps[-1].decision.rule
    return True, ruled[-1] if ruled else None
