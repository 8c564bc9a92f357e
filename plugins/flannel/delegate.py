"""Lease + flannel config (+ flanneld's backend) -> the config the delegate plugin runs with.

Windows semantics on every OS, so a Linux dev box produces what a node would: the delegate does
the NAT itself (``ipMasq`` is FLANNEL_IPMASQ, not inverted as on Linux) and host-local hands out
the node's subnet.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

from basics import jsontext
from plugins.cni.errors import INVALID_CONFIG, CniError

from . import netconf
from .config import FlannelConf
from .subnet_env import Lease

DEFAULT_TYPE = "win-bridge"
DEFAULT_CNI_VERSION = "0.2.0"  # the reference's types020.ImplementedSpecVersion


def build(conf: FlannelConf, lease: Lease, backend: netconf.Backend | None) -> dict[str, Any]:
    _check_rules(conf.delegate)
    if backend is not None:
        netconf.check(backend, conf.name)
    network = lease.first_ipv4_network
    if network is None or lease.subnet is None or lease.subnet.version != 4:
        raise CniError(
            INVALID_CONFIG,
            f"{conf.subnet_file} has no IPv4 FLANNEL_NETWORK and FLANNEL_SUBNET",
            "Windows pod networks are IPv4: flanneld must run with an IPv4 Network in net-conf.json",
        )
    out = dict(conf.delegate)
    out["name"] = conf.name
    if "type" not in out:
        out["type"] = backend.delegate_type() if backend is not None else DEFAULT_TYPE
    out["ipMasq"] = lease.ipmasq
    out["ipMasqNetwork"] = str(network)
    out["cniVersion"] = conf.cni_version or DEFAULT_CNI_VERSION
    out["ipam"] = pod_ipam(conf, lease)
    if conf.runtime_config is not None:
        # Only what the delegates read: the config is saved per pod and run again at DEL.
        from plugins.cni.runtimeconfig import KEYS

        out["runtimeConfig"] = {k: v for k, v in conf.runtime_config.items() if k in KEYS}
    return out


def pod_ipam(conf: FlannelConf, lease: Lease) -> dict[str, Any]:
    """The IPAM section the pods get: host-local over the lease's subnet. Beyond the reference
    (which ignores it on Windows): a top-level "ipam" adds host-local keys such as dataDir; type
    and subnet stay the lease's. ``wincni sourcevip`` reserves in the same store by this rule."""
    return {**conf.ipam, "type": "host-local", "subnet": str(lease.subnet)}


def encode(doc: dict[str, Any]) -> bytes:
    """Go's json.Marshal of a map: compact, keys sorted, so saved files match the reference byte for byte."""
    return jsontext.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def _check_rules(delegate: Any) -> None:
    """The reference's rules (and wording): flannel owns the delegate's name and IPAM."""
    if "type" in delegate and not isinstance(delegate["type"], str):
        raise CniError(
            INVALID_CONFIG,
            "'delegate' dictionary, if present, must have (string) 'type' field",
            'e.g. "delegate": {"type": "win-bridge"}',
        )
    for key in ("name", "ipam"):
        if any(k.lower() == key for k in delegate):
            raise CniError(
                INVALID_CONFIG,
                f"'delegate' dictionary must not have '{key}' field, it'll be set by flannel",
                f'remove "{key}" from "delegate": flannel sets it from the config name and subnet.env',
            )
