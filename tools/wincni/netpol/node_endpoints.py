"""The agent's shell over HNS: this node's pod endpoints read through a winnet adapter
(``EndpointApi``: HCN or HNSCall, whichever the node's config uses) and their ACLs set.

It remembers what it read and what it set, so an event that changes nothing for this node, or
changes one endpoint's rules, costs no HNS read at all. HNS is read again when this node's pods
(name and address) differ from the last converge's (a pod started, went, or was re-created:
its new endpoint is found), after an apply failed, and whenever the caller asks: its periodic
resync, which alone finds what changed without an event (an HNS restart that re-made the same
pods' endpoints, an ACL someone else changed); ``plan`` then repairs it.
"""

from __future__ import annotations

import ipaddress
from dataclasses import replace

from libhns import errors as hns_errors
from plugins.cni import ownership
from plugins.winnet.aclcompare import is_acl
from tools.wincni.netpol import plan as P

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Mapping, Sequence

    from plugins.netpol.model import Access
    from plugins.winnet.hnsapi import EndpointApi


class Failure:
    __slots__ = ("endpoint", "error")

    def __init__(self, endpoint: str, error: Exception) -> None:
        self.endpoint, self.error = endpoint, error

    def __repr__(self) -> str:
        return f"Failure({self.endpoint!r}, {self.error!r})"


class NodeEndpoints:
    """The pod endpoints of network ``network`` that the ownership rule gives the agent."""

    def __init__(self, api: EndpointApi, network: str, node_addresses: Sequence[Any]) -> None:
        self.api, self.network, self.node_addresses = api, network, tuple(node_addresses)
        self.held: dict[str, P.OwnedEndpoint] = {}
        self.read = False
        self._pods: frozenset = frozenset()  # (pod, address) of the last converge
        self._in_sync: dict[str, P.EndpointStep] = {}  # by endpoint ID: the step that left it in sync

    def refresh(self) -> None:
        """Read the network's endpoints again (none while the network is missing): one listing
        (``EndpointApi.survey``) whatever their number."""
        net = self.api.network(self.network)
        found = self.api.survey(net) if net is not None else []
        self.held = {
            ep.id: _owned(ep)
            for ep in sorted(found, key=lambda e: (e.name or "", e.id))
            if ownership.acl_target(ep.name or "", self.network, ep.is_remote)
        }
        self.read = True

    def converge(self, accesses: Mapping[str, Access]) -> tuple[list[P.EndpointStep], list[Failure]]:
        """Bring every endpoint to what ``accesses`` (this node's pods by address) want: one
        ``set_acls`` per endpoint that differs, none otherwise. The steps, and the applies that
        failed (their endpoints are read again next time)."""
        pods = frozenset((a.pod.key, ip) for ip, a in accesses.items())
        if not self.read or pods != self._pods:
            self.refresh()
        self._pods = pods
        planned = P.plan(list(self.held.values()), accesses, self.node_addresses, self.api.policy_form, self._in_sync)
        steps, failures = [], []
        self._in_sync = {}
        for step in planned:
            if step.action == P.APPLY:
                try:
                    step = self._apply(step, accesses)
                except hns_errors.HnsError as err:
                    failures.append(Failure(step.held.id, err))
                    self.read = False  # gone, or changed under us: read it again next time
            if step.action == P.IN_SYNC:
                self._in_sync.setdefault(step.held.id, step)
            steps.append(step)
        return steps, failures

    def _apply(self, step: P.EndpointStep, accesses: Mapping[str, Access]) -> P.EndpointStep:
        """Set ``step``'s ACLs on the endpoint as its own API shows it: an endpoint the survey
        showed in the other API's form is read again and planned again alone first (the update
        carries its other policies as they are). The step done."""
        ep = self.api.own_view(step.held.endpoint)
        if ep is None:
            raise hns_errors.NotFound("HNS", None, None, f"endpoint {step.held.id} is gone")
        if ep is not step.held.endpoint:
            self.held[step.held.id] = _owned(ep, step.held.id)  # the survey's ID, whatever its case
            (step,) = P.plan([self.held[step.held.id]], accesses, self.node_addresses, self.api.policy_form)
            if step.action != P.APPLY:
                return step
        self.api.set_acls(ep, list(step.acls))
        self._applied(step)
        return step

    def _applied(self, step: P.EndpointStep) -> None:
        h = step.held
        policies = tuple(p for p in h.policies if not is_acl(p)) + step.acls
        h.endpoint.policies = list(policies)  # what HNS now holds, for the next clear's Remove
        self.held[h.id] = P.OwnedEndpoint(h.id, h.name, h.ips, policies, h.endpoint)
        self._in_sync[h.id] = replace(step, action=P.IN_SYNC, held=self.held[h.id])


def _owned(ep: Any, id_: str = "") -> P.OwnedEndpoint:
    ips = tuple(_text(ip) for ip in ep.ip_addresses)
    return P.OwnedEndpoint(id_ or ep.id, ep.name, ips, tuple(ep.policies or ()), ep)


def _text(ip: str) -> str:
    try:
        return str(ipaddress.ip_address(ip))
    except ValueError:
        return ip
