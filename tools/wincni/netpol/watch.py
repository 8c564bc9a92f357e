"""List+watch of Pods, Namespaces and NetworkPolicies, keeping only what the policy model reads.

Each kind is a ``Reflector``: a paged list (``limit``/``continue``: no answer holds more than
``kubeapi.PAGE`` objects), then one streamed watch from the list's resourceVersion with
``allowWatchBookmarks`` (the API server then moves our resourceVersion on without events, so a
reconnect rarely replays or falls behind); a 410 Gone, in answer or as an ERROR event, lists
again; anything else reconnects after a backoff (``BACKOFF`` doubling to ``MAX_BACKOFF``, reset
by a watch that delivered). What is kept of each object is ``slim``'s: for 5,000 pods a few MB.
Between a failure and the next list the last objects stay, so the rules on the node stay too.

``apply_event`` is the pure part: one event on the kept objects, and whether the model's input
changed (a pod's status or a namespace's annotations change nothing it reads: no work follows).
"""

from __future__ import annotations

import http.client
import json
import threading

from tools.wincni.netpol import kubeapi

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable

BACKOFF, MAX_BACKOFF = 0.5, 30.0
#: The API server ends each watch after this; our socket waits a little longer for bookmarks.
WATCH_SECONDS = 300
_FINISHED = ("Succeeded", "Failed")


def slim_pod(obj: dict) -> dict:
    """Namespace, name, labels, node, container ports and address. A host-network pod has none
    of its own (NetworkPolicy does not apply to it), nor has a finished pod (its address may
    already be another's)."""
    meta, spec, status = obj.get("metadata") or {}, obj.get("spec") or {}, obj.get("status") or {}
    ports = [
        {k: p[k] for k in ("name", "containerPort", "protocol") if k in p}
        for c in spec.get("containers") or ()
        for p in c.get("ports") or ()
        if isinstance(p, dict)
    ]
    own = not spec.get("hostNetwork") and status.get("phase") not in _FINISHED
    return {
        "metadata": _meta(meta, labels=True),
        "spec": {"nodeName": spec.get("nodeName") or "", "containers": [{"ports": ports}] if ports else []},
        "status": {"podIP": status.get("podIP")} if own and status.get("podIP") else {},
    }


def slim_namespace(obj: dict) -> dict:
    return {"metadata": _meta(obj.get("metadata") or {}, labels=True)}


def slim_policy(obj: dict) -> dict:
    return {"metadata": _meta(obj.get("metadata") or {}, labels=False), "spec": obj.get("spec") or {}}


def _meta(meta: dict, labels: bool) -> dict:
    out = {k: meta[k] for k in ("namespace", "name") if k in meta}
    if labels:
        out["labels"] = dict(meta.get("labels") or {})
    return out


#: kind -> (API path, slim)
KINDS: dict[str, tuple[str, Callable[[dict], dict]]] = {
    "pods": ("/api/v1/pods", slim_pod),
    "namespaces": ("/api/v1/namespaces", slim_namespace),
    "networkpolicies": ("/apis/networking.k8s.io/v1/networkpolicies", slim_policy),
}


def key(obj: dict) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def apply_event(items: dict, event: dict, slim: Callable[[dict], dict]) -> tuple[str | None, bool]:
    """One watch event on ``items`` (key -> slim object): (its resourceVersion, whether the kept
    objects changed). Raises ``kubeapi.Gone`` for a 410 ERROR event, ``ApiError`` for another."""
    kind, obj = event.get("type"), event.get("object") or {}
    if kind == "ERROR":
        code = int(obj.get("code") or 0)
        raise (kubeapi.Gone if code == 410 else kubeapi.ApiError)(code, str(obj.get("message") or "watch error"))
    rv = (obj.get("metadata") or {}).get("resourceVersion")
    if kind == "BOOKMARK":
        return rv, False
    k = key(obj)
    if kind == "DELETED":
        return rv, items.pop(k, None) is not None
    if kind in ("ADDED", "MODIFIED"):
        new = slim(obj)
        changed = items.get(k) != new
        items[k] = new
        return rv, changed
    raise kubeapi.ApiError(0, f"a watch event of type {kind!r}")


