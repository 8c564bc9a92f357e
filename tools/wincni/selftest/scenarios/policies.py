"""The scenarios of policies: every ACL shape ``acls.py`` emits (HCN and HNSCall), and what HNS
may refuse (asked and recorded, never assumed)."""

from __future__ import annotations

from ..session import SCHEMA, Session
from .common import ACL_RULES, L2_GATEWAY, L2_PREFIX, v1_endpoint, v2_endpoint, v2_network


def _acl_policies(form) -> list:
    from plugins.winnet import acls

    return [rule.render(form) for rule in acls.parse(list(ACL_RULES))]


def acl_v2(s: Session) -> None:
    from plugins.winnet.policies import V2

    net = v2_network(s, "acl", "L2Bridge", L2_PREFIX, L2_GATEWAY)
    ep = v2_endpoint(s, net, "acl-v2", "198.18.10.20", L2_GATEWAY, _acl_policies(V2))
    kept = [p for p in s.query("Endpoint", ep["ID"]).get("Policies") or () if p.get("Type") == "ACL"]
    s.check("every ACL rule is on the endpoint", len(kept) == len(ACL_RULES))
    extra = {"ResourceType": "Policy", "RequestType": "Add", "Settings": {"Policies": [_acl_policies(V2)[0]]}}
    s.attempt(lambda: s.modify("Endpoint", ep["ID"], extra))  # a rule that is already there: recorded
    s.delete("Endpoint", ep["ID"])
    s.delete("Network", net["ID"])


def acl_v1(s: Session) -> None:
    from plugins.winnet.policies import V1

    net = v2_network(s, "acl-v1", "L2Bridge", L2_PREFIX, L2_GATEWAY)
    body = {
        "Name": s.name("acl-v1"),
        "VirtualNetwork": net["ID"],
        "IPAddress": "198.18.10.21",
        "Policies": _acl_policies(V1),
    }
    v1_endpoint(s, "the endpoint with every ACL rule", body)
    s.delete("Network", net["ID"])


def refusals(s: Session) -> None:
    """What HNS may refuse: each asked, its answer recorded (the report compares it)."""
    net = v2_network(s, "refusals", "L2Bridge", L2_PREFIX, L2_GATEWAY)

    def endpoint(suffix: str, ip: str, policies: list) -> None:
        v2_endpoint(s, net, suffix, ip, L2_GATEWAY, policies)

    acl = {"Action": "Allow", "Direction": "In", "Protocols": "6", "Priority": 200, "RuleType": "Switch"}
    s.attempt(
        lambda: endpoint(
            "acl-lowercase",
            "198.18.10.30",
            [{"Type": "ACL", "Settings": {**acl, "Action": "allow", "Direction": "in"}}],
        )
    )
    s.attempt(
        lambda: endpoint("acl-any", "198.18.10.31", [{"Type": "ACL", "Settings": {**acl, "RemoteAddresses": "Any"}}])
    )
    s.attempt(lambda: endpoint("outside", "198.18.99.5", []))
    s.attempt(lambda: s.create("Network", {"Name": net["Name"], "Type": "L2Bridge", "SchemaVersion": SCHEMA}))
    for _, kind, id in [o for o in reversed(s.owned) if o[1] == "Endpoint"]:
        s.delete(kind, id)
    s.delete("Network", net["ID"])
