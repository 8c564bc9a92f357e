"""Endpoint policies: user policies fitted to the chosen API, and the automatic ones.

The automatic helpers follow the Go reference's dedupe rules exactly (a policy already carrying
the value makes them a no-op; otherwise a *separate* policy is appended, never merged), so the
documents HNS receives match what operators' existing configs produce with the Go plugins.
Everything here is pure: lists of policy dicts in, lists out.
"""
from __future__ import annotations

TYPE_CHECKING = False  # typing costs more to import than a plugin's VERSION command
if TYPE_CHECKING:
    from typing import Any, Iterable, Sequence

from basics import jsontext
from libhns import policies as hp
from plugins.cni.errors import CniError, INVALID_CONFIG

# Types whose V1 and V2 shapes we know how to translate into each other.
_TRANSLATABLE = {"outboundnat", "route", "sdnroute", "pa", "provideraddress", "nat", "portmapping", "acl"}


def fit_user_policies(values: Sequence[Any], sources: Sequence[str], schema: str) -> list[dict]:
    """Translate each user policy into ``schema`` ('v1'/'v2'), or reject it naming where it came from.

    The reference passes V1-shaped values to HCN (HNS answers 0x803B000D); we never send a
    policy HNS would refuse for its shape.
    """
    out = []
    for value, source in zip(values, sources):
        if not isinstance(value, dict) or not isinstance(hp.policy_type(value), str):
            raise CniError(INVALID_CONFIG, f"{source}: {jsontext.dumps(value)[:120]} is not an HNS policy",
                           'an endpoint policy value is an object with a "Type", e.g. {"Type": "OutBoundNAT", ...}')
        ptype = hp.policy_type(value)
        shape = hp.schema_of(value)
        if shape is None or shape == schema:
            fitted = dict(value)
        elif ptype.lower() in _TRANSLATABLE:
            fitted = hp.to_v2(value) if schema == "v2" else hp.to_v1(value)
        else:
            api = "apiVersion 2 (HCN)" if schema == "v2" else "apiVersion 1 (HNS V1)"
            raise CniError(INVALID_CONFIG, f"{source}: policy type {ptype!r} is written for the other HNS API and has no {api} equivalent",
                           f"rewrite it in the {schema.upper()} schema or set apiVersion to match it")
        if schema == "v2" and hp.canonical_type(hp.policy_type(fitted), hp.KNOWN_V2_ENDPOINT_TYPES) is None:
            raise CniError(INVALID_CONFIG, f"{source}: unknown HCN endpoint policy type {ptype!r}",
                           "known types: " + ", ".join(sorted(hp.KNOWN_V2_ENDPOINT_TYPES)))
        out.append(fitted)
    return out


def of_type(policies: Iterable[dict], *types: str) -> list[dict]:
    # Exact (case-sensitive) type match, like the reference's jsonparser lookups.
    return [p for p in policies if p.get("Type") in types]


def _field(policy: dict, schema: str, key: str) -> Any:
    if schema == "v2":
        settings = policy.get("Settings")
        return settings.get(key) if isinstance(settings, dict) else None
    return policy.get(key)


def add_outbound_nat_exception(policies: list[dict], cidr: str, schema: str) -> list[dict]:
    """Don't SNAT traffic to ``cidr`` (cluster CIDR or node pod subnet)."""
    if not cidr:
        return policies
    key = "Exceptions" if schema == "v2" else "ExceptionList"
    for p in of_type(policies, "OutBoundNAT"):
        if cidr in (_field(p, schema, key) or []):
            return policies
    return policies + [hp.outbound_nat(exceptions=[cidr], schema=schema)]


def add_loopback_dsr(policies: list[dict], ip: str, schema: str) -> list[dict]:
    """Let a pod reach itself through a service VIP (caller checks HNS supports DSR)."""
    if not ip:
        return policies
    for p in of_type(policies, "OutBoundNAT"):
        if ip in (_field(p, schema, "Destinations") or []):
            return policies
    return policies + [hp.outbound_nat(destinations=[ip], schema=schema)]


def add_provider_address(policies: list[dict], address: str, schema: str) -> list[dict]:
    """Overlay endpoints encapsulate with the host's provider (management) address."""
    if not address:
        return policies
    for p in of_type(policies, "PA", "ProviderAddress"):
        if address in (_field(p, schema, "PA") if schema == "v1" else _field(p, schema, "ProviderAddress"),):
            return policies
    return policies + [hp.provider_address(address, schema=schema)]


def add_port_mappings(policies: list[dict], mappings: Sequence[Any], schema: str) -> list[dict]:
    """One NAT (V1) / PortMapping (V2) per runtimeConfig.portMappings entry; a bad protocol is code 7."""
    out = list(policies)
    for i, pm in enumerate(mappings):
        try:
            hp.protocol_number(pm.protocol)
        except ValueError:
            raise CniError(INVALID_CONFIG,
                           f"runtimeConfig.portMappings[{i}].protocol: {pm.protocol!r} is not a valid protocol",
                           "use tcp, udp, icmpv4, icmpv6, igmp or an IANA protocol number") from None
        for port, label in ((pm.host_port, "hostPort"), (pm.container_port, "containerPort")):
            if not 0 < port < 65536:
                raise CniError(INVALID_CONFIG, f"runtimeConfig.portMappings[{i}].{label}: {port} is out of range",
                               "ports are 1-65535")
        if schema == "v2":
            out.append(hp.port_mapping(pm.container_port, pm.host_port, pm.protocol, vip=pm.host_ip, schema="v2"))
        else:
            out.append(hp.port_mapping(pm.container_port, pm.host_port, pm.protocol, schema="v1"))
    return out


def missing_policies(wanted: Sequence[dict], present: Sequence[dict]) -> list[dict]:
    """Wanted policies with no equal policy on the endpoint (HNS may add keys: compare as subsets)."""
    return [w for w in wanted if not any(_contains(p, w) for p in present)]


def _contains(have: Any, want: Any) -> bool:
    if isinstance(want, dict):
        if not isinstance(have, dict):
            return False
        low = {str(k).lower(): v for k, v in have.items()}
        return all(str(k).lower() in low and (_same_protocol(low["protocol"], v) if str(k).lower() == "protocol"
                                              else _contains(low[str(k).lower()], v)) for k, v in want.items())
    if isinstance(want, list):
        return isinstance(have, list) and len(have) == len(want) and all(_contains(h, w) for h, w in zip(have, want))
    if isinstance(want, str) and isinstance(have, str):
        return want.lower() == have.lower()
    return have == want


def _same_protocol(have: Any, want: Any) -> bool:
    """HNS stores a V1 NAT protocol given as "6" as "TCP": compare protocols by number."""
    try:
        return hp.protocol_number(have) == hp.protocol_number(want)
    except ValueError:
        return _contains(have, want)