class Reflector:
    """One kind's objects, kept true by list+watch; ``on_change()`` after each change."""

    def __init__(self, api: kubeapi.InCluster, kind: str) -> None:
        self.api, self.kind = api, kind
        self.path, self.slim = KINDS[kind]
        self.items: dict[str, dict] = {}
        self.version = ""
        self.synced = False  # a full list was had once
        self.lock = threading.Lock()
        self.errors = 0

    def snapshot(self) -> list[dict]:
        with self.lock:
            return list(self.items.values())

    def relist(self) -> None:
        items: dict[str, dict] = {}
        token = ""
        while True:
            query = {"limit": kubeapi.PAGE, **({"continue": token} if token else {})}
            page = kubeapi.read_json(self.api.get(self.path, query))
            for obj in page.get("items") or ():
                items[key(obj)] = self.slim(obj)
            meta = page.get("metadata") or {}
            token = meta.get("continue") or ""
            if not token:
                break
        with self.lock:
            self.items, self.version, self.synced = items, str(meta.get("resourceVersion") or ""), True

    def watch(self, on_change: Callable[[], Any]) -> int:
        """One watch from ``version`` until the server ends it: how many events it delivered."""
        query = {"watch": "1", "allowWatchBookmarks": "true", "resourceVersion": self.version}
        query["timeoutSeconds"] = str(WATCH_SECONDS)
        resp = self.api.get(self.path, query, timeout=WATCH_SECONDS + 60)
        seen = 0
        try:
            while True:
                line = _line(resp)
                if line is None:
                    return seen
                if not line.strip():
                    continue
                try:
                    event = json.loads(line)
                except ValueError:
                    raise kubeapi.ApiError(0, "a watch event that is not JSON") from None
                with self.lock:
                    rv, changed = apply_event(self.items, event, self.slim)
                    if rv:
                        self.version = rv
                seen += 1
                if changed:
                    on_change()
        finally:
            resp.close()

    def run(self, on_change: Callable[[], Any], stop: Any) -> None:
        """List, watch, and again, until ``stop``; never raises (the last objects stay)."""
        backoff = BACKOFF
        while not stop.is_set():
            try:
                if not self.version:
                    self.relist()
                    on_change()
                if self.watch(on_change):
                    backoff = BACKOFF
                continue
            except kubeapi.Gone:
                self.version = ""  # list again at once
                continue
            except kubeapi.ApiError:
                self.errors += 1
            stop.wait(backoff)
            backoff = min(backoff * 2, MAX_BACKOFF)


class ClusterWatch:
    """The three kinds, each watched by its own thread; ``changed`` is set after any change."""

    def __init__(self, api: kubeapi.InCluster) -> None:
        self.reflectors = {kind: Reflector(api, kind) for kind in KINDS}
        self.changed = threading.Event()
        self.stop = threading.Event()

    def start(self) -> list[threading.Thread]:
        threads = [
            threading.Thread(target=r.run, args=(self.changed.set, self.stop), name=f"watch-{k}", daemon=True)
            for k, r in self.reflectors.items()
        ]
        for t in threads:
            t.start()
        return threads

    @property
    def synced(self) -> bool:
        """Every kind was listed once: before that the model would see a partial cluster."""
        return all(r.synced for r in self.reflectors.values())


def _line(resp: http.client.HTTPResponse) -> bytes | None:
    """The next event line; None at the end of the stream."""
    try:
        line = resp.readline(kubeapi.MAX_EVENT + 1)
    except (OSError, http.client.HTTPException) as err:
        raise kubeapi.ApiError(0, f"the watch broke: {err}") from None
    if not line:
        return None
    if len(line) > kubeapi.MAX_EVENT and not line.endswith(b"\n"):
        raise kubeapi.ApiError(0, f"a watch event larger than {kubeapi.MAX_EVENT} bytes")
    return line
