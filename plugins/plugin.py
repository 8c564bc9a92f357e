"""What every plugin hands the CNI core, which imports neither libhns nor the registry: the HNS
backend's name for the debug log's start line (every plugin's, so a node on the simulator shows in
any log; asked of winnet's adapters, the plugins' one way to HNS, only when it is called) and the
registry's ``sibling`` lookup for in-process delegation (plain data, handed over as it is)."""

from plugins.cni.skel import Plugin
from plugins.registry import name_of, sibling


def backend_name(env, platform):
    """The backend this command's HNS calls would use (``LIBHNS_BACKEND``, else the platform's)."""
    from plugins.winnet.hnsapi import backend_name as name

    return name(env, platform)


def plugin(package, handlers, description):
    """The ``PLUGIN`` of the plugin in ``package`` (its ``__package__``), named as the registry names it."""
    return Plugin(name_of(package), handlers, description, backend=backend_name, siblings=sibling)
