"""What makes win-overlay win-overlay: Overlay (VXLAN) networks, the network's gateway, MACs
derived from the pod IP, the provider-address policy, and VXLAN sanity for Linux flannel."""

from __future__ import annotations

import os

from basics import ipaddr

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

from plugins.registry import name_of
from plugins.winnet import policies as pol
from plugins.winnet.config import NetConf
from plugins.winnet.documents import Address
from plugins.winnet.lifecycle import Flavor
from plugins.winnet.network import FLANNEL_VNI_MIN, FLANNEL_VXLAN_PORT

DEFAULT_MAC_PREFIX = "0E-2A"


def overlay_mac(prefix: str, ipv4: str) -> str:
    """win-overlay's MAC: the prefix then the four IPv4 bytes (10.244.1.5 -> 0E-2A-0a-f4-01-05)."""
    return prefix + "".join(f"-{b:02x}" for b in ipaddr.ip_address(ipv4).packed)


class OverlayFlavor(Flavor):
    def gateway(self, address: str, network: Any) -> str:
        ip = ipaddr.ip_interface(address).ip
        subnets = network.subnets
        for s in subnets:
            if ip in ipaddr.ip_network(s.prefix, strict=False) and s.gateway:
                return s.gateway
        return subnets[0].gateway or "" if subnets else ""

    def mac(self, conf: NetConf, addresses: tuple[Address, ...]) -> str:
        v4 = next((a for a in addresses if a.version == 4), None)
        return overlay_mac(conf.endpoint_mac_prefix or DEFAULT_MAC_PREFIX, v4.ip) if v4 else ""

    def automatic_policies(
        self, policies: list[dict], conf: NetConf, network: Any, addresses: tuple[Address, ...], form: Any
    ) -> list[dict]:
        out = pol.ProviderAddress.add(policies, network.management_ip or "", form)
        if conf.ip_masq and network.subnets:
            out = pol.OutboundNat.add_exception(out, network.subnets[0].prefix, form)
        return out

    def network_problems(self, network: Any) -> list[str]:
        """VXLAN settings Linux flannel peers cannot talk to (Windows needs VNI >= 4096, port 4789)."""
        problems = []
        vsid = network.vsid
        if vsid is not None and vsid < FLANNEL_VNI_MIN:
            problems.append(
                f"overlay network {network.name} has VSID (VNI) {vsid}; flannel on Windows needs a VNI "
                f'>= {FLANNEL_VNI_MIN} (set "VNI": 4096 in net-conf.json and recreate the network)'
            )
        port = network.vxlan_port
        if port is not None and port != FLANNEL_VXLAN_PORT:
            problems.append(
                f"overlay network {network.name} uses VXLAN UDP port {port}; Linux flannel peers use "
                f'{FLANNEL_VXLAN_PORT} (set "Port": 4789 in net-conf.json)'
            )
        return problems


FLAVOR = OverlayFlavor(
    plugin=name_of(__package__),
    network_types=("Overlay",),
    ipv6=False,
    schema_path=os.path.join(os.path.dirname(__file__), "schema.json"),
)
