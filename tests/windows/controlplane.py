"""A real Kubernetes control plane on loopback for the lane: etcd and kube-apiserver.

Both are built from the Go module proxy (``winbuild.gobuild``: ``etcd``, ``kube-apiserver``) and
listen on 127.0.0.1 only, on ports chosen free, in the calling thread's network namespace (the
lane's ``netns.Netns``, where the Wine programs that read the API server run too). The API server
makes its own self-signed serving certificate in its ``--cert-dir``; its service-account key comes
from our main's ``write-service-account-key`` (no openssl). Authentication is a static token file:
one token for the lane itself (``system:masters``), one for each of deploy/'s ServiceAccounts,
with the user name the API server gives that account's own token, so deploy/rbac.yaml's roles are
what kube-proxy and flanneld are allowed (``--authorization-mode=RBAC``).

``Kube`` is the lane's client: urllib over TLS, the server checked against the generated
certificate, JSON in and out; enough to write Nodes, Services and EndpointSlices and read them back.
"""

from __future__ import annotations

import json
import secrets
import ssl
import subprocess
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from neighbours import Etcd, free_port, stop, wait_for

START_TIMEOUT_S = 120.0  # a cold API server on a busy 2-core machine
NAMESPACE = "default"  # where deploy/rbac.yaml's ServiceAccounts are
SERVICE_CIDR = "10.96.0.0/12"  # kubeadm's default: the DNS Service is 10.96.0.10
#: deploy/'s ServiceAccounts (deploy/rbac.yaml), by the program that runs as each.
ACCOUNTS = {"kube-proxy": "wincni-kube-proxy", "flanneld": "wincni-flannel", "netpol": "wincni-netpol"}
ADMIN = "lane"


class KubeError(RuntimeError):
    """The API server refused a request: the status code and its answer."""

    def __init__(self, method: str, path: str, code: int, body: str) -> None:
        super().__init__(f"{method} {path}: {code} {body[:2000]}")
        self.code = code


