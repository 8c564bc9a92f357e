"""An endpoint's wanted ACL list. Pure.

An update replaces every ACL policy of an endpoint, so the agent sends the whole list each time:
the endpoint's own ACLs (the config's ``acls`` and the port-mapping ACLs ADD put there) as HNS
holds them, then the NetworkPolicy rules. Which ACLs are the agent's is told by priority alone
(``plugins.winnet.acls.netpol_owned``): NetworkPolicy's band and the endpoint default are never
a config's, as ``acls.parse`` refuses them there. Whether HNS already holds it is
``plugins.winnet.aclcompare.same``.
"""

from __future__ import annotations

from plugins.netpol import translate
from plugins.winnet.aclcompare import is_acl
from plugins.winnet.acls import netpol_owned

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Sequence

    from plugins.netpol.model import Access


def isolates(access: Access) -> bool:
    return access.ingress.isolated or access.egress.isolated


def wanted(held: Sequence[dict], access: Access, node_addresses: Sequence[Any], form: Any) -> list[dict]:
    """The whole ACL list an endpoint holding ``held`` (its policies, any type) must get for
    ``access``: its own ACLs kept, then the policy's rules in ``form``. A pod no policy isolates
    gets no rule of the agent's: it stays as its ADD made it."""
    own = [p for p in held if is_acl(p) and not netpol_owned(p)]
    rules = translate.endpoint_acls(access, node_addresses, form) if isolates(access) else []
    return own + rules
