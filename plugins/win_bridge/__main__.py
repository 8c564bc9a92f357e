"""win-bridge: pod endpoints on an HNS L2Bridge network (flannel host-gw). Run as ``win-bridge`` or ``python -m plugins.win_bridge``."""

from plugins.spec import plugin


def handlers():
    """The command handlers, imported only once a real command is valid."""
    from plugins.win_bridge import commands

    return commands


SPEC = plugin(__package__, handlers, "HNS L2Bridge pod networking for Windows nodes (HCN V2 and HNS V1)")
main = SPEC.main
entry = SPEC.entry

if __name__ == "__main__":
    entry()
