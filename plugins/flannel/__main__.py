"""flannel: the meta plugin that turns flanneld's lease into a delegate config. Run as ``flannel`` or ``python -m plugins.flannel``."""
from plugins.cni.skel import PluginSpec

SPEC = PluginSpec(name='flannel', handlers='plugins.flannel.commands',
                  description="reads flanneld's subnet.env and delegates to win-bridge or win-overlay")
main = SPEC.main
entry = SPEC.entry

if __name__ == "__main__":
    entry()
