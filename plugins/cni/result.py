"""The CNI result model and its exact rendering in every CNI version.

Results are held in the 1.1.0 shape and converted on output, so a plugin builds one value and
the runtime gets what its cniVersion can carry (0.1.0/0.2.0 ip4/ip6, 0.3.x/0.4.0 with
``version``, 1.x without).
"""

from __future__ import annotations

from basics import ipaddr

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

from . import version as ver
from .errors import DECODE_FAILURE, INCOMPATIBLE_VERSION, INVALID_CONFIG, CniError
from .record import Record


class Interface(Record):
    __slots__ = ("name", "mac", "sandbox", "mtu", "socket_path", "pci_id")

    def __init__(
        self, name: str, mac: str = "", sandbox: str = "", mtu: int = 0, socket_path: str = "", pci_id: str = ""
    ) -> None:
        self.name, self.mac, self.sandbox, self.mtu = name, mac, sandbox, mtu
        self.socket_path, self.pci_id = socket_path, pci_id


class IPConfig(Record):
    __slots__ = ("address", "gateway", "interface")

    def __init__(self, address: str, gateway: str = "", interface: int | None = None) -> None:
        self.address = address  # "10.0.0.5/24"
        self.gateway = gateway
        self.interface = interface

    @property
    def family(self) -> int:
        return ipaddr.ip_interface(self.address).version


class Route(Record):
    __slots__ = ("dst", "gw", "mtu", "advmss", "priority", "table", "scope")

    def __init__(
        self,
        dst: str,
        gw: str = "",
        mtu: int = 0,
        advmss: int = 0,
        priority: int = 0,
        table: int | None = None,
        scope: int | None = None,
    ) -> None:
        self.dst, self.gw, self.mtu, self.advmss, self.priority = dst, gw, mtu, advmss, priority
        self.table, self.scope = table, scope

    @property
    def family(self) -> int:
        return ipaddr.ip_network(self.dst, strict=False).version


class DNS(Record):
    __slots__ = ("nameservers", "domain", "search", "options")

    def __init__(
        self,
        nameservers: list[str] | None = None,
        domain: str = "",
        search: list[str] | None = None,
        options: list[str] | None = None,
    ) -> None:
        self.nameservers = nameservers if nameservers is not None else []
        self.domain = domain
        self.search = search if search is not None else []
        self.options = options if options is not None else []

    def to_dict(self) -> dict:
        """Empty fields are omitted, never rendered as [""]; an empty DNS is {}."""
        doc: dict[str, Any] = {}
        for key, value in (
            ("nameservers", self.nameservers),
            ("domain", self.domain),
            ("search", self.search),
            ("options", self.options),
        ):
            value = value if isinstance(value, str) else _strings(value)
            if value:
                doc[key] = value
        return doc

    @classmethod
    def from_dict(cls, doc: Any) -> "DNS":
        if not isinstance(doc, dict):
            return cls()
        return cls(
            nameservers=_strings(doc.get("nameservers")),
            domain=doc.get("domain") or "",
            search=_strings(doc.get("search")),
            options=_strings(doc.get("options")),
        )


def _strings(value: Any) -> list[str]:
    """A list of non-empty strings (drops the reference's [""] artefacts)."""
    if not isinstance(value, list):
        return []
    return [v for v in value if isinstance(v, str) and v]


