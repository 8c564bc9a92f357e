"""What makes win-bridge win-bridge: L2Bridge/L2Tunnel networks, the .2 gateway, ipMasqNetwork."""

from __future__ import annotations

import os

from basics import ipaddr

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

from basics import jsontext
from plugins.registry import name_of
from plugins.winnet import policies as pol
from plugins.winnet.config import NetConf
from plugins.winnet.documents import Address
from plugins.winnet.lifecycle import Flavor


def bridge_gateway(interface: str) -> str:
    """win-bridge's gateway: the subnet's second address (.2, ::2), where flanneld's cbr0_ep lives."""
    net = ipaddr.ip_interface(interface).network
    return str(net.network_address + 2)


class BridgeFlavor(Flavor):
    def gateway(self, address: str, network: Any) -> str:
        return bridge_gateway(address)

    def ipam_conf(self, conf: dict) -> dict:
        """Keep host-local from handing out .2: win-bridge makes it every pod's gateway, and on a
        flannel host-gw node flanneld's cbr0_ep endpoint owns it. Only IPv4 ranges with no
        rangeStart of their own are touched, so an explicit range always wins."""
        ipam = conf.get("ipam")
        if not isinstance(ipam, dict) or ipam.get("type") != "host-local":
            return conf
        out = {**conf, "ipam": jsontext.loads(jsontext.dumps(ipam))}  # a deep copy (copy costs an import)
        _start_after_gateway(out["ipam"])
        ranges = out["ipam"].get("ranges")
        for rset in ranges if isinstance(ranges, list) else []:  # host-local names what else is wrong
            for rng in rset if isinstance(rset, list) else []:
                if isinstance(rng, dict):
                    _start_after_gateway(rng)
        return out

    def automatic_policies(
        self, policies: list[dict], conf: NetConf, network: Any, addresses: tuple[Address, ...], form: Any
    ) -> list[dict]:
        return pol.OutboundNat.add_exception(policies, conf.ip_masq_network, form)


def _start_after_gateway(rng: dict) -> None:
    subnet = rng.get("subnet")
    if not isinstance(subnet, str) or rng.get("rangeStart"):
        return
    try:
        net = ipaddr.ip_network(subnet, strict=False)
    except ValueError:
        return  # host-local reports the bad subnet with its own wording
    if net.version == 4 and net.num_addresses >= 8:
        rng["rangeStart"] = str(net.network_address + 3)


FLAVOR = BridgeFlavor(
    plugin=name_of(__package__),
    network_types=("L2Bridge", "L2Tunnel"),
    schema_path=os.path.join(os.path.dirname(__file__), "schema.json"),
)
