"""First-class ACL rules: the config's ``acls`` and ``allowPortMappingAcls`` as HNS ACL policies.

Pure: rules in, policy documents out. Operators write one schema-checked form; this module turns
it into what HNS expects on either API — V1 flat keys or V2 ``Settings``, ``Action`` ``Allow`` /
``Block``, ``Direction`` ``In`` / ``Out``, ``RuleType`` ``Switch`` / ``Host``, ``Protocols`` as a
*string* of IANA numbers, addresses and ports comma-joined — so HNS never answers 0x803B000D
for a casing or a type. What the JSON Schema cannot say (ports only with TCP/UDP, an address
family that matches the protocol, ranges that run forwards) is checked here, naming the field.
Imported only when a config has ACLs.
"""

from __future__ import annotations

from basics import ipaddr
from libhns import policies as hp
from plugins.cni.config import check_count
from plugins.cni.errors import INVALID_CONFIG, CniError

_ACTIONS = {"allow": "Allow", "block": "Block"}
_DIRECTIONS = {"in": "In", "out": "Out"}
_RULE_TYPES = {"switch": "Switch", "host": "Host"}
_PROTOCOLS = {"tcp": 6, "udp": 17, "icmpv4": 1, "icmpv6": 58, "any": None}
_PORTED = {6, 17}
#: sdnbridge's priority for the ACL it adds per port mapping.
PORT_MAPPING_PRIORITY = 1000

# The priority bands of an endpoint's ACLs. HNS walks them lower number first and the first match
# ends the walk (Calico and Azure NPM rely on it; Microsoft in Windows-Containers#616); HNS takes
# 100-65500 (Microsoft's generateCNIConfig.ps1). Who owns which band:
#   100-1999    the config's ``acls``, before NetworkPolicy (port mappings' allows at 1000): an
#               operator's rule here decides before any policy does;
#   2000-4000   NetworkPolicy (``plugins.netpol.translate``): the node and the pod itself at
#               2000, the policies' allows at 3000, an isolated direction's Block at 4000;
#   4001-65499  the config's ``acls``, after NetworkPolicy: they act only on a direction no
#               policy isolates (an isolated one ended at 4000);
#   65500       the endpoint's default: allow-all for a direction no policy isolates (with any
#               ACL on an endpoint HNS denies what no rule allows).
# A config rule inside the policy band or at the default would tie with a policy rule of another
# action (HNS's tie-break is undocumented), so ``parse`` refuses it.
#: NetworkPolicy's band, both ends included.
POLICY_BAND = (2000, 4000)
#: The node's own addresses in (kubelet probes) and the pod to itself.
NODE_PRIORITY = 2000
#: The allows of the policies that select the pod.
POLICY_PRIORITY = 3000
#: The Block that ends an isolated direction.
ISOLATION_PRIORITY = 4000
#: The allow-all of a direction no policy isolates, and of the Host (WFP) rules.
DEFAULT_PRIORITY = 65500
#: The most ``acls`` rules one config may list (README "Security model").
MAX_ACLS = 1000


class AclRule:
    """One validated rule, in HNS's encodings; ``needs`` lists the HNS features it relies on."""

    __slots__ = (
        "action",
        "direction",
        "protocol",
        "local_ports",
        "remote_ports",
        "local_addresses",
        "remote_addresses",
        "priority",
        "rule_type",
        "id",
        "needs",
    )

    def __init__(
        self,
        action: str,
        direction: str,
        protocol: int | None = None,
        local_ports: str = "",
        remote_ports: str = "",
        local_addresses: str = "",
        remote_addresses: str = "",
        priority: int | None = None,
        rule_type: str = "",
        id: str = "",
    ) -> None:
        self.action, self.direction, self.protocol = action, direction, protocol
        self.local_ports, self.remote_ports = local_ports, remote_ports
        self.local_addresses, self.remote_addresses = local_addresses, remote_addresses
        self.priority, self.rule_type, self.id = priority, rule_type, id
        self.needs = _needs(self)

    def render(self, form) -> dict:
        """The rule as an ACL policy in ``form`` (``policies.V1`` / ``V2``)."""
        return form.policy(
            hp.ACL,
            action=self.action,
            direction=self.direction,
            protocols=self.protocol,
            local_ports=self.local_ports or None,
            remote_ports=self.remote_ports or None,
            local_addresses=self.local_addresses or None,
            remote_addresses=self.remote_addresses or None,
            priority=self.priority,
            rule_type=self.rule_type or None,
            id=self.id or None,
        )


def parse(rules: list, source: str = "acls") -> list[AclRule]:
    """Schema-validated ``acls`` entries → rules; code 7 naming ``acls[i].<field>`` otherwise."""
    check_count(source, rules, MAX_ACLS)
    return [_rule(r, f"{source}[{i}]") for i, r in enumerate(rules)]


def port_mapping_rules(port_mappings) -> list[AclRule]:
    """``allowPortMappingAcls``: allow in to each mapped container port, as sdnbridge does."""
    out = []
    for m in port_mappings:
        proto = hp.protocol_number(m.protocol or "tcp")
        out.append(
            AclRule(
                "Allow",
                "In",
                proto,
                local_ports=str(m.container_port),
                priority=PORT_MAPPING_PRIORITY,
                rule_type="Switch",
            )
        )
    return out


