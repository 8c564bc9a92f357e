"""What every plugin hands the CNI core, which imports neither libhns nor the registry: the HNS
backend's name for the debug log's start line (every plugin's, so a node on the simulator shows in
any log) and our sibling plugins for in-process delegation. Both import only when called."""
from plugins.cni.skel import PluginSpec


def backend_name(env, platform):
    """The backend this command's HNS calls would use (``LIBHNS_BACKEND``, else the platform's)."""
    from libhns.backend import backend_name as name
    return name(env, platform)


def sibling(name):
    """The entry module of plugin ``name`` when it is one we ship, else None."""
    from plugins.registry import PLUGINS, entry_module
    return entry_module(name) if name in PLUGINS else None


def plugin(package, handlers, description):
    """The ``SPEC`` of the plugin in ``package`` (its ``__package__``), named as the registry names it."""
    from plugins.registry import name_of
    return PluginSpec(name_of(package), handlers, description, backend=backend_name, siblings=sibling)
