"""win-bridge: pod endpoints on an HNS L2Bridge network (flannel host-gw). Run as ``win-bridge`` or ``python -m plugins.win_bridge``."""

from plugins.plugin import plugin


def handlers():
    """ADD, DEL, CHECK, GC and STATUS: the HNS endpoint lifecycle with this plugin's flavor,
    imported only once skel has a config it may run."""
    from plugins.win_bridge.flavor import FLAVOR
    from plugins.winnet.lifecycle import Lifecycle

    return Lifecycle(FLAVOR).handlers()


PLUGIN = plugin(__package__, handlers, "HNS L2Bridge pod networking for Windows nodes (HCN V2 and HNS V1)")
main = PLUGIN.main
entry = PLUGIN.entry

if __name__ == "__main__":
    entry()
