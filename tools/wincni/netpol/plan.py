"""What HNS holds on this node's pod endpoints + what the policies want -> one named action per
endpoint. Pure: the shell (``node_endpoints``) reads the endpoints and runs the actions.

- ``apply``: the endpoint's ACLs differ from the wanted list; send the whole list;
- ``in-sync``: they are equal: no call (each re-apply can reset live TCP connections);
- ``no-pod``: no pod of this node holds its address yet (an ADD the API server has not seen,
  or a pod already gone): left as ADD made it.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from plugins.winnet import aclcompare as AC
from tools.wincni.netpol import wanted as W

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Iterable, Mapping, Sequence

    from plugins.netpol.model import Access

APPLY, IN_SYNC, NO_POD = "apply", "in-sync", "no-pod"


@dataclass(frozen=True)
class OwnedEndpoint:
    """One endpoint the ownership rule gives the agent, as HNS showed it: ``policies`` all of
    its policies in the adapter's form, ``endpoint`` the adapter's object (to set it)."""

    id: str
    name: str
    ips: tuple[str, ...]
    policies: tuple[dict, ...]
    endpoint: Any = None

    @property
    def acls(self) -> list[dict]:
        return [p for p in self.policies if AC.is_acl(p)]


@dataclass(frozen=True)
class EndpointStep:
    action: str
    held: OwnedEndpoint
    pod: str = ""
    acls: tuple[dict, ...] = ()
    access: Any = None  # what the wanted list was made for

    @cached_property
    def owned(self) -> tuple[int, str]:
        """How many of the wanted rules are the agent's, and their ``aclcompare.digest``."""
        from plugins.winnet.acls import netpol_owned

        rules = [a for a in self.acls if netpol_owned(a)]
        return len(rules), AC.digest(rules)


def plan(
    held: Iterable[OwnedEndpoint],
    accesses: Mapping[str, Access],
    node_addresses: Sequence[Any],
    form: Any,
    last: Mapping[str, EndpointStep] | None = None,
) -> list[EndpointStep]:
    """One step per endpoint, in endpoint order; ``accesses`` by pod address (text). ``last``:
    by endpoint ID, the step that left an endpoint in sync: while it holds what it held then
    (the same object) and its pod's access is the same, it is in sync still, nothing compared."""
    steps = []
    for h in held:
        access = next((accesses[ip] for ip in h.ips if ip in accesses), None)
        if access is None:
            steps.append(EndpointStep(NO_POD, h))
            continue
        before = (last or {}).get(h.id)
        if before is not None and before.held is h and before.access == access:
            steps.append(before)
            continue
        want = W.wanted(h.policies, access, node_addresses, form)
        action = IN_SYNC if AC.same(h.acls, want) else APPLY
        steps.append(EndpointStep(action, h, access.pod.key, tuple(want), access))
    return steps


def by_address(accesses: Iterable[Access]) -> dict[str, Access]:
    return {str(a.pod.ip): a for a in accesses if a.pod.ip is not None}
