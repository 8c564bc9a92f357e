"""win-overlay: pod endpoints on an HNS Overlay (VXLAN) network (flannel vxlan). Run as ``win-overlay`` or ``python -m plugins.win_overlay``."""

from plugins.plugin import plugin


def handlers():
    """ADD, DEL, CHECK, GC and STATUS: the HNS endpoint lifecycle with this plugin's flavor,
    imported only once skel has a config it may run."""
    from plugins.win_overlay.flavor import FLAVOR
    from plugins.winnet.lifecycle import Lifecycle

    return Lifecycle(FLAVOR).handlers()


PLUGIN = plugin(__package__, handlers, "HNS Overlay (VXLAN) pod networking for Windows nodes (HCN V2 and HNS V1)")
main = PLUGIN.main
entry = PLUGIN.entry

if __name__ == "__main__":
    entry()
