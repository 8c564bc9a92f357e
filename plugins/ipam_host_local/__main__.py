"""host-local: IPAM from local ranges, stored on disk like the Go plugin. Run as ``host-local`` or ``python -m plugins.ipam_host_local``."""

from plugins.spec import plugin


def handlers():
    """The command handlers, imported only once a real command is valid."""
    from plugins.ipam_host_local import commands

    return commands


SPEC = plugin(__package__, handlers, "host-local IPAM: addresses from local ranges, stored on disk")
main = SPEC.main
entry = SPEC.entry

if __name__ == "__main__":
    entry()
