"""flannel ADD / DEL / CHECK / GC / STATUS: build or recall the delegate config, then run the delegate.

ADD saves the delegate config before the delegate runs, so the DEL a runtime sends after a failed
ADD still reaches the delegate. DEL and CHECK use only the saved config: they work while flanneld
is down and after subnet.env changed.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

from basics import jsontext
from plugins.cni import log
from plugins.cni.config import valid_attachments
from plugins.cni.errors import (
    INTERNAL,
    INVALID_CONFIG,
    IO_FAILURE,
    NOT_AVAILABLE,
    TRY_AGAIN_LATER,
    UNKNOWN_CONTAINER,
    CniError,
)
from plugins.cni.skel import Handlers, Request

from . import delegate, netconf, subnet_env
from .config import FlannelConf, sandbox_id
from .store import Attachment, Store
from .subnet_env import LeaseError, LeaseProblem

# A missing subnet.env is flanneld not having its lease *yet*: ADD asks to retry, and reports what
# is wrong with a file that is there. STATUS answers only "not available" (CNI 1.1): without a
# usable lease this node takes no pods on the network, whatever the cause.
_LEASE_CODES = {
    "ADD": {
        LeaseProblem.MISSING: TRY_AGAIN_LATER,
        LeaseProblem.UNREADABLE: IO_FAILURE,
        LeaseProblem.MALFORMED: INVALID_CONFIG,
    },
    "STATUS": {
        LeaseProblem.MISSING: NOT_AVAILABLE,
        LeaseProblem.UNREADABLE: NOT_AVAILABLE,
        LeaseProblem.MALFORMED: NOT_AVAILABLE,
    },
}
_LEASE_FIX = {
    LeaseProblem.MISSING: "flanneld writes it once it holds this node's lease: check that the flanneld service "
    "(or the kube-flannel pod) runs on this node and read its log",
    LeaseProblem.UNREADABLE: "flannel needs to read the file flanneld writes: check its permissions, "
    'or set "subnetFile" to where flanneld writes it',
    LeaseProblem.MALFORMED: "Check the flannel pod log for this node: flanneld writes FLANNEL_NETWORK, "
    "FLANNEL_SUBNET, FLANNEL_MTU and FLANNEL_IPMASQ",
}
_VALID_ATTACHMENTS = "cni.dev/valid-attachments"


def add(req: Request) -> dict[str, Any]:
    conf = _conf(req)
    doc = _current_delegate(conf, req.command)
    data = delegate.encode(doc)
    Store(conf.data_dir).save(_key(req), data, _owner(req))
    log.event("delegate", child=doc["type"], conf=doc)
    result = req.exec_plugin(doc["type"], "ADD", data)
    if result is None:
        raise CniError(
            INTERNAL,
            f"delegate plugin {doc['type']} printed no result for ADD",
            "a CNI plugin must print its result on stdout",
        )
    return result


def delete(req: Request) -> None:
    store = Store(_conf(req).data_dir)
    key = _key(req)
    data = store.load(key)
    if data is not None:  # else never added, or already deleted: DEL succeeds
        doc = _saved(data, store.path(key))
        sent = _log_file(doc, req)
        req.exec_plugin(doc["type"], "DEL", data if sent is doc else delegate.encode(sent))
    store.release(key, _owner(req))  # also what an ADD killed while saving the config left


def check(req: Request) -> None:
    store = Store(_conf(req).data_dir)
    key = _key(req)
    data = store.load(key)
    if data is None:
        raise CniError(
            UNKNOWN_CONTAINER,
            f"no saved delegate config for sandbox {key}",
            f"{store.path(key)} is missing: this attachment was never added by flannel, or was deleted",
        )
    doc = _log_file(_saved(data, store.path(key)), req)
    # The delegate checks against the runtime's prevResult, so it must read it in the runtime's version.
    doc["cniVersion"] = req.cni_version
    if "prevResult" in req.conf:
        doc["prevResult"] = req.conf["prevResult"]
    req.exec_plugin(doc["type"], "CHECK", delegate.encode(doc))


def gc(req: Request) -> None:
    """Forward GC to every delegate type this network uses, then drop saved configs of dead attachments.

    Saved configs are pruned only after every delegate's GC succeeded, so a failed GC is retried
    with the same knowledge of which delegates are in use.
    """
    conf = _conf(req)
    attachments = valid_attachments(req.conf)
    if attachments is None:
        log.warning("GC without cni.dev/valid-attachments: nothing released")
        return
    valid = {Attachment(cid, ifname) for cid, ifname in attachments}
    store = Store(conf.data_dir)
    mine: dict[str, dict[str, Any]] = {}
    for key in store.keys():
        try:
            doc = _saved(store.load(key) or b"", store.path(key))
        except CniError as err:
            log.warning(f"GC leaves {store.path(key)} alone: {err}")
            continue
        if doc.get("name") == conf.name:  # dataDir may be shared with other flannel networks
            mine[key] = doc
    for doc in _gc_delegates(conf, list(mine.values())):
        doc = _log_file(doc, req)
        doc["cniVersion"] = req.cni_version
        if _VALID_ATTACHMENTS in req.conf:
            doc[_VALID_ATTACHMENTS] = req.conf[_VALID_ATTACHMENTS]
        req.exec_plugin(doc["type"], "GC", delegate.encode(doc))
    for key in mine:
        if store.prune(key, valid):
            from plugins.cni.ownership import freed

            freed("flannel GC", f"saved delegate config {store.path(key)}", "no attachment the runtime lists uses it")
            log.event("gc", removed=store.path(key))
    store.drop_orphans({a.container_id for a in valid} | set(store.keys()))


def status(req: Request) -> None:
    doc = _current_delegate(_conf(req), req.command)
    req.exec_plugin(doc["type"], "STATUS", delegate.encode(doc))


# ---------------------------------------------------------------- helpers


def _conf(req: Request) -> FlannelConf:
    return FlannelConf.from_conf(req.conf, req.platform, os.getcwd(), req.command)


def _key(req: Request) -> str:
    return sandbox_id(req.container_id, req.netns)


def _owner(req: Request) -> Attachment:
    return Attachment(req.container_id, req.ifname)


def _current_delegate(conf: FlannelConf, command: str) -> dict[str, Any]:
    """The delegate config from today's lease and net-conf.json (ADD, STATUS, GC)."""
    try:
        lease = subnet_env.load(conf.subnet_file)
    except LeaseError as err:
        raise CniError(
            _LEASE_CODES.get(command, _LEASE_CODES["ADD"])[err.problem],
            f"failed to load flannel 'subnet.env' file: {err.reason}",
            _LEASE_FIX[err.problem],
        ) from err
    return delegate.build(conf, lease, netconf.load(conf.net_conf))


