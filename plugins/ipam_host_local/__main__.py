"""host-local: IPAM from local ranges, stored on disk like the Go plugin. Run as ``host-local`` or ``python -m plugins.ipam_host_local``."""

from plugins.plugin import plugin


def handlers():
    """ADD, DEL, CHECK, GC and STATUS (``commands.HANDLERS``), imported only once skel has a config it may run."""
    from plugins.ipam_host_local.commands import HANDLERS

    return HANDLERS


PLUGIN = plugin(__package__, handlers, "host-local IPAM: addresses from local ranges, stored on disk")
main = PLUGIN.main
entry = PLUGIN.entry

if __name__ == "__main__":
    entry()
