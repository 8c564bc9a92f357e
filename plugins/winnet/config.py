"""The win-bridge / win-overlay network configuration as a typed value.

Keys are read the way the Go reference reads them (encoding/json: exact key first, else a
case-insensitive match), then validated against the plugin's JSON Schema, so a config written
for the Go plugin or for Microsoft's sdnbridge keeps working unchanged.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Mapping

from plugins.cni.config import check_count, validate_for
from plugins.cni.record import FrozenRecord, Record

# Canonical spelling of every top-level key we read; anything else is passed through untouched.
_TOP_KEYS = (
    "cniVersion",
    "name",
    "type",
    "apiVersion",
    "policies",
    "runtimeConfig",
    "capabilities",
    "loopbackDSR",
    "acls",
    "allowPortMappingAcls",
    "ipMasqNetwork",
    "ipMasq",
    "endpointMacPrefix",
    "ipam",
    "dns",
    "AdditionalArgs",
    "prevResult",
    "logFile",
    "network",
    "hnsTimeout",
)
_DNS_KEYS = ("nameservers", "domain", "search", "options")

ENDPOINT_POLICY = "endpointpolicy"

#: What DEL and GC cannot do without, and what each identifies (see ``validate_for``).
TEARDOWN_NEEDS = {
    "name": "the HNS network and the pod's endpoint (<sandbox>_<name>)",
    "ipam": "the IPAM plugin that releases the pod's address",
}


def canonicalize(conf: Mapping[str, Any]) -> dict:
    """Rename Go-case-insensitive keys to their canonical spelling (pure; input untouched)."""
    out = dict(conf)
    for key in _TOP_KEYS:
        if key in out:
            continue
        for k in list(out):
            if k.lower() == key.lower():
                out[key] = out.pop(k)
                break
    if out.get("ipMasqNetwork") == "":  # Go's zero value: no exception, not a bad CIDR
        del out["ipMasqNetwork"]
    if type(out.get("apiVersion")) is int and out["apiVersion"] == 0:  # Go's zero value: unset
        del out["apiVersion"]
    if isinstance(out.get("dns"), dict):
        out["dns"] = {_canon(k, _DNS_KEYS): v for k, v in out["dns"].items()}
    for list_key in ("policies", "AdditionalArgs"):
        if isinstance(out.get(list_key), list):
            out[list_key] = [
                {_canon(k, ("name", "value")): v for k, v in p.items()} if isinstance(p, dict) else p
                for p in out[list_key]
            ]
    return out


def _canon(key: str, known: tuple[str, ...]) -> str:
    for k in known:
        if key.lower() == k.lower():
            return k
    return key


class DnsSettings(FrozenRecord):
    __slots__ = ("nameservers", "domain", "search", "options")

    def __init__(
        self,
        nameservers: tuple[str, ...] = (),
        domain: str = "",
        search: tuple[str, ...] = (),
        options: tuple[str, ...] = (),
    ) -> None:
        self.nameservers, self.domain, self.search, self.options = nameservers, domain, search, options


class NetConf(Record):
    """The config fields win-bridge and win-overlay act on (read-only once built)."""

    __slots__ = (
        "name",
        "api_version",
        "policies",
        "policy_sources",
        "dns",
        "loopback_dsr",
        "ip_masq",
        "ip_masq_network",
        "endpoint_mac_prefix",
        "ipam",
        "acls",
        "allow_port_mapping_acls",
        "network",
        "hns_timeout",
    )

    def __init__(
        self,
        *,
        name: str,
        api_version: int | None,
        policies: tuple[Any, ...],
        policy_sources: tuple[str, ...],
        dns: DnsSettings,
        loopback_dsr: bool = False,
        ip_masq: bool = False,
        ip_masq_network: str = "",
        endpoint_mac_prefix: str = "",
        ipam: Mapping[str, Any] | None = None,
        acls: tuple[Any, ...] = (),
        allow_port_mapping_acls: bool = False,
        network: Mapping[str, Any] | None = None,
        hns_timeout: Mapping[str, Any] | None = None,
    ) -> None:
        self.name = name
        self.api_version = api_version  # None: choose from CNI_NETNS
        self.policies = policies  # user endpoint policy values, in config order (policies, then AdditionalArgs)
        self.policy_sources = policy_sources  # where each came from, for error messages: "policies[2].value"
        self.dns = dns
        self.loopback_dsr = loopback_dsr
        self.ip_masq = ip_masq
        self.ip_masq_network = ip_masq_network
        self.endpoint_mac_prefix = endpoint_mac_prefix
        self.ipam = ipam if ipam is not None else {}
        self.acls = acls  # the schema-checked ``acls`` entries (plugins.winnet.acls parses them)
        self.allow_port_mapping_acls = allow_port_mapping_acls
        self.network = network  # standalone mode: the schema-checked ``network`` section
        self.hns_timeout = hns_timeout  # the schema-checked ``hnsTimeout`` (libhns.deadline.Limits)

    @classmethod
    def from_conf(cls, conf: Mapping[str, Any]) -> "NetConf":
        """Build from a canonicalized, schema-validated config."""
        values, sources = [], []
        for key in ("policies", "AdditionalArgs"):
            for i, entry in enumerate(conf.get(key) or []):
                if str(entry.get("name", "")).lower() == ENDPOINT_POLICY:
                    values.append(entry.get("value"))
                    sources.append(f"{key}[{i}].value")
        dns = conf.get("dns") or {}
        api = conf.get("apiVersion")
        return cls(
            name=conf["name"],
            api_version=int(api) if api else None,
            policies=tuple(values),
            policy_sources=tuple(sources),
            dns=DnsSettings(
                nameservers=tuple(x for x in dns.get("nameservers") or () if x),
                domain=dns.get("domain") or "",
                search=tuple(x for x in dns.get("search") or () if x),
                options=tuple(x for x in dns.get("options") or () if x),
            ),
            loopback_dsr=bool(conf.get("loopbackDSR")),
            ip_masq=bool(conf.get("ipMasq")),
            ip_masq_network=conf.get("ipMasqNetwork") or "",
            endpoint_mac_prefix=conf.get("endpointMacPrefix") or "",
            ipam=conf.get("ipam") or {},
            acls=tuple(conf.get("acls") or ()),
            allow_port_mapping_acls=bool(conf.get("allowPortMappingAcls")),
            network=conf.get("network"),
            hns_timeout=conf.get("hnsTimeout"),
        )


def load(raw: Mapping[str, Any], command: str, schema: dict) -> tuple[dict, NetConf]:
    """The config as ``command`` reads it (canonical keys, checked against the plugin's
    ``schema``) and its model. DEL and GC tolerate every field but the network name (the
    endpoint's name) and the IPAM section (the IP to release): a config edited while pods run
    must still let them go."""
    conf = validate_for(command, canonicalize(raw), schema, TEARDOWN_NEEDS)
    return conf, NetConf.from_conf(conf)


def sandbox_id(container_id: str, netns: str) -> str:
    """dockershim app containers arrive with CNI_NETNS=container:<sandboxID>; they share its endpoint."""
    if netns and netns != "none":
        head, sep, tail = netns.partition(":")
        if sep and tail:
            return tail
    return container_id


def endpoint_name(container_id: str, netns: str, network: str) -> str:
    return f"{sandbox_id(container_id, netns)}_{network}"


def merged_dns(conf_dns: DnsSettings, runtime: Any) -> DnsSettings:
    """Reference rule: runtime servers/searches replace the config's when non-empty; we also
    honour runtime options (the reference drops them). Each list is capped (the runtime's are
    checked where runtimeConfig is read)."""
    from plugins.cni.runtimeconfig import MAX_DNS

    for key in ("nameservers", "search", "options"):
        check_count(f"dns.{key}", getattr(conf_dns, key), MAX_DNS)
    return DnsSettings(
        nameservers=tuple(runtime.servers) or conf_dns.nameservers,
        domain=conf_dns.domain,
        search=tuple(runtime.searches) or conf_dns.search,
        options=tuple(runtime.options) or conf_dns.options,
    )
