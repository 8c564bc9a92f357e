"""Record what a real kube-apiserver sends the NetworkPolicy agent: paged lists and streamed
watches (with bookmarks) of Pods, Namespaces and NetworkPolicies while a small cluster changes.

The control plane is the Windows lane's (tests/windows/controlplane.py: etcd and kube-apiserver
built from the Go module proxy by ``python -m winbuild.gobuild kube-apiserver etcd``, run as
Linux processes on loopback). The recording is the shape the bench's generator
(bench/netpol_stream.py) copies at scale; tests/data/netpol/recorded.json holds one, and
tests/unit/test_netpol_stream.py checks the generator against it.

    python bench/record_netpol_stream.py OUT.json
"""

from __future__ import annotations

import json
import ssl
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests" / "windows")]

from controlplane import ControlPlane

KINDS = {
    "pods": "/api/v1/pods",
    "namespaces": "/api/v1/namespaces",
    "networkpolicies": "/apis/networking.k8s.io/v1/networkpolicies",
}
PAGE = 2  # small, so every list has a continue page
WATCH_SECONDS = 8


def pod(name: str, node: str, role: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "app", "labels": {"role": role}},
        "spec": {
            "nodeName": node,
            "containers": [
                {"name": "c", "image": "registry.k8s.io/pause:3.10", "ports": [{"name": "pg", "containerPort": 5432}]}
            ],
        },
    }


def policy(name: str, port: int) -> dict:
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": name, "namespace": "app"},
        "spec": {
            "podSelector": {"matchLabels": {"role": "db"}},
            "policyTypes": ["Ingress"],
            "ingress": [{"from": [{"podSelector": {"matchLabels": {"role": "web"}}}], "ports": [{"port": port}]}],
        },
    }


def record(cp: ControlPlane) -> dict:
    kube = cp.kube
    kube.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "app"}})
    # no controller manager here: the account its admission wants, made by hand
    kube.create("/api/v1/namespaces/app/serviceaccounts", {"metadata": {"name": "default"}})
    for i, (name, node, role) in enumerate((("db", "n1", "db"), ("web", "n1", "web"), ("far", "n2", "web"))):
        kube.create("/api/v1/namespaces/app/pods", pod(name, node, role))
        status = {"status": {"phase": "Running", "podIP": f"10.244.1.{5 + i}", "podIPs": [{"ip": f"10.244.1.{5 + i}"}]}}
        kube.patch(f"/api/v1/namespaces/app/pods/{name}/status", status)
    kube.create("/apis/networking.k8s.io/v1/namespaces/app/networkpolicies", policy("db", 5432))
    ctx = ssl.create_default_context(cafile=str(cp.ca))
    headers = {"Authorization": f"Bearer {cp.tokens['lane']}", "Accept": "application/json"}

    def get(path: str, query: dict, timeout: float = 30):
        url = f"{cp.url}{path}?{urllib.parse.urlencode(query)}"
        return urllib.request.urlopen(urllib.request.Request(url, headers=headers), context=ctx, timeout=timeout)

    lists, versions = {}, {}
    for kind, path in KINDS.items():
        pages, token = [], ""
        while True:
            with get(path, {"limit": PAGE, **({"continue": token} if token else {})}) as resp:
                pages.append(json.loads(resp.read()))
            token = pages[-1]["metadata"].get("continue") or ""
            if not token:
                break
        lists[kind], versions[kind] = pages, pages[-1]["metadata"]["resourceVersion"]
    watches: dict[str, list] = {}

    def watch(kind: str) -> None:
        query = {"watch": "1", "allowWatchBookmarks": "true", "resourceVersion": versions[kind]}
        with get(KINDS[kind], {**query, "timeoutSeconds": WATCH_SECONDS}, WATCH_SECONDS + 30) as resp:
            watches[kind] = [[json.loads(line) for line in resp if line.strip()]]

    threads = [threading.Thread(target=watch, args=(kind,)) for kind in KINDS]
    for t in threads:
        t.start()
    time.sleep(1)
    kube.patch("/apis/networking.k8s.io/v1/namespaces/app/networkpolicies/db", {"spec": policy("db", 5433)["spec"]})
    kube.patch("/api/v1/namespaces/app/pods/web", {"metadata": {"labels": {"role": "cache"}}})
    kube.patch("/api/v1/namespaces/app", {"metadata": {"labels": {"team": "a"}}})
    kube.delete("/api/v1/namespaces/app/pods/far")
    kube.create("/apis/networking.k8s.io/v1/namespaces/app/networkpolicies", policy("db2", 80))
    for t in threads:
        t.join()
    return {"lists": lists, "watches": watches}


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__.splitlines()[-1].strip(), file=sys.stderr)
        return 2
    from winbuild.gobuild import build

    with tempfile.TemporaryDirectory(prefix="wincni-record-") as tmp:
        cp = ControlPlane(build("etcd"), build("kube-apiserver"), Path(tmp))
        try:
            found = record(cp)
        finally:
            cp.stop()
    Path(argv[0]).write_text(json.dumps(found, indent=1) + "\n")
    print(argv[0])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
