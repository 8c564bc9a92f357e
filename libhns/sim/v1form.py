"""What the V1 (HNSCall) schema spells differently from V2, for the kinds that show both: DNS lists as
comma strings, the gateway as a default route, settings of a policy as flat keys.

The store keeps V2 documents only, so an endpoint created through ``POST /endpoints/`` is the same
object ``HcnEnumerateEndpoints`` finds; each kind derives its V1 answer with these.
"""
from __future__ import annotations

from basics import ipaddr

from libhns import policies as P

TYPE_CHECKING = False  # the simulator is imported by every simulated pod command: no typing
if TYPE_CHECKING:
    from typing import Any, Callable

_DEFAULT_ROUTES = ("0.0.0.0/0", "::/0")


def split(text: Any) -> list[str]:
    """A V1 comma string (or a list) as a V2 list."""
    if isinstance(text, list):
        return [str(t) for t in text]
    return [t.strip() for t in str(text or "").split(",") if t.strip()]


def gateway(routes: Any, version: int) -> str | None:
    """The next hop of the default route of ``version`` among V2 ``Routes``."""
    for r in routes or ():
        if isinstance(r, dict) and P.get_ci(r, "DestinationPrefix") in _DEFAULT_ROUTES:
            hop = P.get_ci(r, "NextHop")
            try:
                if hop and ipaddr.ip_address(hop).version == version:
                    return hop
            except ValueError:
                continue
    return None


def dns_to_v1(dns: Any) -> dict[str, str]:
    """V2 ``Dns`` lists as V1's comma strings (``DNSServerList``, ``DNSSuffix``)."""
    dns = dns or {}
    out = {}
    if P.get_ci(dns, "ServerList"):
        out["DNSServerList"] = ",".join(P.get_ci(dns, "ServerList"))
    if P.get_ci(dns, "Search"):
        out["DNSSuffix"] = ",".join(P.get_ci(dns, "Search"))
    return out


def dns_from_v1(g: Callable[[str], Any]) -> dict[str, Any]:
    """V1's ``DNSServerList`` / ``DNSSuffix`` (read through ``g``) as a V2 ``Dns``."""
    dns: dict[str, Any] = {}
    if g("DNSServerList"):
        dns["ServerList"] = split(g("DNSServerList"))
    if g("DNSSuffix"):
        dns["Search"] = split(g("DNSSuffix"))
    return dns


def policy_setting(policies: Any, type_: str, key: str) -> Any:
    """Setting ``key`` of the first policy of ``type_`` (V2 Settings or V1 flat keys)."""
    for p in policies or ():
        if (P.policy_type(p) or "").casefold() == type_.casefold():
            settings = P.get_ci(p, "Settings")
            return P.get_ci(settings, key) if isinstance(settings, dict) else P.get_ci(p, key)
    return None

