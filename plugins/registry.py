"""Every command wincni ships, in one place.

The PyInstaller spec builds one executable per entry, in-process delegation runs the plugins
from it, each plugin's ``PLUGIN`` takes its name from it, the doctor finds the endpoint plugins'
flavors here, and unit tests hold setup.cfg's console scripts and build.ps1's ``$Commands`` equal
to it. Plain data: in-process delegation reads it on the pod path.
"""

# The CNI plugins: name -> Python package. Each has ``__main__`` (``entry()``, ``main(env, stdin, stdout)``
# and ``PLUGIN``).
PLUGINS = {
    "win-bridge": "plugins.win_bridge",
    "win-overlay": "plugins.win_overlay",
    "flannel": "plugins.flannel",
    "host-local": "plugins.ipam_host_local",
}
# The plugins that create HNS endpoints; each Python package has ``flavor.FLAVOR``.
ENDPOINT_PLUGINS = ("win-bridge", "win-overlay")
# The operator tools: name -> module with ``entry()``.
TOOLS = {"hnsctl": "tools.hnsctl", "wincni": "tools.wincni.__main__"}
COMMANDS = (*PLUGINS, *TOOLS)


def name_of(package: str) -> str:
    """The command name of the plugin in ``package`` (``plugins.win_bridge`` -> ``win-bridge``):
    a plugin's ``PLUGIN`` and flavor take their name from here, so it is written once."""
    return next(name for name, pkg in PLUGINS.items() if pkg == package)


def entry_module(name: str) -> str:
    """The module whose ``entry()`` runs command ``name``."""
    return PLUGINS[name] + ".__main__" if name in PLUGINS else TOOLS[name]


def sibling(name: str) -> str | None:
    """The entry module of plugin ``name`` when it is one we ship, else None: what ``plugins/plugin.py``
    hands the CNI core for in-process delegation (the core imports no registry)."""
    return entry_module(name) if name in PLUGINS else None


def flavor_module(name: str) -> str:
    """The module holding endpoint plugin ``name``'s ``FLAVOR``."""
    if name not in ENDPOINT_PLUGINS:
        raise KeyError(name)
    return PLUGINS[name] + ".flavor"
