"""The node's host adapters (``LIBHNS_SIM_ADAPTERS``): which address a network bound to one gets.

HNS gives a network on a host adapter that adapter's address as its management IP (V1
``ManagementIP``, V2 ``ProviderAddress``), and programs then look for a host interface holding it
(flanneld waits for one). So the simulator answers with the address the node's adapter really
has, which a test sets to one its Windows programs can find. ``NAME=ADDRESS`` pairs, comma
separated; the first is the node's default adapter (a request naming none is bound to it), and a
request naming an adapter the node lacks fails as HNS fails it. Unset: one adapter whose address
is ``DEFAULT_MANAGEMENT_IP`` and which any name matches (what every test before it assumed).
"""

from __future__ import annotations

from basics import ipaddr
from libhns import errors
from libhns.sim.validate import Reject

DEFAULT_MANAGEMENT_IP = "10.127.130.36"
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Tuple

    Adapters = Tuple[Tuple[str, str], ...]


def parse_adapters(text: str) -> Adapters:
    """'Ethernet=192.0.2.2,v1=198.51.100.1' -> (('Ethernet', '192.0.2.2'), ('v1', '198.51.100.1'))."""
    out = []
    for entry in filter(None, (e.strip() for e in (text or "").split(","))):
        name, eq, address = entry.rpartition("=")
        try:
            ok = bool(eq and name.strip()) and ipaddr.ip_address(address.strip()).version == 4
        except ValueError:
            ok = False
        if not ok:
            raise errors.EnvError(
                f"LIBHNS_SIM_ADAPTERS: expected NAME=IPv4ADDRESS[,NAME=IPv4ADDRESS...], got {entry!r}"
            )
        out.append((name.strip(), address.strip()))
    return tuple(out)


def adapter_address(adapters: Adapters, name: str | None) -> str:
    """The address of the adapter ``name`` (None or empty: the default adapter); Reject when the
    node has adapters and none of that name."""
    if not adapters:
        return DEFAULT_MANAGEMENT_IP
    if not name:
        return adapters[0][1]
    for known, address in adapters:
        if known.casefold() == name.casefold():
            return address
    raise Reject(errors.HCN_E_ADAPTER_NOT_FOUND, f"The node has no network adapter named {name!r}.")
