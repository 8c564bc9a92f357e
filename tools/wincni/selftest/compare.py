"""Two transcripts of one scenario compared call by call, field by field (pure).

Before comparing, what differs on every node by nature is made alike: each GUID (an object's ID,
in documents and in HNSCall paths) becomes ``<id-N>`` by the order it first appears, and the
node's management address becomes ``<management-ip>``. Fields whose value is the node's own
(MAC addresses HNS assigns, health and time stamps, compartment numbers) are compared for
presence only (``NODE_OWN``). Everything else must be equal, casing of keys included.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

_GUID = re.compile(r"\{?[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}\}?")
#: Keys whose values are the node's own: compared for presence, their values shown side by side.
NODE_OWN = frozenset(
    {
        "MacAddress",
        "DrMacAddress",
        "Address",
        "ActivityId",
        "Health",
        "Resources",
        "CreateProcessingStartTime",
        "LastUpdateTime",
        "Version",
        "NamespaceId",
        "CompartmentId",
        "error",
    }
)
#: Keys of a call that say which call it is: two transcripts part ways where these differ.
_IDENTITY = ("api", "op", "method")
_MISSING = "(absent)"


@dataclass(frozen=True)
class Difference:
    """One field that differs: the call (its number from 1, its export, its HNSCall path), the
    field's path in the call's entry, and both values (``(absent)`` when one has none)."""

    call: int
    op: str
    field: str
    simulator: Any
    backend: Any


def normalized(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The calls with GUIDs numbered by first appearance and the management address named."""
    ids: dict[str, str] = {}
    management = _management_addresses(calls)

    def text(value: str) -> str:
        if value in management:
            return "<management-ip>"

        def number(m: re.Match) -> str:
            key = m.group(0).strip("{}").upper()
            return ids.setdefault(key, f"<id-{len(ids) + 1}>")

        return _GUID.sub(number, value)

    def walk(value: Any) -> Any:
        if isinstance(value, str):
            return text(value)
        if isinstance(value, list):
            return [walk(v) for v in value]
        if isinstance(value, dict):
            return {k: walk(v) for k, v in value.items()}
        return value

    return [walk(call) for call in calls]


def _management_addresses(calls: list[dict[str, Any]]) -> set[str]:
    """The node's management address as HNS gave it to a network: V1's ``ManagementIP``, V2's
    ``ProviderAddress`` network policy (HNS sets it from the adapter)."""
    found = {str(v) for v in _values(calls, "ManagementIP") if v}
    for call in calls:
        response = call.get("response")
        if "Network" in str(call.get("op")) and isinstance(response, dict):
            for policy in response.get("Policies") or ():
                if isinstance(policy, dict) and policy.get("Type") == "ProviderAddress":
                    found.add(str((policy.get("Settings") or {}).get("ProviderAddress")))
    return found


def _values(value: Any, key: str) -> list[Any]:
    if isinstance(value, list):
        return [v for item in value for v in _values(item, key)]
    if isinstance(value, dict):
        return [v for k, item in value.items() for v in ([item] if k == key else []) + _values(item, key)]
    return []


def _leaves(value: Any, path: str, out: dict[str, Any]) -> None:
    if isinstance(value, dict) and value:
        for k, v in value.items():
            if k in NODE_OWN:
                out[f"{path}.{k}"] = ("present", v)
            else:
                _leaves(v, f"{path}.{k}", out)
    elif isinstance(value, list) and value:
        for i, v in enumerate(value):
            _leaves(v, f"{path}[{i}]", out)
    else:
        out[path] = value


def differences(simulator: list[dict[str, Any]], backend: list[dict[str, Any]]) -> list[Difference]:
    """Every field that differs between the simulator's calls and the backend's; where the two
    stop making the same calls, one difference says so and the rest is not compared."""
    sim, back = normalized(simulator), normalized(backend)
    out: list[Difference] = []
    for n, (a, b) in enumerate(zip(sim, back), 1):
        if [a.get(k) for k in _IDENTITY] != [b.get(k) for k in _IDENTITY] or a.get("path") != b.get("path"):
            out.append(Difference(n, str(b.get("op")), "(the calls part ways here)", _call_name(a), _call_name(b)))
            return out
        left, right = {}, {}
        _leaves(a, "", left)
        _leaves(b, "", right)
        for field in sorted(set(left) | set(right)):
            x, y = left.get(field, _MISSING), right.get(field, _MISSING)
            same = (x[0] == y[0] == "present") if isinstance(x, tuple) and isinstance(y, tuple) else x == y
            if not same:
                out.append(Difference(n, _call_name(b), field.lstrip("."), _shown(x), _shown(y)))
    if len(sim) != len(back):
        n = min(len(sim), len(back)) + 1
        extra = sim[n - 1] if len(sim) > len(back) else back[n - 1]
        out.append(Difference(n, _call_name(extra), "(one made more calls)", f"{len(sim)} calls", f"{len(back)} calls"))
    return out


def _shown(value: Any) -> Any:
    return value[1] if isinstance(value, tuple) else value


def _call_name(call: dict[str, Any]) -> str:
    op = str(call.get("op"))
    return f"{op} {call.get('method')} {call.get('path')}" if call.get("path") else op
