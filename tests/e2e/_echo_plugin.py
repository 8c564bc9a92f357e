"""A minimal CNI plugin over the shared core, run as a real process by the protocol tests.

Its handlers are this module's functions, so it works both as ``python _echo_plugin.py`` and
``python -m``. ADD answers with a fixed address; ``"crash": true`` in the config makes it fail
unexpectedly.
"""

from plugins.cni import skel
from plugins.cni.result import IPConfig, Result


def handlers():
    return skel.Handlers(add=add, delete=delete, check=delete, status=delete)


PLUGIN = skel.Plugin("echo", handlers, "a CNI plugin for protocol tests")


def add(req):
    if req.conf.get("crash"):
        raise ValueError("unexpected\nmultiline")
    return Result(ips=[IPConfig(address="10.0.0.5/24", gateway="10.0.0.1")])


def delete(req):
    return None


if __name__ == "__main__":
    skel.console_entry(PLUGIN)
