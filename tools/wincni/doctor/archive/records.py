"""What replay reads of a bundle, each member's shape checked before any check sees it.

``SHAPES`` is the table: member -> its shape, so a new member is one entry. A shape is a type
(``STR``, ``INT``, ``NUM``, ``BOOL``, ``ANY``), ``ListOf``, ``MapOf`` (any keys), ``Pair``, or
``Fields``: an object whose named fields, when present, have their shapes; other keys are not
read, so not checked. HNS documents are ``Fields(..., hns=True)``: keys match in any case and null
is as absent, as libhns reads them (``jsonci.get_ci``); that is why this is not JSON Schema, whose
``properties`` match a key exactly, so ``{"name": 5}`` would pass it and reach the checks. Checking
is a walk over the shape, not over the data's own nesting (capped apart, ``JSON_DEPTH``). The one
error names the member and the field: ``hns/v1/endpoints.json: [3].Name: expected a string, got 5``.
"""

from __future__ import annotations

from typing import Any, Mapping

from tools.wincni.doctor.archive.members import (
    HCS_MEMBER,
    MANIFEST,
    MAX_DOCUMENTS,
    SANDBOX_MEMBER,
    STORE_MEMBER,
    V1_MEMBERS,
    V2_MEMBERS,
    VERSION_MEMBER,
    ReplayError,
)

STR, INT, NUM, BOOL, ANY = "a string", "an integer", "a number", "true or false", "anything"
_TYPES = {
    STR: lambda v: isinstance(v, str),
    INT: lambda v: isinstance(v, int) and not isinstance(v, bool),
    NUM: lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    BOOL: lambda v: isinstance(v, bool),
    ANY: lambda v: True,
}


class ListOf:
    """A list of ``item``; at most ``most`` of them."""

    def __init__(self, item: Any, most: int | None = None) -> None:
        self.item, self.most = item, most


class MapOf:
    """An object of any keys (paths, names), each value ``value``."""

    def __init__(self, value: Any) -> None:
        self.value = value


class Null:
    """``shape``, or null."""

    def __init__(self, shape: Any) -> None:
        self.shape = shape


class Pair:
    """A list of exactly two: ``first``, then ``second``."""

    def __init__(self, first: Any, second: Any) -> None:
        self.items = (first, second)


class Fields:
    """An object's fields by name; ``hns``: as libhns reads a document (any case, null as absent)."""

    def __init__(self, fields: Mapping[str, Any], hns: bool = False) -> None:
        self.fields, self.hns = {(k.casefold() if hns else k): v for k, v in fields.items()}, hns


def check(name: str, value: Any, shape: Any) -> Any:
    """``value``, when it has ``shape``; else ``ReplayError`` naming member ``name`` and the field."""
    _check(value, shape, name, "")
    return value


def _check(value: Any, shape: Any, name: str, at: str) -> None:
    if isinstance(shape, Null):
        if value is not None:
            _check(value, shape.shape, name, at)
    elif isinstance(shape, str):
        if not _TYPES[shape](value):
            _wrong(name, at, shape, value)
    elif isinstance(shape, ListOf):
        if not isinstance(value, list):
            _wrong(name, at, "a list", value)
        if shape.most is not None and len(value) > shape.most:
            raise ReplayError(f"{name}: {at or 'the document'}: {len(value)} items, over the cap of {shape.most}")
        for n, item in enumerate(value):
            _check(item, shape.item, name, f"{at}[{n}]")
    elif isinstance(shape, Pair):
        if not isinstance(value, list) or len(value) != 2:
            _wrong(name, at, "a list of two", value)
        for n, (item, want) in enumerate(zip(value, shape.items)):
            _check(item, want, name, f"{at}[{n}]")
    else:
        if not isinstance(value, dict):
            _wrong(name, at, "an object", value)
        for key, item in value.items():
            _field(shape, key, item, name, f"{at}.{key}" if at else str(key))


def _field(shape: Any, key: str, item: Any, name: str, at: str) -> None:
    if isinstance(shape, MapOf):
        _check(item, shape.value, name, at)
        return
    want = shape.fields.get(key.casefold() if shape.hns else key)
    if want is not None and not (shape.hns and item is None):
        _check(item, want, name, at)


def _wrong(name: str, at: str, want: str, got: Any) -> None:
    shown = repr(got) if isinstance(got, (str, int, float, bool)) or got is None else type(got).__name__
    shown = shown if len(shown) <= 40 else shown[:37] + "..."
    raise ReplayError(f"{name}: {at or 'the document'}: expected {want}, got {shown}")


