"""win-overlay: pod endpoints on an HNS Overlay (VXLAN) network (flannel vxlan). Run as ``win-overlay`` or ``python -m plugins.win_overlay``."""

from plugins.spec import plugin


def handlers():
    """The command handlers, imported only once a real command is valid."""
    from plugins.win_overlay import commands

    return commands


SPEC = plugin(__package__, handlers, "HNS Overlay (VXLAN) pod networking for Windows nodes (HCN V2 and HNS V1)")
main = SPEC.main
entry = SPEC.entry

if __name__ == "__main__":
    entry()