class Kube:
    """The API server at ``url``, as ``token``'s user, trusting only ``ca`` (a PEM file)."""

    def __init__(self, url: str, token: str, ca: Path) -> None:
        self.url, self.token = url, token
        self._tls = ssl.create_default_context(cafile=str(ca))

    def call(self, method: str, path: str, body: Any = None, content_type: str = "application/json") -> Any:
        """The answer: its JSON, or its text when it is not JSON (``/readyz``); KubeError when the
        status is not 2xx."""
        data = None if body is None else json.dumps(body).encode()
        headers = {"Authorization": f"Bearer {self.token}", "Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = content_type
        req = urllib.request.Request(self.url + path, data, headers, method=method)
        try:
            with urllib.request.urlopen(req, timeout=30, context=self._tls) as resp:
                text, kind = resp.read().decode(), resp.headers.get_content_type()
        except urllib.error.HTTPError as exc:
            raise KubeError(method, path, exc.code, exc.read().decode(errors="replace")) from None
        return json.loads(text) if kind == "application/json" else text

    def get(self, path: str) -> Any:
        return self.call("GET", path)

    def create(self, path: str, doc: dict) -> dict:
        return self.call("POST", path, doc)

    def patch(self, path: str, doc: dict) -> dict:
        """A JSON merge patch (RFC 7386)."""
        return self.call("PATCH", path, doc, "application/merge-patch+json")

    def delete(self, path: str) -> None:
        self.call("DELETE", path)


def node_doc(name: str, pod_cidr: str, internal_ip: str) -> dict:
    """A Node as the kubelet registers it, with the podCIDR the node IPAM controller gives it."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/os": "windows", "kubernetes.io/hostname": name}},
        "spec": {"podCIDR": pod_cidr, "podCIDRs": [pod_cidr]},
        "status": {
            "addresses": [{"type": "InternalIP", "address": internal_ip}, {"type": "Hostname", "address": name}]
        },
    }


def service_doc(name: str, ports: list[dict], cluster_ip: str | None = None, kind: str = "ClusterIP") -> dict:
    """A Service without a selector (no controller here fills its EndpointSlices: the lane does).
    ``ports``: ``{"name", "port", "protocol", "targetPort"[, "nodePort"]}`` each."""
    spec: dict[str, Any] = {"type": kind, "ports": ports}
    if cluster_ip:
        spec["clusterIP"] = cluster_ip
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": spec}


def endpoint_slice_doc(service: str, ports: list[dict], backends: dict[str, str]) -> dict:
    """The EndpointSlice the EndpointSlice controller would write for ``service``: ``backends``
    maps each ready backend's address to the node it runs on; ``ports`` are the Service's by name."""
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": f"{service}-lane",
            "labels": {"kubernetes.io/service-name": service, "endpointslice.kubernetes.io/managed-by": "lane"},
        },
        "addressType": "IPv4",
        "endpoints": [
            {"addresses": [ip], "conditions": {"ready": True, "serving": True, "terminating": False}, "nodeName": node}
            for ip, node in backends.items()
        ],
        "ports": [{"name": p["name"], "port": p["targetPort"], "protocol": p["protocol"]} for p in ports],
    }


class ControlPlane:
    """etcd and kube-apiserver under ``root``, until ``stop``; ``kube`` is the lane's client and
    ``kubeconfig(program, path)`` writes the kubeconfig one of deploy/'s programs runs with."""

    def __init__(self, etcd_exe: Path, apiserver_exe: Path, root: Path) -> None:
        self.root = root
        self.etcd = Etcd(etcd_exe, root / "etcd")
        self.proc: subprocess.Popen | None = None
        try:
            self._start(apiserver_exe)
        except BaseException:
            self.stop()
            raise

    def _start(self, exe: Path) -> None:
        certs, key = self.root / "certs", self.root / "sa.key"
        certs.mkdir(parents=True, exist_ok=True)
        made = subprocess.run([str(exe), "write-service-account-key", str(key)], capture_output=True, text=True)
        assert made.returncode == 0, made.stderr
        self.tokens = {who: secrets.token_hex(16) for who in (ADMIN, *ACCOUNTS)}
        lines = [f'{self.tokens[ADMIN]},{ADMIN},{ADMIN},"system:masters"']
        for program, account in ACCOUNTS.items():
            user = f"system:serviceaccount:{NAMESPACE}:{account}"
            groups = f"system:serviceaccounts,system:serviceaccounts:{NAMESPACE}"
            lines.append(f'{self.tokens[program]},{user},{account},"{groups}"')
        token_file = self.root / "tokens.csv"
        token_file.write_text("\n".join(lines) + "\n")
        self.port = free_port()
        self.url = f"https://127.0.0.1:{self.port}"
        self.ca = certs / "apiserver.crt"  # self-signed, with its own CA beside it in the file
        self.log = self.root / "kube-apiserver.log"
        self.argv = [
            str(exe),
            f"--etcd-servers={self.etcd.endpoint}",
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            f"--secure-port={self.port}",
            f"--cert-dir={certs}",
            f"--token-auth-file={token_file}",
            "--authorization-mode=RBAC",
            f"--service-account-key-file={key}",
            f"--service-account-signing-key-file={key}",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            "--service-node-port-range=30000-32767",
            # the API server's own Service gets no endpoints: its address here is loopback
            "--endpoint-reconciler-type=none",
            "--enable-priority-and-fairness=false",
        ]
        self.start_apiserver()

    def start_apiserver(self) -> None:
        """kube-apiserver started (again: the same port, certificate and tokens), once it is ready."""
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
        wait_for("kube-apiserver's certificate", self._certified, START_TIMEOUT_S, self.log)
        self.kube = Kube(self.url, self.tokens[ADMIN], self.ca)
        wait_for("kube-apiserver ready", self._ready, START_TIMEOUT_S, self.log)

    def stop_apiserver(self) -> None:
        """kube-apiserver gone (etcd stays), as while the control plane is upgraded or unreachable."""
        if self.proc is not None:
            stop(self.proc)

    def _certified(self) -> bool:
        assert self.proc.poll() is None, (
            f"kube-apiserver exited ({self.proc.returncode}):\n{self.log.read_text()[-4000:]}"
        )
        return self.ca.exists() and (self.ca.parent / "apiserver.key").exists()

    def _ready(self) -> bool:
        self._certified()
        try:
            self.kube.get("/readyz")
            self.kube.get(f"/api/v1/namespaces/{NAMESPACE}")
        except (OSError, KubeError, ValueError):
            return False
        return True

    def kubeconfig(self, program: str, path: Path) -> Path:
        """The kubeconfig ``program`` (a key of ACCOUNTS) runs with, as deploy/kubeconfig.ps1
        writes it (the CA and the token as files), the paths as a Windows program sees them."""
        from winbuild.toolchain import winpath

        token = path.with_name(f"{program}.token")
        token.write_text(self.tokens[program])
        doc = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "lane", "cluster": {"server": self.url, "certificate-authority": winpath(self.ca)}}],
            "users": [{"name": program, "user": {"tokenFile": winpath(token)}}],
            "contexts": [{"name": program, "context": {"cluster": "lane", "user": program}}],
            "current-context": program,
        }
        path.write_text(json.dumps(doc, indent=1))  # YAML reads JSON
        return path

    def register_node(self, name: str, pod_cidr: str, internal_ip: str, annotations: dict | None = None) -> None:
        """A Node as the kubelet registers it (its addresses in its status, the annotation it
        always sets: flanneld v0.27.4's kube mode panics on a Node with none), with the podCIDR
        the node IPAM controller gives it."""
        labels = {"kubernetes.io/os": "windows", "kubernetes.io/hostname": name}
        kubelets = {"volumes.kubernetes.io/controller-managed-attach-detach": "true"}
        meta = {"name": name, "labels": labels, "annotations": {**kubelets, **(annotations or {})}}
        spec = {"podCIDR": pod_cidr, "podCIDRs": [pod_cidr]}
        self.kube.create("/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": meta, "spec": spec})
        addresses = [{"type": "InternalIP", "address": internal_ip}, {"type": "Hostname", "address": name}]
        self.kube.patch(f"/api/v1/nodes/{name}/status", {"status": {"addresses": addresses}})

    def apply_rbac(self, manifest: Path) -> None:
        """The ServiceAccounts and RBAC objects of a deploy/ manifest (rbac.yaml, netpol/netpol.yaml),
        created as ``kubectl apply`` would on a new cluster; its workloads are the lane's to run."""
        import yaml

        paths = {
            "ServiceAccount": f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts",
            "ClusterRole": "/apis/rbac.authorization.k8s.io/v1/clusterroles",
            "ClusterRoleBinding": "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
        }
        for doc in yaml.safe_load_all(manifest.read_text()):
            if doc and doc["kind"] in paths:
                self.kube.create(paths[doc["kind"]], doc)

    def stop(self) -> None:
        self.stop_apiserver()
        self.etcd.stop()
