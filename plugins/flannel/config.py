"""flannel's own config keys, their node defaults, and the sandbox ID that keys saved state."""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Mapping

from basics import jsontext
from basics.jsonci import get_ci
from plugins.cni.config import node_path, validate_for
from plugins.cni.env import MAX_CONTAINER_ID
from plugins.cni.errors import INVALID_ENV, CniError
from plugins.cni.names import file_name_problem, is_name
from plugins.cni.record import FrozenRecord

SUBNET_FILE = "/run/flannel/subnet.env"
DATA_DIR = "/var/lib/cni/flannel"
NET_CONF = "/etc/kube-flannel/net-conf.json"

# Keys flannel reads, in the spelling the schema and error paths use (lookups are case-insensitive like Go).
_KEYS = ("subnetFile", "dataDir", "netConf", "delegate", "runtimeConfig", "ipam")
_SCHEMA: dict[str, Any] = {}


class FlannelConf(FrozenRecord):
    __slots__ = ("name", "cni_version", "subnet_file", "data_dir", "net_conf", "delegate", "runtime_config", "ipam")

    def __init__(
        self,
        name: str,
        cni_version: str,
        subnet_file: str,
        data_dir: str,
        net_conf: str,
        delegate: Mapping[str, Any],
        runtime_config: Mapping[str, Any] | None,
        ipam: Mapping[str, Any],
    ) -> None:
        self.name = name
        self.cni_version = cni_version  # as written; "" when absent (the delegate then gets 0.2.0, like the reference)
        self.subnet_file = subnet_file
        self.data_dir = data_dir
        self.net_conf = net_conf
        self.delegate = delegate
        self.runtime_config = runtime_config
        self.ipam = ipam  # extra host-local keys (dataDir, routes…); type and subnet come from the lease

    @classmethod
    def from_conf(cls, conf: Mapping[str, Any], platform: str, cwd: str, command: str = "ADD") -> "FlannelConf":
        """DEL and GC need only ``dataDir``: the saved delegate configs (and the name, checked by skel)."""
        found = validate_for(
            command,
            {k: v for k in _KEYS if (v := get_ci(conf, k)) is not None},
            _schema(),
            {"dataDir": "the delegate configs saved at ADD"},
        )
        found = {k: found.get(k) for k in _KEYS}
        return cls(
            name=conf["name"],
            cni_version=conf.get("cniVersion") or "",
            subnet_file=found["subnetFile"] or node_path(SUBNET_FILE, platform, cwd),
            data_dir=found["dataDir"] or node_path(DATA_DIR, platform, cwd),
            net_conf=found["netConf"] or node_path(NET_CONF, platform, cwd),
            delegate=found["delegate"] or {},
            runtime_config=found["runtimeConfig"],
            ipam=found["ipam"] or {},
        )


def sandbox_id(container_id: str, netns: str) -> str:
    """The reference's scratch key: dockershim app containers (``container:<id>``) share their sandbox's.

    Any ``x:<id>`` netns is split the same way so a file saved by the Go plugin is found by ours;
    the result becomes a file name, so it must look like a container ID.
    """
    key = container_id
    if netns and netns != "none":
        _, sep, rest = netns.partition(":")
        key = rest if sep else container_id
    problem = "has invalid characters" if not is_name(key) else file_name_problem(key, MAX_CONTAINER_ID)
    if problem:
        raise CniError(
            INVALID_ENV,
            f"invalid sandbox ID {key[:120]!r} in CNI_NETNS {netns[:120]!r}: it {problem}",
            "CNI_NETNS must be a namespace GUID, 'none', or 'container:<sandbox container ID>'",
        )
    return key


def _schema() -> dict[str, Any]:
    if not _SCHEMA:
        with open(os.path.join(os.path.dirname(__file__), "schema.json"), encoding="utf-8") as f:
            _SCHEMA.update(jsontext.loads(f.read()))
    return _SCHEMA
