"""win-overlay: pod endpoints on an HNS Overlay (VXLAN) network (flannel vxlan). Run as ``win-overlay`` or ``python -m plugins.win_overlay``."""
from plugins.cni.skel import PluginSpec

SPEC = PluginSpec(name='win-overlay', handlers='plugins.win_overlay.commands',
                  description='HNS Overlay (VXLAN) pod networking for Windows nodes (HCN V2 and HNS V1)')
main = SPEC.main
entry = SPEC.entry

if __name__ == "__main__":
    entry()
