"""The well-known runtimeConfig capabilities (CONVENTIONS.md): parsed on first use (``Request.runtime_config``),
since only an ADD with capabilities reads them."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Mapping

from basics import jsontext
from basics.jsonci import get_ci

from .config import check_count
from .errors import INVALID_CONFIG, CniError
from .record import FrozenRecord, Record

#: The runtimeConfig keys the plugins read; flannel passes (and saves) only these.
KEYS = ("portMappings", "dns", "ips", "ipRanges", "mac")
#: Caps on what one pod's runtimeConfig may list (README "Security model").
MAX_PORT_MAPPINGS = 1024
MAX_DNS = 64


class PortMapping(FrozenRecord):
    __slots__ = ("host_port", "container_port", "protocol", "host_ip")

    def __init__(self, host_port: int, container_port: int, protocol: str = "tcp", host_ip: str = "") -> None:
        self.host_port, self.container_port, self.protocol, self.host_ip = host_port, container_port, protocol, host_ip


class RuntimeDNS(FrozenRecord):
    __slots__ = ("servers", "searches", "options")

    def __init__(
        self, servers: tuple[str, ...] = (), searches: tuple[str, ...] = (), options: tuple[str, ...] = ()
    ) -> None:
        self.servers, self.searches, self.options = servers, searches, options


class RuntimeConfig(Record):
    """The well-known runtimeConfig capabilities (CONVENTIONS.md) this suite reads; ``raw`` is the
    whole object as given (not compared)."""

    __slots__ = ("port_mappings", "dns", "ips", "ip_ranges", "mac", "raw")

    def __init__(
        self,
        port_mappings: tuple[PortMapping, ...] = (),
        dns: RuntimeDNS | None = None,
        ips: tuple[str, ...] = (),
        ip_ranges: tuple[Any, ...] = (),
        mac: str = "",
        raw: Mapping[str, Any] | None = None,
    ) -> None:
        self.port_mappings, self.dns = port_mappings, dns if dns is not None else RuntimeDNS()
        self.ips, self.ip_ranges, self.mac = ips, ip_ranges, mac
        self.raw = raw if raw is not None else {}

    def _values(self) -> tuple:
        return super()._values()[:-1]

    @classmethod
    def from_conf(cls, conf: Mapping[str, Any]) -> "RuntimeConfig":
        rc = get_ci(conf, "runtimeConfig") or {}
        if not isinstance(rc, dict):
            raise CniError(INVALID_CONFIG, "runtimeConfig: must be an object", f"got {jsontext.dumps(rc)[:80]}")
        pms = []
        check_count("runtimeConfig.portMappings", _list(rc, "portMappings"), MAX_PORT_MAPPINGS)
        for i, pm in enumerate(_list(rc, "portMappings")):
            try:
                pms.append(
                    PortMapping(
                        host_port=int(pm["hostPort"]),
                        container_port=int(pm["containerPort"]),
                        protocol=str(pm.get("protocol") or "tcp"),
                        host_ip=str(pm.get("hostIP") or ""),
                    )
                )
            except (KeyError, TypeError, ValueError) as exc:
                raise CniError(
                    INVALID_CONFIG,
                    f"runtimeConfig.portMappings[{i}]: {jsontext.dumps(pm)[:120]} is invalid",
                    "each entry needs integer hostPort and containerPort",
                ) from exc
        dns = rc.get("dns") or {}
        if not isinstance(dns, dict):
            raise CniError(INVALID_CONFIG, "runtimeConfig.dns: must be an object")
        return cls(
            port_mappings=tuple(pms),
            dns=RuntimeDNS(
                servers=tuple(_str_list(dns, "servers")),
                searches=tuple(_str_list(dns, "searches")),
                options=tuple(_str_list(dns, "options")),
            ),
            ips=tuple(str(x) for x in _list(rc, "ips")),
            ip_ranges=tuple(_list(rc, "ipRanges")),
            mac=str(rc.get("mac") or ""),
            raw=rc,
        )


def _list(rc: Mapping[str, Any], key: str) -> list:
    """A runtimeConfig list (absent is empty); anything else is code 7, not a crash later."""
    value = rc.get(key) or []
    if not isinstance(value, list):
        raise CniError(INVALID_CONFIG, f"runtimeConfig.{key}: must be a list", f"got {jsontext.dumps(value)[:80]}")
    return value


def _str_list(doc: Mapping[str, Any], key: str) -> list[str]:
    value = doc.get(key) or []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise CniError(INVALID_CONFIG, f"runtimeConfig.dns.{key}: must be a list of strings")
    check_count(f"runtimeConfig.dns.{key}", value, MAX_DNS)
    return [v for v in value if v]
