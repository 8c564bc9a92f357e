"""The node's real neighbours, started and stopped by the lane: etcd (Linux), flanneld.exe and
kube-proxy.exe (Wine).

All are built from the Go module proxy (``winbuild.gobuild``); all listen or dial on loopback
only, on ports chosen free. ``Etcd`` speaks etcd's JSON gateway (``/v3/kv/...``), so the lane
needs no etcd client: it writes the network config where flanneld's etcd mode reads it and, for
a second node, a lease as that node's flanneld would write it. ``Daemon`` runs a Windows program
(``Flanneld``: flanneld.exe) under the node's Wine prefix with the node's environment (the fake
HNS DLLs, the powershell.exe stand-in's folder) and keeps its log beside the node.
"""

from __future__ import annotations

import base64
import json
import socket
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

PREFIX = "/coreos.com/network"  # flanneld's --etcd-prefix default
START_TIMEOUT_S = 60.0


def free_port() -> int:
    """A loopback port nobody listens on (in the calling thread's network namespace)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def wait_for(what: str, ready: Any, timeout: float, log: Path | None = None) -> Any:
    """``ready()``'s first true answer, polled; AssertionError naming ``what`` (and the log's tail)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = ready()
        if got:
            return got
        time.sleep(0.2)
    tail = log.read_text(errors="replace")[-4000:] if log is not None and log.exists() else ""
    raise AssertionError(f"{what}: not after {timeout:g} s\n{tail}")


class Etcd:
    """One etcd member on 127.0.0.1, its data under ``root``."""

    def __init__(self, exe: Path, root: Path) -> None:
        self.port, peer = free_port(), free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.log = root / "etcd.log"
        root.mkdir(parents=True, exist_ok=True)
        with self.log.open("wb") as log:
            self.proc = subprocess.Popen(
                [
                    str(exe),
                    "--data-dir",
                    str(root / "data"),
                    "--listen-client-urls",
                    self.endpoint,
                    "--advertise-client-urls",
                    self.endpoint,
                    "--listen-peer-urls",
                    f"http://127.0.0.1:{peer}",
                    "--initial-advertise-peer-urls",
                    f"http://127.0.0.1:{peer}",
                    "--initial-cluster",
                    f"default=http://127.0.0.1:{peer}",
                ],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        try:
            wait_for("etcd answering", self._healthy, START_TIMEOUT_S, self.log)
        except BaseException:
            self.stop()
            raise

    def _healthy(self) -> bool:
        assert self.proc.poll() is None, f"etcd exited ({self.proc.returncode}):\n{self.log.read_text()[-4000:]}"
        try:
            return bool(self.call("/v3/maintenance/status", {}))
        except OSError:
            return False

    def call(self, path: str, body: dict) -> dict:
        req = urllib.request.Request(
            self.endpoint + path, json.dumps(body).encode(), {"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(req, timeout=10) as resp:
            return json.load(resp)

    def put(self, key: str, value: Any, ttl: int = 0) -> None:
        """``key`` = ``value`` (JSON unless a string), under a new etcd lease of ``ttl`` s when given."""
        body = {"key": _b64(key), "value": _b64(value if isinstance(value, str) else json.dumps(value))}
        if ttl:
            body["lease"] = self.call("/v3/lease/grant", {"TTL": ttl})["ID"]
        self.call("/v3/kv/put", body)

    def get_prefix(self, prefix: str) -> dict[str, Any]:
        """Every key under ``prefix``, its value parsed as JSON."""
        end = prefix[:-1] + chr(ord(prefix[-1]) + 1)
        out = self.call("/v3/kv/range", {"key": _b64(prefix), "range_end": _b64(end)})
        return {
            base64.b64decode(kv["key"]).decode(): json.loads(base64.b64decode(kv["value"])) for kv in out.get("kvs", [])
        }

    def delete(self, key: str) -> None:
        self.call("/v3/kv/deleterange", {"key": _b64(key)})

    def stop(self) -> None:
        stop(self.proc)


def stop(proc: subprocess.Popen) -> None:
    """Ended (asked first, killed after 20 s) and reaped."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def subnet_key(subnet: str) -> str:
    """flanneld's key of a lease: ``10.244.93.0/24`` -> ``.../subnets/10.244.93.0-24``."""
    return f"{PREFIX}/subnets/{subnet.replace('/', '-')}"


class Daemon:
    """A Windows program that runs until stopped (flanneld.exe, kube-proxy.exe) under Wine:
    ``start`` it, ``stop`` it; its log at ``log`` (appended)."""

    def __init__(self, exe: Path, argv: list[str], cwd: Path, env: dict[str, str], log: Path) -> None:
        self.argv, self.cwd, self.env, self.log = [str(exe), *argv], cwd, env, log
        self.proc: subprocess.Popen | None = None

    def start(self, wine: Path) -> "Daemon":
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(
                [str(wine), *self.argv],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self.cwd,
                env=self.env,
            )
        return self

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> None:
        if self.proc is not None:
            stop(self.proc)


class Flanneld(Daemon):
    """flanneld.exe: up once it has written its subnet.env."""

    def wait_written(self, path: Path, timeout: float) -> None:
        """Until flanneld has written ``path`` (its subnet.env); AssertionError with its log when
        it exits or takes longer."""

        def written() -> bool:
            assert self.running(), f"flanneld exited before writing {path}:\n{self.log.read_text()[-4000:]}"
            return path.exists()

        wait_for(f"flanneld writing {path}", written, timeout, self.log)
