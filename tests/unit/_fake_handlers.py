"""Handlers for in-process skel tests: each records its Request and does what the config's "action" says.

There is deliberately no ``gc``: the skel must treat a plugin without GC as having nothing to collect.
"""

from plugins.cni.errors import TRY_AGAIN_LATER, CniError
from plugins.cni.result import IPConfig, Result
from plugins.cni.skel import Handlers

seen = []


def _act(req):
    seen.append(req)
    _ = req.cni_args, req.runtime_config, req.prev_result  # parse every lazy view: bad input must be a CNI error
    action = req.conf.get("action")
    if action == "crash":
        raise RuntimeError("boom\nsecond line")
    if action == "fail":
        raise CniError(TRY_AGAIN_LATER, "network not ready", "try again later")


def add(req):
    _act(req)
    return req.conf.get("rawResult") or Result(ips=[IPConfig(address="10.0.0.5/24", gateway="10.0.0.1")])


def delete(req):
    _act(req)


def check(req):
    _act(req)


def status(req):
    _act(req)


HANDLERS = Handlers(add=add, delete=delete, check=check, status=status)
