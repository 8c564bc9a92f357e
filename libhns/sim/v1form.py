"""What the V1 (HNSCall) schema spells differently from V2 for DNS, in the kinds that show both:
comma strings (``libhns.objects.v1_list`` / ``v1_text``). The gateway as a default route is
``libhns.objects.default_gateway``, a policy's flat settings ``libhns.policies.setting``.

The store keeps V2 documents only, so an endpoint created through ``POST /endpoints/`` is the same
object ``HcnEnumerateEndpoints`` finds; each kind derives its V1 answer with these.
"""

from __future__ import annotations

from libhns import policies as P
from libhns.objects import v1_list, v1_text

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable


def dns_to_v1(dns: Any) -> dict[str, str]:
    """V2 ``Dns`` lists as V1's comma strings (``DNSServerList``, ``DNSSuffix``)."""
    dns = dns or {}
    out = {}
    if P.get_ci(dns, "ServerList"):
        out["DNSServerList"] = v1_text(P.get_ci(dns, "ServerList"))
    if P.get_ci(dns, "Search"):
        out["DNSSuffix"] = v1_text(P.get_ci(dns, "Search"))
    return out


def dns_from_v1(g: Callable[[str], Any]) -> dict[str, Any]:
    """V1's ``DNSServerList`` / ``DNSSuffix`` (read through ``g``) as a V2 ``Dns``."""
    dns: dict[str, Any] = {}
    if g("DNSServerList"):
        dns["ServerList"] = v1_list(g("DNSServerList"))
    if g("DNSSuffix"):
        dns["Search"] = v1_list(g("DNSSuffix"))
    return dns
