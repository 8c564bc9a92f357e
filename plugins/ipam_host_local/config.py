"""host-local configuration: the reference's whole surface, defaults and precedence.

Keys are read like Go's encoding/json (exact, else case-insensitive). The happy path is a typed
parse without jsonschema (its import alone costs ~90 ms, more than the rest of an ADD); only
when the parse meets a value of the wrong shape is ``schema.json`` run, to name the field and
the fix. Semantic errors carry the reference's wording (operators search for it).
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Mapping

from basics import jsontext
from basics.jsonci import get_ci
from plugins.cni import version as ver
from plugins.cni.cniargs import check_known
from plugins.cni.config import check_count, node_path, validate, validate_for
from plugins.cni.errors import INVALID_CONFIG, INVALID_ENV, CniError
from plugins.cni.record import FrozenRecord
from plugins.cni.result import Route

from .ranges import IPAddress, Range, RangeError, RangeSet, first_overlap, parse_cidr, parse_ip, parse_ip_or_cidr

DEFAULT_DATA_DIR = "/var/lib/cni/networks"
SCHEMA_PATH = os.path.join(os.path.dirname(__file__), "schema.json")

_IPAM_KEYS = ("type", "subnet", "rangeStart", "rangeEnd", "gateway", "ranges", "routes", "dataDir", "resolvConf")
_RANGE_KEYS = ("subnet", "rangeStart", "rangeEnd", "gateway")
#: The most ranges one config may list (runtimeConfig.ipRanges, subnet and ranges together).
MAX_RANGES = 256
_ROUTE_KEYS = ("dst", "gw", "mtu", "advmss", "priority", "table", "scope")


class IPAMConfig(FrozenRecord):
    __slots__ = ("name", "data_dir", "range_sets", "requested", "routes", "resolv_conf")

    def __init__(
        self,
        name: str,
        data_dir: str,
        range_sets: tuple[RangeSet, ...] = (),
        requested: tuple[IPAddress, ...] = (),
        routes: tuple[Route, ...] = (),
        resolv_conf: str = "",
    ) -> None:
        self.name = name
        self.data_dir = data_dir
        self.range_sets = range_sets
        self.requested = requested
        self.routes = routes
        self.resolv_conf = resolv_conf

    @property
    def directory(self) -> str:
        """Where this network's reservations live: ``<dataDir>/<network name>``."""
        return os.path.join(self.data_dir, self.name)


def default_data_dir(platform: str, cwd: str | None = None) -> str:
    """``/var/lib/cni/networks``; on Windows that rooted path lands on the current drive, as it
    does for the Go plugin, so the drive is made explicit here."""
    return node_path(DEFAULT_DATA_DIR, platform, cwd)


def load_location(conf: Mapping[str, Any], platform: str, command: str) -> IPAMConfig:
    """Only the store's location: what DEL and GC need (see ``validate_for``), so a range typo
    made since ADD cannot leak addresses; other invalid fields are warnings."""
    doc = validate_for(command, normalize(conf), _schema(), {"ipam.dataDir": "the store holding the pod's addresses"})
    return IPAMConfig(name=conf["name"], data_dir=doc["ipam"].get("dataDir") or default_data_dir(platform))


def load(conf: Mapping[str, Any], cni_args: Mapping[str, str], cni_version: str, platform: str) -> IPAMConfig:
    """The full configuration for ADD, CHECK and STATUS (LoadIPAMConfig)."""
    doc = normalize(conf)
    requested = _env_ips(cni_args)
    try:
        ipam = doc["ipam"]
        requested += [_ip_arg(s) for s in _list(_dig(doc, "args", "cni", "ips"))]
        requested += [_ip_arg(s) for s in _list(_dig(doc, "runtimeConfig", "ips"))]
        raw_sets = list(_list(_dig(doc, "runtimeConfig", "ipRanges")))
        if ipam.get("subnet"):
            raw_sets.append([{k: ipam[k] for k in _RANGE_KEYS if k in ipam}])
        raw_sets += _list(ipam.get("ranges"))
        check_count("ipam.ranges", [r for raw in raw_sets for r in _list(raw)], MAX_RANGES)
        range_sets = tuple(_range_set(i, raw) for i, raw in enumerate(raw_sets))
        routes = tuple(_route(r) for r in _list(ipam.get("routes")))
        data_dir = _opt_str(ipam.get("dataDir"))
        resolv_conf = _opt_str(ipam.get("resolvConf"))
    except (TypeError, ValueError, AttributeError, KeyError) as exc:
        raise _explain(doc, exc) from exc
    if not range_sets:
        raise CniError(
            INVALID_CONFIG,
            "no IP ranges specified",
            'set ipam.subnet, or ipam.ranges to e.g. [[{"subnet": "10.244.1.0/24"}]]',
        )
    _check_families(range_sets, cni_version)
    # Ranges within a set never overlap (RangeSet.canonical), so an overlap is between two sets.
    pair = first_overlap((r, i) for i, rs in enumerate(range_sets) for r in rs.ranges)
    if pair is not None:
        raise CniError(
            INVALID_CONFIG,
            f"range set {min(pair)} overlaps with {max(pair)}",
            "each range set must use its own addresses",
        )
    return IPAMConfig(
        name=conf["name"],
        data_dir=data_dir or default_data_dir(platform),
        range_sets=range_sets,
        requested=tuple(requested),
        routes=routes,
        resolv_conf=resolv_conf,
    )


