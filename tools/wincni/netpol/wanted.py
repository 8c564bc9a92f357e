"""An endpoint's wanted ACL list, and whether what HNS holds already is it. Pure.

An update replaces every ACL policy of an endpoint, so the agent sends the whole list each time:
the endpoint's own ACLs (the config's ``acls`` and the port-mapping ACLs ADD put there) as HNS
holds them, then the NetworkPolicy rules. Which ACLs are the agent's is told by priority alone
(``plugins.winnet.acls.netpol_owned``): NetworkPolicy's band and the endpoint default are never
a config's, as ``acls.parse`` refuses them there.

Two ACL lists are the same when they hold the same rules, whatever HNS's spelling (either API's
form, key case, ``Protocols`` as text or number, list order inside a field, rule order: no two
rules of one priority overlap with different actions, so HNS's walk does not depend on it).
"""

from __future__ import annotations

from collections import Counter

from basics.jsonci import get_ci
from libhns import policies as hp
from plugins.netpol import translate
from plugins.winnet.acls import netpol_owned

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Iterable, Sequence

    from plugins.netpol.model import Access

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


def isolates(access: Access) -> bool:
    return access.ingress.isolated or access.egress.isolated


def wanted(held: Sequence[dict], access: Access, node_addresses: Sequence[Any], form: Any) -> list[dict]:
    """The whole ACL list an endpoint holding ``held`` (its policies, any type) must get for
    ``access``: its own ACLs kept, then the policy's rules in ``form``. A pod no policy isolates
    gets no rule of the agent's: it stays as its ADD made it."""
    own = [p for p in held if is_acl(p) and not netpol_owned(p)]
    rules = translate.endpoint_acls(access, node_addresses, form) if isolates(access) else []
    return own + rules
