"""flannel: the meta plugin that turns flanneld's lease into a delegate config. Run as ``flannel`` or ``python -m plugins.flannel``."""

from plugins.plugin import plugin


def handlers():
    """ADD, DEL, CHECK, GC and STATUS (``commands.HANDLERS``), imported only once skel has a config it may run."""
    from plugins.flannel.commands import HANDLERS

    return HANDLERS


PLUGIN = plugin(__package__, handlers, "reads flanneld's subnet.env and delegates to win-bridge or win-overlay")
main = PLUGIN.main
entry = PLUGIN.entry

if __name__ == "__main__":
    entry()