def _gc_delegates(conf: FlannelConf, saved: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One config per delegate type in use: today's, plus a saved one for each other type.

    Today's config is best effort: GC must still clean up while flanneld is down or misconfigured.
    """
    by_type: dict[str, dict[str, Any]] = {}
    try:
        current = _current_delegate(conf, "GC")
        by_type[current["type"]] = current
    except CniError as err:
        log.warning(f"GC uses saved delegate configs only: {err}")
    for doc in saved:
        by_type.setdefault(doc["type"], doc)
    # runtimeConfig and prevResult describe one pod, not the network being collected.
    return [{k: v for k, v in doc.items() if k not in ("runtimeConfig", "prevResult")} for doc in by_type.values()]


def _log_file(doc: dict[str, Any], req: Request) -> dict[str, Any]:
    """``doc`` with the runtime's ``logFile`` (or none), never the one a saved config names: the
    delegate runs as SYSTEM/root, and whoever wrote that file must not pick what it appends to.
    ``doc`` itself when nothing changes, so DEL hands the delegate the saved bytes as they are."""
    mine = req.conf.get("logFile")
    if doc.get("logFile") == mine:
        return doc
    out = {k: v for k, v in doc.items() if k != "logFile"}
    if mine is not None:
        out["logFile"] = mine
    return out


def _saved(data: bytes, path: str) -> dict[str, Any]:
    try:
        doc = jsontext.loads(data)
    except ValueError:  # UnicodeDecodeError is a ValueError
        doc = None
    if not isinstance(doc, dict) or not isinstance(doc.get("type"), str):
        raise CniError(
            INVALID_CONFIG,
            f'failed to parse netconf: {path} is not a delegate config with a string "type"',
            f"delete {path} if its pod is gone (its HNS endpoint may then need removing with hnsctl)",
        )
    return doc


#: What ``__main__``'s ``handlers`` hands skel.
HANDLERS = Handlers(add=add, delete=delete, check=check, gc=gc, status=status)
