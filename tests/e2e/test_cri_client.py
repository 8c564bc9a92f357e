"""tools/wincni/cri against a real gRPC server: crifake (winbuild/gomain/crifake), Go's grpc over
k8s.io/cri-api's runtime v1 service, answering ListPodSandbox from a JSON file; and the sweep
using its answer as the valid attachments: a sandbox the runtime lists keeps its endpoint, its
reservation and its saved config whatever their age (the runtime still owes it a DEL); once it
is no longer listed, the ownership rule frees them."""

from __future__ import annotations

import io
import json
import os
import subprocess
import time
from pathlib import Path
from typing import Iterator

import pytest

from gotool import go_tool
from hnsnode import Node
from tools.wincni.cli.main import main as wincni_main
from tools.wincni.node.cri import list_sandboxes
from tools.wincni.node.cri.errors import CallFailed, Malformed, Unreachable
from tools.wincni.node.cri.proto import ListedSandbox


class Runtime:
    """crifake on a unix socket; ``answer`` rewrites what its next ListPodSandbox returns."""

    def __init__(self, root: Path) -> None:
        self.pods = root / "pods.json"
        self.answer()
        self.endpoint = f"unix://{root / 'cri.sock'}"
        exe = go_tool("crifake", "prove the CRI client against a real gRPC server")
        self.proc = subprocess.Popen(
            [str(exe), "-socket", str(root / "cri.sock"), "-pods", str(self.pods)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None and self.proc.stdout.readline().startswith("listening"), self.proc.stderr

    def answer(self, pods: list[dict] | None = None, **extra: object) -> None:
        self.pods.write_text(json.dumps({"pods": pods or [], **extra}))

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


@pytest.fixture
def runtime(tmp_path: Path) -> Iterator[Runtime]:
    short = Path(f"/tmp/cri-{os.getpid()}-{time.monotonic_ns()}")  # a unix socket path has 107 bytes at most
    short.mkdir()
    rt = Runtime(short)
    yield rt
    rt.stop()
    for p in short.iterdir():
        p.unlink()
    short.rmdir()


def test_every_sandbox_with_its_metadata_and_state(runtime: Runtime) -> None:
    runtime.answer(
        [
            {"id": "a1", "name": "web-0", "uid": "u1", "namespace": "default", "attempt": 2, "state": "SANDBOX_READY"},
            {
                "id": "b2",
                "name": "db",
                "uid": "u2",
                "namespace": "kube-system",
                "state": "SANDBOX_NOTREADY",
                "labels": {"app": "db"},
                "annotations": {"k": "v" * 300},
                "createdAt": 1700000000000000000,
            },
        ]
    )
    assert list_sandboxes(runtime.endpoint) == [
        ListedSandbox("a1", "web-0", "u1", "default", 2, "SANDBOX_READY"),
        ListedSandbox("b2", "db", "u2", "kube-system", 0, "SANDBOX_NOTREADY"),
    ]
    runtime.answer([])
    assert list_sandboxes(runtime.endpoint) == []


def test_a_runtime_error_is_its_grpc_status_and_message(runtime: Runtime) -> None:
    runtime.answer(error="containerd is starting: 50% done")
    with pytest.raises(CallFailed, match="gRPC status 14: containerd is starting: 50% done"):
        list_sandboxes(runtime.endpoint)


def test_a_hung_runtime_is_given_up_at_the_deadline(runtime: Runtime) -> None:
    runtime.answer(delayMs=10000)
    started = time.monotonic()
    with pytest.raises((CallFailed, Unreachable)):  # the server honours grpc-timeout, or we stop reading
        list_sandboxes(runtime.endpoint, timeout=0.5)
    assert time.monotonic() - started < 2


def test_an_answer_above_the_cap_is_refused(runtime: Runtime) -> None:
    runtime.answer([{"id": f"pod{i:04d}", "name": "x" * 100} for i in range(200)])
    assert len(list_sandboxes(runtime.endpoint)) == 200
    with pytest.raises(Malformed, match="larger than the 8192 bytes"):
        list_sandboxes(runtime.endpoint, cap=8192)


# ---------------------------------------------------------------------------- the sweep


def age(path: Path, seconds: float = 3600) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


def reclaim(node: Node, runtime: Runtime, conf: Path) -> str:
    out, err = io.StringIO(), io.StringIO()
    argv = ["reclaim", "--cni-conf", str(conf), "--runtime-endpoint", runtime.endpoint]
    assert wincni_main(argv, out, err, node.env, platform="linux", cwd=str(node.root)) == 0, err.getvalue()
    return out.getvalue()


def test_a_sandbox_the_runtime_lists_keeps_all_it_holds_until_the_runtime_forgets_it(
    tmp_path: Path, runtime: Runtime
) -> None:
    node = Node(tmp_path, "flannel").bridge().lease().venv_plugins()
    conf = node.flannel_conf("cni.conf.l2bridge-v2.json", cniVersion="1.1.0")
    conf_path = node.write_cni_conf(conf)
    netns = node.sandbox("v2", "stopped")
    ip = node.add(conf, "stopped", netns)["ips"][0]["address"].split("/")[0]
    node.hnsctl("namespace", "delete", netns)  # the sandbox stopped: HNS no longer holds the endpoint
    age(node.ipam_dir / node.network / ip)
    age(node.flannel_dir / "stopped")
    runtime.answer([{"id": "stopped", "name": "web", "state": "SANDBOX_NOTREADY"}])

    said = reclaim(node, runtime, conf_path)
    assert f"runtime lists 1 sandbox(es) at {runtime.endpoint}" in said and "0 reservation(s) released" in said
    assert f"stopped_{node.network}" in node.endpoints() and node.ip_files() == {ip: "stopped"}
    assert (node.flannel_dir / "stopped").is_file()

    runtime.answer([])  # the runtime removed the sandbox without a DEL (it crashed, or never sends one)
    said = reclaim(node, runtime, conf_path)
    assert f"removed HNS endpoint stopped_{node.network}" in said and f"released {ip}" in said, said
    assert "removed saved delegate config stopped" in said and "and the runtime does not list it" in said
    node.assert_clean("stopped")
    assert not (node.flannel_dir / "stopped").exists()


def a_gone_pod(tmp_path: Path) -> tuple[Node, Path, str]:
    """A node, its CNI config and the address of its pod "gone", whose sandbox went without a DEL
    an hour ago (its saved config is young: an ADD in flight saves it first)."""
    node = Node(tmp_path, "flannel").bridge().lease().venv_plugins()
    conf = node.flannel_conf("cni.conf.l2bridge-v2.json", cniVersion="1.1.0")
    conf_path = node.write_cni_conf(conf)
    netns = node.sandbox("v2", "gone")
    ip = node.add(conf, "gone", netns)["ips"][0]["address"].split("/")[0]
    node.hnsctl("namespace", "delete", netns)
    age(node.ipam_dir / node.network / ip)
    return node, conf_path, ip


def test_a_runtime_that_fails_leaves_the_rule_alone_to_decide(tmp_path: Path, runtime: Runtime) -> None:
    node, conf_path, ip = a_gone_pod(tmp_path)
    runtime.answer(error="not ready")
    said = reclaim(node, runtime, conf_path)
    assert f"runtime's pod list not available at {runtime.endpoint} (gRPC status 14: not ready)" in said
    assert "released" not in said.replace("0 reservation(s) released", ""), said  # its saved config is young
    age(node.flannel_dir / "gone")  # ... an ADD in flight saves it first; an old one is no ADD's
    said = reclaim(node, runtime, conf_path)
    assert f"released {ip}" in said and "removed saved delegate config gone" in said, said
    node.assert_clean("gone")
