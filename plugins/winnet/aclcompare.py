"""Whether two ACL lists hold the same rules, whatever HNS's spelling. Pure.

Two lists are the same when they hold the same rules: either API's form, key case, ``Protocols``
as text or number, list order inside a field, rule order (no two rules of one priority overlap
with different actions, so HNS's walk does not depend on it). The node agent compares with it
before it applies; the doctor compares what HNS holds with the digest the agent recorded of
what it wants (``digest``), so both judge drift by the one rule.
"""

from __future__ import annotations

from collections import Counter

from basics.jsonci import get_ci
from libhns import policies as hp

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Iterable

_FIELDS = ("Action", "Direction", "RuleType")
_LISTS = ("LocalAddresses", "RemoteAddresses", "LocalPorts", "RemotePorts")


def is_acl(policy: dict) -> bool:
    return hp.policy_type(policy) == "ACL"


def priority(acl: dict) -> int | None:
    value = get_ci(hp.to_v2(acl).get("Settings") or {}, "Priority")
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def canonical(acl: dict) -> tuple:
    """One rule as a comparable value, whichever API's document HNS showed."""
    s = hp.to_v2(acl).get("Settings") or {}
    words = tuple(str(get_ci(s, k) or "").casefold() for k in _FIELDS)
    protocols = str(get_ci(s, "Protocols") or get_ci(s, "Protocol") or "").strip()
    lists = tuple(tuple(sorted(x.strip() for x in str(get_ci(s, k) or "").split(",") if x.strip())) for k in _LISTS)
    return (priority(acl) or 0, *words, protocols, *lists)


def same(held: Iterable[dict], wanted: Iterable[dict]) -> bool:
    """Whether two ACL lists hold the same rules (a duplicate counts: HNS would hold it twice)."""
    return Counter(map(canonical, held)) == Counter(map(canonical, wanted))


def digest(acls: Iterable[dict]) -> str:
    """A short text equal for two lists exactly when ``same`` says they are: what the agent
    records of an endpoint's wanted rules, so the state stays small."""
    import hashlib

    rules = sorted(repr(c) for c in map(canonical, acls))
    return hashlib.sha256("\n".join(rules).encode()).hexdigest()[:32]
