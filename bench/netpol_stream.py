"""A list+watch stream at the bench's scale, in the shapes a real kube-apiserver sends (those of
tests/data/netpol/recorded.json, which bench/record_netpol_stream.py took from one): paged
lists (``kind``, ``apiVersion``, ``metadata`` with ``resourceVersion``, ``continue`` and
``remainingItemCount``, items without kind), then watch events (``type`` and an ``object`` with
kind and apiVersion; a BOOKMARK holds only the resourceVersion). The content is
bench/netpol_translate.py's cluster: 5,000 pods on 50 nodes, 100 of them on ``NODE``, 200
policies.

The stream is a file of JSON lines, each ``{"kind": K, "page": LIST}`` or
``{"kind": K, "step": S, "event": EVENT}``: read a line at a time, as the agent reads the API
server. ``shape`` is what the test compares with the recording.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import netpol_translate as scale

PAGE = 500
#: (list kind, apiVersion, object kind) of each watched kind.
KINDS = {
    "namespaces": ("NamespaceList", "v1", "Namespace"),
    "pods": ("PodList", "v1", "Pod"),
    "networkpolicies": ("NetworkPolicyList", "networking.k8s.io/v1", "NetworkPolicy"),
}
CREATED = "2026-12-07T10:00:00Z"
#: The steps of the stream after the lists: ``CHANGES`` policy changes (``change0``…: one policy's
#: port moved and back, in turn), then an event that changes nothing the model reads (``noop``:
#: another node's pod written again, then a bookmark).
CHANGES = 5
STEPS = (*(f"change{n}" for n in range(CHANGES)), "noop")


def _meta(obj: dict, n: int, rv: int) -> dict:
    meta = obj["metadata"]
    out = {"name": meta["name"], **({"namespace": meta["namespace"]} if "namespace" in meta else {})}
    out |= {"uid": f"00000000-0000-4000-8000-{n:012d}", "resourceVersion": str(rv), "creationTimestamp": CREATED}
    if "labels" in meta:
        out["labels"] = meta["labels"]
    fields = {"f:metadata": {"f:labels": {".": {}}}, "f:spec": {}}
    out["managedFields"] = [
        {"manager": "kubectl", "operation": "Update", "apiVersion": "v1", "time": CREATED, "fieldsType": "FieldsV1",
         "fieldsV1": fields}
    ]  # fmt: skip
    return out


def dressed(kind: str, obj: dict, n: int, rv: int) -> dict:
    """``obj`` (netpol_translate's: what the model reads) as the API server lists it."""
    if kind == "namespaces":
        return {"metadata": _meta(obj, n, rv), "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}}
    if kind == "networkpolicies":
        return {"metadata": {**_meta(obj, n, rv), "generation": 1}, "spec": obj["spec"]}
    spec = {
        **obj["spec"],
        "restartPolicy": "Always",
        "dnsPolicy": "ClusterFirst",
        "serviceAccountName": "default",
        "schedulerName": "default-scheduler",
    }
    for c in spec["containers"]:
        c |= {"image": "registry.k8s.io/pause:3.10", "imagePullPolicy": "IfNotPresent", "resources": {}}
    ip = obj["status"]["podIP"]
    status = {"phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}]}  # what the recording holds (no kubelet)
    return {"metadata": {**_meta(obj, n, rv), "generation": 1}, "spec": spec, "status": status}


def changed_policy(policy: dict) -> dict:
    """The policy with its first ingress rule's 443 made 8443 (or its egress DNS port moved)."""
    spec = json.loads(json.dumps(policy["spec"]))
    for rule in spec.get("ingress") or spec.get("egress") or ():
        for port in rule.get("ports") or ():
            if port.get("port") in (443, 53):
                port["port"] = 8443 if port["port"] == 443 else 5353
                return {**policy, "spec": spec}
    raise ValueError(f"{policy['metadata']['name']}: no port to move")


def lines(changed: int = 0) -> list[dict]:
    """The stream's lines; ``changed``: the index of the policy the ``change`` step modifies."""
    namespaces, pods, policies = scale.objects()
    out, rv = [], 1000
    for kind, objs in (("namespaces", namespaces), ("pods", pods), ("networkpolicies", policies)):
        list_kind, api, _ = KINDS[kind]
        items = [dressed(kind, obj, i, rv - len(objs) + i) for i, obj in enumerate(objs)]
        for at in range(0, max(1, len(items)), PAGE):
            meta: dict = {"resourceVersion": str(rv)}
            rest = len(items) - at - PAGE
            if rest > 0:
                meta |= {"continue": f"page-{kind}-{at + PAGE}", "remainingItemCount": rest}
            page = {"kind": list_kind, "apiVersion": api, "metadata": meta, "items": items[at : at + PAGE]}
            out.append({"kind": kind, "page": page})
    _, api, obj_kind = KINDS["networkpolicies"]
    for n in range(CHANGES):
        rv += 1
        policy = changed_policy(policies[changed]) if n % 2 == 0 else policies[changed]
        event = {
            "type": "MODIFIED",
            "object": {"kind": obj_kind, "apiVersion": api, **dressed("networkpolicies", policy, changed, rv)},
        }
        out.append({"kind": "networkpolicies", "step": f"change{n}", "event": event})
    rv += 1
    far = next(i for i, p in enumerate(pods) if p["spec"]["nodeName"] != scale.NODE)
    pod = dressed("pods", pods[far], far, rv)
    pod["metadata"]["managedFields"][0]["time"] = "2026-12-07T10:05:00Z"  # a status write that moves nothing read
    out.append(
        {
            "kind": "pods",
            "step": "noop",
            "event": {"type": "MODIFIED", "object": {"kind": "Pod", "apiVersion": "v1", **pod}},
        }
    )
    bookmark = {
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": {"resourceVersion": str(rv)},
        "spec": {"containers": None},
        "status": {},
    }
    out.append({"kind": "pods", "step": "noop", "event": {"type": "BOOKMARK", "object": bookmark}})
    return out


def write(path: Path, changed: int = 0) -> Path:
    with path.open("w") as f:
        for line in lines(changed):
            f.write(json.dumps(line, separators=(",", ":")) + "\n")
    return path


#: Maps whose keys are the user's (labels, selectors) or the server's field sets: not shape.
_FREE = {"labels", "matchLabels", "fieldsV1", "annotations"}


def shape(doc: object, at: str = "") -> set[str]:
    """The dotted paths of ``doc``'s keys (a list's items under ``[]``), user-keyed maps as one."""
    if isinstance(doc, dict):
        if at.rsplit(".", 1)[-1] in _FREE:
            return {at}
        found = {at} if at else set()
        for k, v in doc.items():
            found |= shape(v, f"{at}.{k}" if at else k)
        return found
    if isinstance(doc, list):
        return set().union(*(shape(v, f"{at}[]") for v in doc)) if doc else {at}
    return {at}
