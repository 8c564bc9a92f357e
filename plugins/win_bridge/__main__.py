"""win-bridge: pod endpoints on an HNS L2Bridge network (flannel host-gw). Run as ``win-bridge`` or ``python -m plugins.win_bridge``."""
from plugins.cni.skel import PluginSpec

SPEC = PluginSpec(name='win-bridge', handlers='plugins.win_bridge.commands',
                  description='HNS L2Bridge pod networking for Windows nodes (HCN V2 and HNS V1)')
main = SPEC.main
entry = SPEC.entry

if __name__ == "__main__":
    entry()
