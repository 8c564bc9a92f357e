"""Endpoint policies, one home per type: the CNI config keys each reads, what it adds to an
endpoint (through libhns's ``Kind``, which holds its V1 and V2 documents and their translation),
and what the doctor reads of it; and the one list of them an endpoint gets: what the config and
the runtime request (``requested``, checked before IPAM), ``completed`` once the network and the
addresses are known (``endpoint_policies`` does both), which the lifecycle sends and the doctor checks.

A new policy type: its ``Kind`` in ``libhns/policies.py``, a class here (``CONFIG`` names the
config keys it reads; ``tests/unit/test_winnet_policies.py`` holds them to the schemas), and its
line in ``requested`` (from the config) or ``completed`` (from the network or the addresses). The automatic additions follow the Go reference's dedupe rules
exactly (a policy already carrying the value makes them a no-op; otherwise a *separate* policy is
appended, never merged), so the documents HNS receives match what operators' existing configs
produce with the Go plugins. Everything here is pure: lists of policy dicts in, lists out, in the
``form`` (``V1`` / ``V2`` below) the caller's adapter takes.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, Iterable, Sequence

from basics import jsontext
from basics.jsonci import get_ci
from libhns import policies as hp
from plugins.cni.errors import INVALID_CONFIG, CniError
from plugins.cni.record import Record

from .config import DnsSettings


class _Form:
    """What one HNS API's endpoints take: which document of each policy type, and of the DNS
    settings. The lifecycle gets its form from the adapter (``EndpointApi.policy_form``) and never
    asks which it holds."""

    __slots__ = ()
    shape = ""  # what ``libhns.policies.schema_of`` says of a policy of this form

    def holds(self, policy: dict) -> bool:
        """Whether ``policy`` is already in this form (or in none: ``{"Type": "OutBoundNAT"}``)."""
        return hp.schema_of(policy) in (None, self.shape)


class V2Form(_Form):
    """HCN: policies with their keys in ``Settings`` (each type's ``v2`` document), every
    address, the whole DNS."""

    __slots__ = ()
    shape, name, api = "v2", "V2", "apiVersion 2 (HCN)"

    def policy(self, kind: hp.Kind, *args: Any, **settings: Any) -> dict:
        return kind.v2(*args, **settings)

    def fit(self, policy: dict) -> dict:
        """``policy`` (of either API) in this form."""
        return hp.to_v2(policy)

    def setting(self, policy: dict, kind: hp.Kind, key: str) -> Any:
        """Setting ``key`` (its V2 name) of a policy of this form, read exactly (as the reference does)."""
        settings = policy.get("Settings")
        return settings.get(key) if isinstance(settings, dict) else None

    def unknown(self, policy: dict) -> bool:
        """A type HCN has no endpoint policy of (it answers 0x803B000E)."""
        return hp.canonical_type(hp.policy_type(policy), hp.KNOWN_V2_ENDPOINT_TYPES) is None

    def applied_dns(self, dns: DnsSettings) -> DnsSettings:
        """What an endpoint of this form holds of ``dns``: all of it."""
        return dns


class V1Form(_Form):
    """HNSCall: flat policies (each type's ``v1`` document), one IPv4 address, DNS as a server
    list and a suffix list."""

    __slots__ = ()
    shape, name, api = "v1", "V1", "apiVersion 1 (HNS V1)"

    def policy(self, kind: hp.Kind, *args: Any, **settings: Any) -> dict:
        return kind.v1(*args, **settings)

    def fit(self, policy: dict) -> dict:
        return hp.to_v1(policy)

    def setting(self, policy: dict, kind: hp.Kind, key: str) -> Any:
        return policy.get(kind.v1_key(key))

    def unknown(self, policy: dict) -> bool:
        return False  # HNSCall has no closed list to check against

    def applied_dns(self, dns: DnsSettings) -> DnsSettings:
        """So a result never claims more than HNS applied: servers and suffixes only."""
        return DnsSettings(nameservers=dns.nameservers, search=dns.search)


V1, V2 = V1Form(), V2Form()


class UserPolicies:
    """Config ``policies`` (``{"Name": "EndpointPolicy", "Value": {...}}``): passed to HNS as
    written when in the endpoint's form, translated when their type is one libhns translates,
    refused (code 7 naming the entry) otherwise. The reference passes V1-shaped values to HCN (HNS
    answers 0x803B000D); we never send a policy HNS would refuse for its shape."""

    CONFIG = ("policies",)

    @staticmethod
    def fit(values: Sequence[Any], sources: Sequence[str], form: Any) -> list[dict]:
        out = []
        for value, source in zip(values, sources):
            if not isinstance(value, dict) or not isinstance(hp.policy_type(value), str):
                raise CniError(
                    INVALID_CONFIG,
                    f"{source}: {jsontext.dumps(value)[:120]} is not an HNS policy",
                    'an endpoint policy value is an object with a "Type", e.g. {"Type": "OutBoundNAT", ...}',
                )
            ptype = hp.policy_type(value)
            if form.holds(value):
                fitted = dict(value)
            elif hp.translatable(ptype):
                try:
                    fitted = form.fit(value)
                except (ValueError, TypeError) as err:  # a value the translation cannot read
                    raise CniError(
                        INVALID_CONFIG,
                        f"{source}: {ptype} policy has no {form.api} equivalent: {err}",
                        f"correct the value, or write it in the {form.name} schema",
                    ) from None
            else:
                raise CniError(
                    INVALID_CONFIG,
                    f"{source}: policy type {ptype!r} is written for the other HNS API and has no {form.api} equivalent",
                    f"rewrite it in the {form.name} schema or set apiVersion to match it",
                )
            if form.unknown(fitted):
                raise CniError(
                    INVALID_CONFIG,
                    f"{source}: unknown HCN endpoint policy type {ptype!r}",
                    "known types: " + ", ".join(sorted(hp.KNOWN_V2_ENDPOINT_TYPES)),
                )
            out.append(fitted)
        return out


def of_type(policies: Iterable[dict], kind: hp.Kind) -> list[dict]:
    """The policies of ``kind``, by either API's name. Exact (case-sensitive) type match, like
    the reference's jsonparser lookups."""
    return [p for p in policies if p.get("Type") in (kind.v1_type, kind.v2_type)]


class OutboundNat:
    """OutBoundNAT: pod traffic leaves with the node's address except to its exceptions.
    ``ipMasqNetwork`` (win-bridge) and ``ipMasq`` (win-overlay: the network's first subnet) add an
    exception; ``loopbackDSR`` adds a ``Destinations`` policy per pod address when HNS supports DSR
    (a pod reaching itself through a service VIP). The doctor: every exception is a destination pods
    reach with their own address."""

    kind = hp.OUTBOUND_NAT
    CONFIG = ("ipMasqNetwork", "ipMasq", "loopbackDSR")

    @staticmethod
    def add_exception(policies: list[dict], cidr: str, form: Any) -> list[dict]:
        """Don't SNAT traffic to ``cidr`` (cluster CIDR or node pod subnet)."""
        if not cidr:
            return policies
        for p in of_type(policies, hp.OUTBOUND_NAT):
            if cidr in (form.setting(p, hp.OUTBOUND_NAT, "Exceptions") or []):
                return policies
        return policies + [form.policy(hp.OUTBOUND_NAT, exceptions=[cidr])]

    @staticmethod
    def add_destination(policies: list[dict], ip: str, form: Any) -> list[dict]:
        """Loopback DSR for ``ip`` (the caller checks HNS supports DSR)."""
        if not ip:
            return policies
        for p in of_type(policies, hp.OUTBOUND_NAT):
            if ip in (form.setting(p, hp.OUTBOUND_NAT, "Destinations") or []):
                return policies
        return policies + [form.policy(hp.OUTBOUND_NAT, destinations=[ip])]

    @staticmethod
    def exceptions(policies: Iterable[Any]) -> list[Any]:
        """Every exception entry of every OutBoundNAT policy of either API (unreadable ones skipped)."""
        out: list[Any] = []
        for p in as_v2(policies):
            if p["Type"].casefold() == "outboundnat":
                entries = get_ci(p["Settings"], "Exceptions") or []
                out += entries if isinstance(entries, list) else [entries]
        return out


class Route:
    """ROUTE (V1) / SDNRoute (V2): only from the config's ``policies`` (the service CIDR, the
    management IP, encapsulated). The doctor: each destination is cluster-internal, so it must
    also be an OutBoundNAT exception."""

    kind = hp.ROUTE
    CONFIG = ("policies",)

    @staticmethod
    def destinations(policies: Iterable[Any]) -> list[str]:
        out = [
            get_ci(p["Settings"], "DestinationPrefix") for p in as_v2(policies) if p["Type"].casefold() == "sdnroute"
        ]
        return [str(r) for r in out if r]


class ProviderAddress:
    """PA (V1) / ProviderAddress (V2): win-overlay endpoints encapsulate with the host's provider
    (management) address, read from the HNS network, not from the config."""

    kind = hp.PROVIDER_ADDRESS
    CONFIG = ()

    @staticmethod
    def add(policies: list[dict], address: str, form: Any) -> list[dict]:
        if not address:
            return policies
        for p in of_type(policies, hp.PROVIDER_ADDRESS):
            if address == form.setting(p, hp.PROVIDER_ADDRESS, "ProviderAddress"):
                return policies
        return policies + [form.policy(hp.PROVIDER_ADDRESS, address)]


class PortMapping:
    """NAT (V1) / PortMapping (V2): one per ``runtimeConfig.portMappings`` entry (the
    ``portMappings`` capability); a bad protocol or port is code 7 naming the entry."""

    kind = hp.PORT_MAPPING
    CONFIG = ("capabilities",)

    @staticmethod
    def add(policies: list[dict], mappings: Sequence[Any], form: Any) -> list[dict]:
        out = list(policies)
        for i, pm in enumerate(mappings):
            try:
                hp.protocol_number(pm.protocol)
            except ValueError:
                raise CniError(
                    INVALID_CONFIG,
                    f"runtimeConfig.portMappings[{i}].protocol: {pm.protocol!r} is not a valid protocol",
                    "use tcp, udp, icmpv4, icmpv6, igmp or an IANA protocol number",
                ) from None
            for port, label in ((pm.host_port, "hostPort"), (pm.container_port, "containerPort")):
                if not 0 < port < 65536:
                    raise CniError(
                        INVALID_CONFIG,
                        f"runtimeConfig.portMappings[{i}].{label}: {port} is out of range",
                        "ports are 1-65535",
                    )
            out.append(form.policy(hp.PORT_MAPPING, pm.container_port, pm.host_port, pm.protocol, vip=pm.host_ip))
        return out


class Acl:
    """ACL: the config's ``acls`` rules and, with ``allowPortMappingAcls``, one allow rule per
    port mapping (``acls.py`` parses and checks them); code 7 for a rule this HNS lacks the
    features for (HNS itself would refuse it with a bare 0x803B000D)."""

    kind = hp.ACL
    CONFIG = ("acls", "allowPortMappingAcls")

    @staticmethod
    def policies(netconf: Any, mappings: Sequence[Any], form: Any, has_feature: Callable[[str], bool]) -> list[dict]:
        if not (netconf.acls or netconf.allow_port_mapping_acls):
            return []
        from . import acls

        rules = acls.parse(list(netconf.acls))
        if netconf.allow_port_mapping_acls:
            rules += acls.port_mapping_rules(mappings)
        gaps = acls.unsupported(rules, has_feature)
        if gaps:
            raise CniError(
                INVALID_CONFIG, gaps[0], "; ".join(gaps[1:] + ["remove or simplify the rule, or upgrade Windows"])
            )
        return [rule.render(form) for rule in rules]


#: Every policy type's home, for the test that holds their config keys to the schemas.
HOMES = (UserPolicies, OutboundNat, Route, ProviderAddress, PortMapping, Acl)


class Requested(Record):
    """The policies the config and the runtime ask for (the user's, one per port mapping, the
    ACLs), each checked, so what is refused (code 7) is known before IPAM reserves an address
    (read-only once built)."""

    __slots__ = ("user", "port_mappings", "acls")

    def __init__(self, user: tuple[dict, ...], port_mappings: tuple[dict, ...], acls: tuple[dict, ...]) -> None:
        self.user, self.port_mappings, self.acls = user, port_mappings, acls


def requested(netconf: Any, mappings: Sequence[Any], form: Any, has_feature: Callable[[str], bool]) -> Requested:
    """What ``netconf`` and the runtime's ``mappings`` ask for, in ``form``; ``has_feature`` is
    asked only for ACL rules."""
    return Requested(
        tuple(UserPolicies.fit(netconf.policies, netconf.policy_sources, form)),
        tuple(PortMapping.add([], mappings, form)),
        tuple(Acl.policies(netconf, mappings, form, has_feature)),
    )


def completed(
    base: Requested,
    flavor: Any,
    netconf: Any,
    network: Any,
    addresses: Sequence[Any],
    form: Any,
    has_feature: Callable[[str], bool],
) -> list[dict]:
    """Every policy an endpoint gets, in ``form``, from what ``base`` requested: the user's, the
    flavor's automatic ones (once ``network`` is known), the port mappings, loopback DSR per
    address, then the ACLs.
    ``has_feature`` answers from HNS's version, asked only for DSR with addresses."""
    out = list(base.user)
    if network is not None:
        out = flavor.automatic_policies(out, netconf, network, tuple(addresses), form)
    out = out + list(base.port_mappings)
    if netconf.loopback_dsr and addresses and has_feature("dsr"):
        for a in addresses:
            out = OutboundNat.add_destination(out, a.ip, form)
    return out + list(base.acls)


def endpoint_policies(
    flavor: Any,
    netconf: Any,
    network: Any,
    addresses: Sequence[Any],
    mappings: Sequence[Any],
    form: Any,
    has_feature: Callable[[str], bool],
) -> list[dict]:
    """``requested`` then ``completed`` in one, for a caller that knows everything at once
    (CHECK, the doctor)."""
    return completed(
        requested(netconf, mappings, form, has_feature), flavor, netconf, network, addresses, form, has_feature
    )


def as_v2(policies: Iterable[Any]) -> list[dict]:
    """Every readable policy in its V2 shape (libhns's one reader of both APIs), for the doctor."""
    out = []
    for p in policies:
        if isinstance(p, dict):
            try:
                out.append(hp.to_v2(p))
            except (ValueError, TypeError):  # no Type, or a value HNS could not read either
                pass
    return out


def missing_policies(wanted: Sequence[dict], present: Sequence[dict]) -> list[dict]:
    """Wanted policies with no equal policy on the endpoint (HNS may add keys: compare as subsets)."""
    return [w for w in wanted if not any(_contains(p, w) for p in present)]


def _contains(have: Any, want: Any) -> bool:
    if isinstance(want, dict):
        if not isinstance(have, dict):
            return False
        low = {str(k).lower(): v for k, v in have.items()}
        return all(
            str(k).lower() in low
            and (
                _same_protocol(low["protocol"], v)
                if str(k).lower() == "protocol"
                else _contains(low[str(k).lower()], v)
            )
            for k, v in want.items()
        )
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
