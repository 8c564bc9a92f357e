"""host-local: IPAM from local ranges, stored on disk like the Go plugin. Run as ``host-local`` or ``python -m plugins.ipam_host_local``."""
from plugins.cni.skel import PluginSpec

SPEC = PluginSpec(name='host-local', handlers='plugins.ipam_host_local.commands',
                  description='host-local IPAM: addresses from local ranges, stored on disk')
main = SPEC.main
entry = SPEC.entry

if __name__ == "__main__":
    entry()
