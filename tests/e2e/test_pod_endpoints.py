"""A pod whose HNS endpoint is gone while its sandbox runs: CHECK says "recreate the pod", and so
does the doctor, at once, naming it; reclaim keeps its address, however old; a bundle replays to
the same finding; and the fix, as the operator carries it out (the runtime's DEL, its sandbox
gone), leaves the node healthy. The same for a pod endpoint HNS holds detached."""

from __future__ import annotations

import io
import json
import os
import time
from pathlib import Path

import pytest

from hnsnode import Node, pods_node
from tools.wincni.cli.main import main

pytestmark = pytest.mark.node("bridge", "overlay", build=pods_node)


def netns_of(node: Node, cid: str) -> str:
    return next(netns for owner, netns in node.sandbox_records().values() if owner == cid)


def ip_of(node: Node, cid: str) -> str:
    return next(ip for ip, owner in node.ip_files().items() if owner == cid)


def age(node: Node, ip: str) -> None:
    """The reservation made an hour ago."""
    long_ago = time.time() - 3600
    os.utime(node.ipam_dir / node.cni_conf["name"] / ip, (long_ago, long_ago))


def replayed(node: Node, path: Path) -> dict[str, dict]:
    rc, _, err = node.wincni("bundle", "--out", str(path))
    assert (rc, err) == (0, ""), err
    out = io.StringIO()
    main(["doctor", "--replay", str(path), "-o", "json"], out, io.StringIO(), {}, platform="linux", cwd="/")
    return {c["id"]: c for c in json.loads(out.getvalue())["checks"]}


def recreate(node: Node, cid: str, netns: str) -> None:
    """What ``crictl rmp`` (or deleting the pod) does on the node: the runtime's CNI DEL, then its
    sandbox goes (the namespace, or the pause container)."""
    rc, out = node.flannel("DEL", node.cni_conf, CNI_CONTAINERID=cid, CNI_NETNS=netns, CNI_IFNAME="eth0")
    assert rc == 0, out
    if netns == "none":
        node.hnsctl("container", "delete", cid)
    else:
        node.hnsctl("namespace", "delete", netns)


def reclaim_keeps(node: Node, ip: str) -> None:
    """The sweep at its most eager (no in-flight age, no runtime list) leaves the address."""
    out, err = io.StringIO(), io.StringIO()
    argv = ["reclaim", "--cni-conf", str(node.conf_dir), "--min-age", "0", "--force", "--runtime-endpoint", "none"]
    rc = main([*argv, "-o", "json"], out, err, node.env, platform="linux", cwd=str(node.root))
    assert rc == 0, err.getvalue()
    assert ip not in [r["ip"] for r in json.loads(out.getvalue())["released"]], out.getvalue()
    assert ip in node.ip_files()


def test_a_pod_that_lost_its_endpoint_fails_at_once_and_the_fix_mends_it(node: Node, tmp_path: Path) -> None:
    net, netns, ip = node.cni_conf["name"], netns_of(node, "pod-a"), ip_of(node, "pod-a")
    node.hnsctl("endpoint", "delete", f"pod-a_{net}")
    age(node, ip)  # past the in-flight age: no grace hides it, none frees it
    rc, out = node.flannel("CHECK", node.cni_conf, CNI_CONTAINERID="pod-a", CNI_NETNS=netns, CNI_IFNAME="eth0")
    assert rc == 1 and out["code"] == 101 and "recreate the pod" in out["details"], out  # the premise
    found = node.doctor()
    check = found["pod-endpoints"]
    assert check["status"] == "fail", check
    for word in ("pod-a", netns.upper(), ip, f"pod-a_{net} is gone"):
        assert word in check["message"], check
    for word in ("crictl inspectp pod-a", "kubectl delete pod", "crictl stopp pod-a", "crictl rmp pod-a"):
        assert word in check["fix"], check
    assert "pod-a which has no endpoint" not in found["ipam-store"]["message"]  # no orphan: a pod to recreate
    assert replayed(node, tmp_path / "node.tar.gz")["pod-endpoints"] == check
    reclaim_keeps(node, ip)
    recreate(node, "pod-a", netns)
    again = node.doctor()
    assert again["pod-endpoints"]["status"] == "ok", again["pod-endpoints"]
    node.assert_clean("pod-a")


def test_a_dockershim_pod_is_judged_by_its_pause_container(node: Node) -> None:
    netns = node.sandbox("v1", "pod-c")
    rc, out = node.flannel("ADD", node.cni_conf, CNI_CONTAINERID="pod-c", CNI_NETNS=netns, CNI_IFNAME="eth0")
    assert rc == 0, out
    ip = ip_of(node, "pod-c")
    node.hnsctl("endpoint", "delete", f"pod-c_{node.cni_conf['name']}")
    check = node.doctor()["pod-endpoints"]
    assert check["status"] == "fail" and "pod-c (container pod-c)" in check["message"], check
    assert "crictl rmp -f pod-c" in check["fix"] and "docker rm -f pod-c" in check["fix"], check
    reclaim_keeps(node, ip)
    recreate(node, "pod-c", netns)
    assert node.doctor()["pod-endpoints"]["status"] == "ok"
    node.assert_clean("pod-c")


def test_an_endpoint_hns_holds_detached_from_a_live_sandbox_fails_endpoint_state(node: Node, tmp_path: Path) -> None:
    net, netns = node.cni_conf["name"], netns_of(node, "pod-b")
    ep = node.endpoints()[f"pod-b_{net}"]
    node.hnsctl("namespace", "detach", netns, ep["ID"])
    assert node.endpoints()[f"pod-b_{net}"]["State"] == 4
    assert node.doctor()["endpoint-state"]["status"] == "ok"  # as an ADD in flight may leave it
    age(node, ip_of(node, "pod-b"))
    found = node.doctor()
    check = found["endpoint-state"]
    assert check["status"] == "fail", check
    assert f"pod-b_{net} ({ep['ID']}) is in State 4 (Detached)" in check["message"], check
    assert "crictl rmp pod-b" in check["fix"], check
    assert found["pod-endpoints"]["status"] == "ok"  # the endpoint is there: this is endpoint-state's
    assert replayed(node, tmp_path / "node.tar.gz")["endpoint-state"] == check
    recreate(node, "pod-b", netns)
    assert node.doctor()["endpoint-state"]["status"] == "ok"
    node.assert_clean("pod-b")