def unsupported(rules: list[AclRule], has_feature) -> list[str]:
    """What the rules need that this HNS lacks (``has_feature(name) -> bool``), one line each."""
    missing = []
    for i, rule in enumerate(rules):
        for feature, what, version in rule.needs:
            if not has_feature(feature):
                missing.append(f"ACL rule {i} uses {what}, which needs HNS {version} or newer")
    return missing


# ---------------------------------------------------------------- parsing


def _rule(raw: dict, where: str) -> AclRule:
    proto = _protocol(raw.get("protocol", "any"), f"{where}.protocol")
    ports = {}
    for key in ("localPorts", "remotePorts"):
        ports[key] = _ports(raw.get(key), f"{where}.{key}")
        if ports[key] and proto not in _PORTED:
            raise CniError(
                INVALID_CONFIG,
                f"{where}.{key}: ports need protocol tcp or udp, not {raw.get('protocol', 'any')!r}",
                "remove the ports, or set protocol to tcp or udp",
            )
    addresses = {key: _addresses(raw.get(key), f"{where}.{key}") for key in ("localAddresses", "remoteAddresses")}
    families = {net.version for nets in addresses.values() for net in nets}  # addresses and networks alike
    want = {1: 4, 58: 6}.get(proto)
    for key, nets in addresses.items():
        wrong = [str(n) for n in nets if (want and n.version != want) or len(families) > 1]
        if wrong:
            why = (
                f"protocol {raw.get('protocol')} is IPv{want}-only"
                if want
                else "one rule cannot mix IPv4 and IPv6 addresses"
            )
            raise CniError(
                INVALID_CONFIG, f"{where}.{key}: {', '.join(wrong)}: {why}", "split the rule in one per address family"
            )
    _check_band(raw.get("priority"), f"{where}.priority")
    return AclRule(
        action=_ACTIONS[raw["action"].lower()],
        direction=_DIRECTIONS[raw["direction"].lower()],
        protocol=proto,
        local_ports=ports["localPorts"],
        remote_ports=ports["remotePorts"],
        local_addresses=",".join(map(str, addresses["localAddresses"])),
        remote_addresses=",".join(map(str, addresses["remoteAddresses"])),
        priority=raw.get("priority"),
        rule_type=_RULE_TYPES[raw.get("type", "switch").lower()],
        id=raw.get("id", ""),
    )


def _check_band(priority, where: str) -> None:
    low, high = POLICY_BAND
    if isinstance(priority, int) and (low <= priority <= high or priority == DEFAULT_PRIORITY):
        raise CniError(
            INVALID_CONFIG,
            f"{where}: {priority} is reserved: NetworkPolicy's rules use {low}-{high} and {DEFAULT_PRIORITY}",
            f"use 100-{low - 1} (before NetworkPolicy) or {high + 1}-{DEFAULT_PRIORITY - 1} (after it)",
        )


def _protocol(value, where: str) -> int | None:
    if isinstance(value, str) and value.lower() in _PROTOCOLS:
        return _PROTOCOLS[value.lower()]
    number = int(value) if isinstance(value, int) or (isinstance(value, str) and value.isdigit()) else -1
    if not 0 <= number <= 255:
        raise CniError(
            INVALID_CONFIG,
            f"{where}: {value!r} is not a protocol",
            "use tcp, udp, icmpv4, icmpv6, any or an IANA protocol number 0-255",
        )
    return number


def _items(value) -> list:
    if value is None or value == "":
        return []
    if isinstance(value, list):
        return value
    return [v.strip() for v in value.split(",")] if isinstance(value, str) else [value]


def _ports(value, where: str) -> str:
    out = []
    for item in _items(value):
        low, sep, high = str(item).partition("-")
        try:
            first, last = int(low), int(high if sep else low)
        except ValueError:
            first = last = -1
        if not (1 <= first <= last <= 65535):
            raise CniError(
                INVALID_CONFIG,
                f"{where}: {item!r} is not a port or a port range",
                'ports are 1-65535: 80, "8000-8080", or a list of them',
            )
        out.append(f"{first}-{last}" if first != last else str(first))
    return ",".join(out)


def _addresses(value, where: str) -> list:
    """Networks in the form given: an address stays an address, a CIDR is normalised."""
    out = []
    for item in _items(value):
        try:
            text = str(item).strip()
            out.append(ipaddr.ip_network(text, strict=False) if "/" in text else ipaddr.ip_address(text))
        except ValueError:
            raise CniError(
                INVALID_CONFIG,
                f"{where}: {item!r} is not an IP address or CIDR",
                'give addresses as "10.0.0.5", "10.96.0.0/12", or a list of them',
            ) from None
    return out


def _needs(rule: AclRule) -> list[tuple[str, str, str]]:
    """(feature, what, version) for what only newer HNS accepts (hcsshim hcnsupport.go)."""
    needs = []
    if "-" in rule.local_ports + rule.remote_ports:
        needs.append(("acl", "port ranges", "7.2"))
    if "," in rule.local_addresses + rule.remote_addresses:
        needs.append(("acl", "address lists", "7.2"))
    if rule.id:
        needs.append(("acl", "rule IDs", "7.2"))
    if rule.protocol == 252:
        needs.append(("acl_protocol_252", "protocol 252", "11.0"))
    return needs