def normalize(conf: Mapping[str, Any]) -> dict:
    """The fields host-local reads, under their canonical keys (Go's case-insensitive match)."""
    ipam = get_ci(conf, "ipam")
    if ipam is None:
        raise CniError(
            INVALID_CONFIG,
            "IPAM config missing 'ipam' key",
            'add "ipam": {"type": "host-local", "subnet": "<cidr>"} to the network configuration',
        )
    if isinstance(ipam, dict):
        ipam = _pick(ipam, _IPAM_KEYS)
        if isinstance(ipam.get("ranges"), list):
            ipam["ranges"] = [_range_dicts(s) for s in ipam["ranges"]]
        if isinstance(ipam.get("routes"), list):
            ipam["routes"] = [_pick(r, _ROUTE_KEYS) for r in ipam["routes"]]
    doc = {"ipam": ipam}
    args = _pick(get_ci(conf, "args"), ("cni",))
    if args is not None:
        doc["args"] = args
        if isinstance(args, dict) and "cni" in args:
            args["cni"] = _pick(args["cni"], ("ips",))
    rc = _pick(get_ci(conf, "runtimeConfig"), ("ips", "ipRanges"))
    if rc is not None:
        doc["runtimeConfig"] = rc
        if isinstance(rc, dict) and isinstance(rc.get("ipRanges"), list):
            rc["ipRanges"] = [_range_dicts(s) for s in rc["ipRanges"]]
    return doc


def _pick(doc: Any, keys: tuple[str, ...]) -> Any:
    if not isinstance(doc, dict):
        return doc
    return {k: v for k in keys if (v := get_ci(doc, k)) is not None}


def _range_dicts(raw: Any) -> Any:
    return [_pick(r, _RANGE_KEYS) for r in raw] if isinstance(raw, list) else raw


def _schema() -> dict:
    with open(SCHEMA_PATH, encoding="utf-8") as f:
        return jsontext.loads(f.read())


def _explain(doc: dict, exc: Exception) -> CniError:
    """A shape error found by the fast parse, explained by the schema (field path + fix)."""
    validate(doc, _schema())
    return CniError(
        INVALID_CONFIG,
        f"invalid host-local configuration: {exc}",
        "see the host-local configuration reference (ipam.subnet / ipam.ranges)",
    )


def _dig(doc: Any, *keys: str) -> Any:
    """doc[k1][k2]...; absent is None, a non-object on the way is a shape error."""
    for key in keys:
        if doc is None:
            return None
        if not isinstance(doc, dict):
            raise TypeError(f"expected an object above {key!r}")
        doc = doc.get(key)
    return doc


def _list(value: Any) -> list:
    if value is None:
        return []
    if not isinstance(value, list):
        raise TypeError(f"expected a list, got {jsontext.dumps(value)[:60]}")
    return value


def _opt_str(value: Any) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise TypeError(f"expected a string, got {jsontext.dumps(value)[:60]}")
    return value


def _ip_arg(text: Any) -> IPAddress:
    return parse_ip_or_cidr(_opt_str(text))


def _env_ips(cni_args: Mapping[str, str]) -> list[IPAddress]:
    """CNI_ARGS ``IP=a[,b]`` (prefix allowed and dropped); other keys need IgnoreUnknown."""
    check_known(dict(cni_args), ("IP",))
    out = []
    for item in (cni_args.get("IP") or "").split(","):
        if item.strip():
            try:
                out.append(parse_ip_or_cidr(item.strip()))
            except ValueError as exc:
                raise CniError(
                    INVALID_ENV,
                    f"invalid IP address {item.strip()}",
                    "CNI_ARGS IP= takes addresses like IP=10.1.2.10 or IP=10.1.2.10/24",
                ) from exc
    return out


def _range_set(i: int, raw: Any) -> RangeSet:
    ranges = []
    try:
        for r in _list(raw):
            if not isinstance(r, dict):
                raise TypeError("a range must be an object")
            ranges.append(
                Range.canonical(
                    _opt_str(r.get("subnet")),
                    _opt_str(r.get("rangeStart")),
                    _opt_str(r.get("rangeEnd")),
                    _opt_str(r.get("gateway")),
                )
            )
        return RangeSet.canonical(ranges)
    except RangeError as exc:
        raise CniError(INVALID_CONFIG, f"invalid range set {i}: {exc}", _RANGE_HINT) from exc


_RANGE_HINT = (
    "a range is {subnet, rangeStart?, rangeEnd?, gateway?}: subnet without host bits, "
    "no smaller than /30 (/126), bounds inside it with rangeStart <= rangeEnd"
)


def _route(raw: Any) -> Route:
    if not isinstance(raw, dict):
        raise TypeError("a route must be an object")
    dst, gw = _opt_str(raw["dst"]), _opt_str(raw.get("gw"))
    parse_cidr(dst)
    if gw:
        parse_ip(gw)
    table, scope = raw.get("table"), raw.get("scope")
    return Route(
        dst=dst,
        gw=gw,
        mtu=_int(raw.get("mtu")),
        advmss=_int(raw.get("advmss")),
        priority=_int(raw.get("priority")),
        table=None if table is None else _int(table),
        scope=None if scope is None else _int(scope),
    )


def _int(value: Any) -> int:
    if value is None:
        return 0
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"expected an integer, got {jsontext.dumps(value)[:60]}")
    return value


def _check_families(range_sets: tuple[RangeSet, ...], cni_version: str) -> None:
    v4 = sum(1 for s in range_sets if s.version == 4)
    if (v4 > 1 or len(range_sets) - v4 > 1) and not ver.at_least(cni_version, "0.3.0"):
        raise CniError(
            INVALID_CONFIG,
            f"CNI version {cni_version} does not support more than 1 address per family",
            'set "cniVersion" to 0.3.0 or later to hand out several addresses of one family',
        )
