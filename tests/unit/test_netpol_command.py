"""``wincni netpol`` as the DaemonSet runs it: a process against the fake API server (TLS under the
test CA, the service account under CONTAINER_SANDBOX_MOUNT_POINT) on the simulated node, until it
has programmed the isolated pod's endpoint; SIGTERM stops it with status 0. And what it refuses
before it starts: one line, status 1."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fakeapiserver import FakeApiServer, service_account
from test_netpol_agent import NODE, NODE_IPS, Node
from test_netpol_agent_loop import _stream

REPO = Path(__file__).resolve().parents[2]
CONF = {"cniVersion": "1.0.0", "name": "cbr0", "type": "win-bridge", "apiVersion": 2, "ipam": {"type": "host-local"}}


def _env(tmp_path: Path, node: Node, port: int) -> dict:
    conf = tmp_path / "10-cbr0.conf"
    conf.write_text(json.dumps(CONF))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LIBHNS_", "KUBERNETES_", "NODE_"))}
    return {
        **env,
        **node.env,
        "CONTAINER_SANDBOX_MOUNT_POINT": str(tmp_path / "sandbox"),
        "KUBERNETES_SERVICE_HOST": "127.0.0.1",
        "KUBERNETES_SERVICE_PORT": str(port),
        "WINCNI_NETPOL_STATE": str(tmp_path / "netpol" / "netpol.json"),
        "NODE_NAME": NODE,
        "PYTHONPATH": str(REPO),
    }


def _wincni(*args: str, env: dict, **kw) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "tools.wincni", "netpol", *args],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kw,
    )


@pytest.mark.skipif(sys.platform == "win32", reason="SIGTERM is POSIX's; the Windows lane stops it its own way")
def test_the_agent_runs_until_it_programmed_the_endpoint_and_stops_on_sigterm(tmp_path):
    server = FakeApiServer(_stream())
    service_account(tmp_path / "sandbox")
    node = Node(tmp_path, 2)
    env = _env(tmp_path, node, server.server_address[1])
    before = {pod: node.acls(pod) for pod in ("db", "web")}
    proc = _wincni("--cni-conf", str(tmp_path / "10-cbr0.conf"), "--node-address", NODE_IPS[0], env=env)
    try:
        deadline = time.monotonic() + 60
        while node.acls("db") == before["db"] and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.1)
        assert len(node.acls("db")) > len(before["db"]), proc.poll()
        assert node.acls("web") == before["web"]  # no policy isolates it: left as it was
        assert [c["op"] for c in node.calls()] == ["HcnModifyEndpoint"]  # one call, for db alone
        assert (tmp_path / "netpol" / "netpol.json").exists()
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill() if proc.poll() is None else None
        server.shutdown()
        server.server_close()
    assert proc.returncode == 0, err
    assert "watching" in err and "1 apply" in err and err.rstrip().endswith("wincni netpol: stopped"), err


@pytest.mark.parametrize(
    "drop, says",
    [
        ("NODE_NAME", "no node name: pass --node-name"),
        ("KUBERNETES_SERVICE_HOST", "the API server: KUBERNETES_SERVICE_HOST/PORT are not set"),
    ],
)
def test_what_it_cannot_start_without_is_one_line_and_status_1(tmp_path, drop, says):
    node = Node(tmp_path, 2)
    service_account(tmp_path / "sandbox")
    env = _env(tmp_path, node, 1)
    del env[drop]
    proc = _wincni("--cni-conf", str(tmp_path / "10-cbr0.conf"), env=env)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 1 and out == ""
    assert err.startswith(f"wincni netpol: {says}") and err.count("\n") == 1, err


def test_help_says_what_it_does_that_it_needs_an_elevated_shell_its_statuses_and_an_example():
    proc = subprocess.run(
        [sys.executable, "-m", "tools.wincni", "netpol", "--help"], cwd=REPO, capture_output=True, text=True
    )
    assert proc.returncode == 0
    text = " ".join(proc.stdout.split())
    assert "Keep the ACLs of this node's pod endpoints" in text.split("options:")[0]
    assert "elevated shell" in text and "HostProcess" in text
    assert "exit status: 0 stopped by SIGTERM" in text and "2 a usage error" in text
    assert "example" in text and "wincni netpol --node-name" in text


@pytest.mark.parametrize("given", ["0", "-1", "soon", "nan"])
def test_a_resync_that_is_not_a_positive_number_of_seconds_is_a_usage_error(given):
    proc = subprocess.run(
        [sys.executable, "-m", "tools.wincni", "netpol", "--resync", given], cwd=REPO, capture_output=True, text=True
    )
    assert proc.returncode == 2 and "is not a number of seconds above 0" in proc.stderr, proc.stderr