_PROBLEM = Fields({"message": STR, "fix": STR})
MANIFEST_SHAPE = Fields(
    {
        "format": STR,
        "platform": STR,
        "cwd": STR,
        "doctor": Fields(
            {
                **dict.fromkeys(("cni_conf", "subnet_env", "net_conf", "source_vip", "cni_bin_dir", "reach"), STR),
                **dict.fromkeys(("subnet_env_given", "net_conf_given", "quick"), BOOL),
                "containerd_version": Null(INT),
                "checked": ListOf(Pair(STR, STR)),
            }
        ),
        "configs": MapOf(Null(ListOf(STR))),  # null: the folder could not be listed
        "exists": MapOf(BOOL),
        "files": MapOf(Fields({"flag": STR, "absent": BOOL, "problem": _PROBLEM, "member": STR, "owner": Null(STR)})),
    }
)

_HNS_POLICY = Fields({"Type": STR, "Settings": ANY}, hns=True)
_POLICIES = ListOf(_HNS_POLICY)
_ROUTE = Fields({"NextHop": STR, "DestinationPrefix": STR}, hns=True)
_IP_CONFIG = Fields({"IpAddress": STR, "PrefixLength": INT}, hns=True)
_V2_SUBNET = Fields({"IpAddressPrefix": STR, "Routes": ListOf(_ROUTE), "Policies": _POLICIES}, hns=True)
_V1_SUBNET = Fields({"AddressPrefix": STR, "GatewayAddress": STR, "Policies": _POLICIES}, hns=True)
_IDS = {"ID": STR, "Name": STR, "Type": STR, "Policies": _POLICIES, "Flags": INT, "State": INT}
V2_SHAPES = {
    "Network": Fields(
        {**_IDS, "Ipams": ListOf(Fields({"Type": STR, "Subnets": ListOf(_V2_SUBNET)}, hns=True))}, hns=True
    ),
    "Endpoint": Fields(
        {
            **_IDS,
            "HostComputeNetwork": STR,
            "HostComputeNamespace": STR,
            "IpConfigurations": ListOf(_IP_CONFIG),
            "Routes": ListOf(_ROUTE),
            "MacAddress": STR,
        },
        hns=True,
    ),
    "Namespace": Fields(
        {
            "ID": STR,
            "Type": STR,
            "NamespaceId": INT,
            "Resources": ListOf(Fields({"Type": STR, "Data": Fields({"Id": STR}, hns=True)}, hns=True)),
        },
        hns=True,
    ),
    "LoadBalancer": Fields(
        {
            "ID": STR,
            "HostComputeEndpoints": ListOf(STR),
            "SourceVIP": STR,
            "FrontendVIPs": ListOf(STR),
            "PortMappings": ListOf(Fields({"Protocol": INT, "InternalPort": INT, "ExternalPort": INT}, hns=True)),
            "Flags": INT,
            "HostComputeNetwork": STR,
        },
        hns=True,
    ),
}
V1_SHAPES = {
    "networks": Fields(
        {
            **_IDS,
            "NetworkAdapterName": STR,
            "Subnets": ListOf(_V1_SUBNET),
            "ManagementIP": STR,
            "DrMacAddress": STR,
            "DNSSuffix": STR,
            "DNSServerList": ANY,
        },
        hns=True,
    ),
    "endpoints": Fields(
        {
            **_IDS,
            "VirtualNetwork": STR,
            "VirtualNetworkName": STR,
            "MacAddress": STR,
            "IPAddress": STR,
            "IPv6Address": STR,
            "GatewayAddress": STR,
            "PrefixLength": INT,
            "IsRemoteEndpoint": BOOL,
            "Namespace": Fields({"ID": STR}, hns=True),
            "SharedContainers": ListOf(STR),
        },
        hns=True,
    ),
    "namespaces": Fields({"ID": STR}, hns=True),
    "policylists": Fields({"ID": STR, "References": ListOf(STR), "Policies": _POLICIES}, hns=True),
}

#: Every member replay reads as JSON, and its shape. ``files/*`` are the node's own files, read by
#: the doctor's own readers as they read them on the node.
SHAPES: dict[str, Any] = {
    MANIFEST: MANIFEST_SHAPE,
    STORE_MEMBER: Fields(
        {
            "dir": STR,
            "reservations": Null(ListOf(Fields({"ip": STR, "container": Null(STR), "ageSeconds": NUM}))),
            "problem": Null(_PROBLEM),
        }
    ),
    SANDBOX_MEMBER: Fields(
        {"dir": STR, "records": Null(ListOf(Fields(dict.fromkeys(("ip", "container", "ifname", "netns"), STR))))}
    ),
    VERSION_MEMBER: Fields({"Major": INT, "Minor": INT}),  # read by exact key, null not as absent
    HCS_MEMBER: ListOf(STR),
    **{f"hns/v2/{member}.json": ListOf(V2_SHAPES[kind], MAX_DOCUMENTS) for kind, member in V2_MEMBERS.items()},
    **{f"hns/v1/{member}.json": ListOf(V1_SHAPES[member], MAX_DOCUMENTS) for member in V1_MEMBERS},
}