class Result(Record):
    __slots__ = ("cni_version", "interfaces", "ips", "routes", "dns")

    def __init__(
        self,
        cni_version: str = ver.LATEST,
        interfaces: list[Interface] | None = None,
        ips: list[IPConfig] | None = None,
        routes: list[Route] | None = None,
        dns: DNS | None = None,
    ) -> None:
        self.cni_version = cni_version
        self.interfaces = interfaces if interfaces is not None else []
        self.ips = ips if ips is not None else []
        self.routes = routes if routes is not None else []
        self.dns = dns if dns is not None else DNS()

    # ---- output ----
    def to_dict(self, version: str) -> dict:
        """Render for ``version``; raises CniError when the version cannot carry the result."""
        if version not in ver.SUPPORTED:
            raise CniError(INCOMPATIBLE_VERSION, f"unsupported CNI result version {version}")
        if ver.parse(version) < (0, 3, 0):
            return self._to_legacy(version)
        with_version = ver.parse(version) < (1, 0, 0)
        rich = version == "1.1.0"
        doc: dict[str, Any] = {"cniVersion": version}
        if self.interfaces:
            doc["interfaces"] = [_iface_dict(i, rich) for i in self.interfaces]
        if self.ips:
            doc["ips"] = [_ip_dict(ip, with_version) for ip in self.ips]
        if self.routes:
            doc["routes"] = [_route_dict(r, rich) for r in self.routes]
        doc["dns"] = self.dns.to_dict()
        return doc

    def _to_legacy(self, version: str) -> dict:
        doc: dict[str, Any] = {"cniVersion": version}
        for family, key in ((4, "ip4"), (6, "ip6")):
            first = next((ip for ip in self.ips if ip.family == family), None)
            if first is None:
                continue
            entry: dict[str, Any] = {"ip": first.address}
            if first.gateway:
                entry["gateway"] = first.gateway
            routes = [_route_dict(r, False) for r in self.routes if r.family == family]
            if routes:
                entry["routes"] = routes
            doc[key] = entry
        if "ip4" not in doc and "ip6" not in doc:
            raise CniError(
                INCOMPATIBLE_VERSION,
                "cannot convert: no valid IP addresses",
                f"a {version} result needs at least one IP address",
            )
        doc["dns"] = self.dns.to_dict()
        return doc

    # ---- input ----
    @classmethod
    def from_dict(cls, doc: Any, default_version: str = ver.LATEST) -> "Result":
        """Parse a result (or prevResult) of any version; malformed input is code 7."""
        try:
            return cls._parse(doc, default_version)
        except CniError:
            raise
        except (TypeError, ValueError, KeyError, AttributeError) as exc:
            raise CniError(INVALID_CONFIG, "invalid result", str(exc)) from exc

    @classmethod
    def _parse(cls, doc: Any, default_version: str) -> "Result":
        if not isinstance(doc, dict):
            raise CniError(DECODE_FAILURE, "invalid result", "a result must be a JSON object")
        version = doc.get("cniVersion") or default_version
        res = cls(cni_version=version, dns=DNS.from_dict(doc.get("dns")))
        if version in ("0.1.0", "0.2.0") or ("ip4" in doc or "ip6" in doc) and "ips" not in doc:
            for key in ("ip4", "ip6"):
                entry = doc.get(key)
                if not isinstance(entry, dict) or not entry.get("ip"):
                    continue
                ipaddr.ip_interface(entry["ip"])
                res.ips.append(IPConfig(address=entry["ip"], gateway=entry.get("gateway") or ""))
                for r in entry.get("routes") or []:
                    res.routes.append(_route_from(r))
            return res
        for i in doc.get("interfaces") or []:
            res.interfaces.append(
                Interface(
                    name=i.get("name", ""),
                    mac=i.get("mac", ""),
                    sandbox=i.get("sandbox", ""),
                    mtu=int(i.get("mtu") or 0),
                    socket_path=i.get("socketPath", ""),
                    pci_id=i.get("pciID", ""),
                )
            )
        for ip in doc.get("ips") or []:
            ipaddr.ip_interface(ip["address"])
            idx = ip.get("interface")
            res.ips.append(
                IPConfig(
                    address=ip["address"],
                    gateway=ip.get("gateway") or "",
                    interface=int(idx) if idx is not None else None,
                )
            )
        for r in doc.get("routes") or []:
            res.routes.append(_route_from(r))
        return res


def _route_from(r: dict) -> Route:
    ipaddr.ip_network(r["dst"], strict=False)
    return Route(
        dst=r["dst"],
        gw=r.get("gw") or "",
        mtu=int(r.get("mtu") or 0),
        advmss=int(r.get("advmss") or 0),
        priority=int(r.get("priority") or 0),
        table=r.get("table"),
        scope=r.get("scope"),
    )


def _iface_dict(i: Interface, rich: bool) -> dict:
    doc: dict[str, Any] = {"name": i.name}
    if i.mac:
        doc["mac"] = i.mac
    if rich and i.mtu:
        doc["mtu"] = i.mtu
    if i.sandbox:
        doc["sandbox"] = i.sandbox
    if rich and i.socket_path:
        doc["socketPath"] = i.socket_path
    if rich and i.pci_id:
        doc["pciID"] = i.pci_id
    return doc


def _ip_dict(ip: IPConfig, with_version: bool) -> dict:
    doc: dict[str, Any] = {}
    if with_version:
        doc["version"] = str(ip.family)
    if ip.interface is not None:
        doc["interface"] = ip.interface
    doc["address"] = ip.address
    if ip.gateway:
        doc["gateway"] = ip.gateway
    return doc


def _route_dict(r: Route, rich: bool) -> dict:
    doc: dict[str, Any] = {"dst": r.dst}
    if r.gw:
        doc["gw"] = r.gw
    if rich:
        for key, value in (("mtu", r.mtu), ("advmss", r.advmss), ("priority", r.priority)):
            if value:
                doc[key] = value
        if r.table is not None:
            doc["table"] = r.table
        if r.scope is not None:
            doc["scope"] = r.scope
    return doc
