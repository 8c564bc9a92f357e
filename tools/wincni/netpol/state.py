"""The state the agent leaves for ADD (``plugins.winnet.netpolstate`` reads it, and says what
it holds): this node's pods' rules and each policy namespace's safe default, written only when
it changed, atomically, in an admin-only folder."""

from __future__ import annotations

import dataclasses
import os

from basics import jsontext
from plugins.netpol import model, resources, translate
from plugins.winnet import netpolstate
from plugins.winnet.policies import V2
from tools.wincni.netpol import wanted as W

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Mapping, Sequence


def document(
    cluster: resources.Cluster, node: str, node_addresses: Sequence[Any], known: Mapping[str, Any] | None = None
) -> dict:
    """Pure: the state for ``node``. Each pod's rules are made without its address (ADD knows
    a pod before the API server shows its address), so they lack only its own-address allow.
    ``known``: accesses already worked out, by pod (a pod's access does not depend on its own
    address, only its rules do)."""
    memo: dict = {}
    pods = {}
    for pod in sorted((p for p in cluster.pods if p.node == node), key=lambda p: p.key):
        access = (known or {}).get(pod.key) or model.access(cluster, pod, memo)
        if W.isolates(access):
            anonymous = dataclasses.replace(access, pod=dataclasses.replace(pod, ip=None))
            pods[pod.key] = translate.endpoint_acls(anonymous, node_addresses, V2)
    namespaces = {}
    for ns in sorted({p.namespace for p in cluster.policies}):
        held = cluster.policies_in(ns)
        ingress, egress = any(p.ingress is not None for p in held), any(p.egress is not None for p in held)
        namespaces[ns] = _closed(ns, node, ingress, egress, node_addresses)
    closed = _closed("", node, True, True, node_addresses)
    return {"version": netpolstate.VERSION, "node": node, "pods": pods, "namespaces": namespaces, "closed": closed}


def _closed(namespace: str, node: str, ingress: bool, egress: bool, node_addresses: Sequence[Any]) -> list[dict]:
    """A pod the agent does not know yet: each direction given closed, the node allowed in."""
    stand_in = resources.Pod(namespace, "", {}, None, node, ())
    access = model.Access(stand_in, _closed_if(ingress), _closed_if(egress), ())
    return translate.endpoint_acls(access, node_addresses, V2)


def _closed_if(isolated: bool) -> model.Direction:
    return model.Direction(True, ()) if isolated else model.OPEN


class StateFile:
    """Writes the state when it differs from what this process wrote last."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.last: bytes | None = None

    def write(self, doc: dict) -> bool:
        """Whether it wrote (``False``: unchanged)."""
        from basics.safefs import secure_folder

        data = jsontext.dumps(doc, separators=(",", ":"), sort_keys=True).encode()
        if data == self.last:
            return False
        folder = secure_folder(os.path.dirname(self.path))
        name = os.path.basename(self.path)
        temp = f".{name}.{os.getpid()}.tmp"
        try:
            fd = folder.open_new(temp, 0o600)
            try:
                os.write(fd, data)
                os.fsync(fd)
            finally:
                os.close(fd)
            folder.rename(temp, name, replace=True)
        finally:
            folder.close()
        self.last = data
        return True
