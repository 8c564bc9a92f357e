"""NetworkPolicy from a pod's first packet: the ACLs ADD puts on a new endpoint from the node
agent's state (``wincni netpol`` writes it), so a pod a policy isolates is never open, not even
before the agent's first apply.

The state is one JSON file in the plugins' admin-only folder (``network.netpol_state``): ``pods`` holds, for each
pod of this node the agent knows (``<namespace>/<name>``), its rules as V2 ACL policies, and
``namespaces`` holds, for each namespace with a policy, the safe default of a pod the agent does
not know yet: every direction a policy of that namespace isolates closed, the node's addresses
allowed in (kubelet's probes), the other direction open. A pod known to the agent gets its own
rules; a pod of another namespace, none (no policy can select it). Both lack the pod's allow to
its own address, which the agent adds with its first apply: until then less passes, never more.
A runtime that does not say which pod (no ``K8S_POD_NAMESPACE`` in CNI_ARGS) gets ``closed``:
both directions closed, the node allowed.

A node without the agent pays one absent-file check (the lifecycle's, before this module is
even imported). The file is read as every store is read
(``basics.safefs.open_read``: no link followed, only an administrator's own regular file, a FIFO
not waited on), at most ``MAX_STATE`` bytes; a state that cannot be read fails the ADD (code
5, the runtime retries) rather than start the pod open.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Mapping

ENV = "WINCNI_NETPOL_STATE"
MAX_STATE = 32 << 20
VERSION = 1
#: The longest the running agent leaves the state unwritten (its ``status.alive``): the doctor's
#: proof that it runs.
HEARTBEAT = 60.0


def acls(path: str, cni_args: Mapping[str, str], form: Any) -> list[dict]:
    """The NetworkPolicy ACLs a new endpoint of the pod ``cni_args`` names gets, in ``form``,
    from the state at ``path`` (``network.netpol_state``; none when it is absent)."""
    from basics import jsontext
    from basics.safefs import UnsafePath, open_read
    from plugins.cni.errors import IO_FAILURE, CniError

    fix = "the NetworkPolicy agent (wincni netpol) writes it: check its log, or remove the file to run without it"
    try:
        fd = open_read(path)
    except FileNotFoundError:
        return []
    except UnsafePath as exc:
        raise CniError(IO_FAILURE, f"refusing the NetworkPolicy state {path}: {exc.problem}", exc.fix) from exc
    except OSError as exc:
        raise CniError(IO_FAILURE, f"cannot read the NetworkPolicy state {path}: {exc.strerror or exc}", fix) from exc
    with open(fd, "rb") as f:
        data = f.read(MAX_STATE + 1)
    try:
        doc = jsontext.loads(data) if len(data) <= MAX_STATE else None
    except ValueError:
        doc = None
    if not isinstance(doc, dict) or doc.get("version") != VERSION:
        raise CniError(IO_FAILURE, f"the NetworkPolicy state {path} is not a state this plugin reads", fix)
    namespace, name = cni_args.get("K8S_POD_NAMESPACE", ""), cni_args.get("K8S_POD_NAME", "")
    if not namespace:
        rules = doc.get("closed")
    else:
        rules = _get(doc, "pods", f"{namespace}/{name}")
        rules = _get(doc, "namespaces", namespace) if rules is None else rules
    if rules is None:
        return []
    if not isinstance(rules, list) or not all(isinstance(r, dict) for r in rules):
        raise CniError(IO_FAILURE, f"the NetworkPolicy state {path} holds rules that are not ACL policies", fix)
    return [form.fit(r) for r in rules]


def _get(doc: dict, table: str, key: str) -> Any:
    found = doc.get(table)
    return found.get(key) if isinstance(found, dict) else None
