"""``wincni bundle`` and ``wincni doctor --replay``: a bundle of a simulated node replays to the
live doctor's findings; it takes nothing but its allow-list; it is bounded and written safely;
the real-node documents replay too."""

from __future__ import annotations

import io
import json
import os
import stat
import tarfile
from pathlib import Path

import pytest

from hnsnode import PROXY_NODES, Node, endpoint_of, pod_address, pods_node, proxy_node, remote_backend
from testdata import REALHNS
from tools.wincni.cli.main import main
from tools.wincni.doctor.archive.members import (
    FLANNEL_MEMBER,
    FORMAT,
    LOG_TAIL,
    MANIFEST,
    SANDBOX_MEMBER,
    STORE_MEMBER,
    TOTAL_CAP,
    VERSION_MEMBER,
    Members,
    archive,
)
from tools.wincni.doctor.checks import registry as checks

SECRET = b"apiVersion: v1\nkind: Config\nusers:\n- user: {token: s3cr3t-t0ken-planted-by-the-test}\n"
#: What a node keeps beside the files the bundle reads, and must never leave it.
PLANTED = ("kubeconfig", "config", "token", "client.key", "ca.key", "node-token.json.key", ".kube")


pytestmark = pytest.mark.node("bridge", "overlay", build=pods_node)


def take(node: Node, out: Path, *extra: str) -> tuple[int, str, str]:
    return node.wincni("bundle", "--out", str(out), *extra)


def replay(path: Path, *extra: str) -> tuple[int, str, str]:
    """The doctor on another machine: no environment, another working folder."""
    stdout, stderr = io.StringIO(), io.StringIO()
    rc = main(["doctor", "--replay", str(path), *extra], stdout, stderr, {}, platform="linux", cwd="/")
    return rc, stdout.getvalue(), stderr.getvalue()


def members(path: Path) -> dict[str, bytes]:
    with tarfile.open(path) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar if m.isfile()}


def test_replay_gives_the_live_doctors_findings(node: Node, tmp_path: Path) -> None:
    live = node.doctor()
    assert live["stale-endpoints"]["status"] == "warn"  # something to find, not only "ok"
    assert_replay_is_live(node, live, tmp_path)


def broken_services_node(root: Path, name: str) -> Node:
    """A node with Services programmed (``proxy_node``: hand-made or the real kube-proxy lane's)
    and every kube-proxy inconsistency the simulator can hold: a backend HNS lost, a remote
    endpoint no load balancer lists, one on a local pod's address, none for the cluster DNS over
    TCP; on overlay, load balancers with the source VIP of an earlier subnet."""
    node = proxy_node(root, name)
    net = node.cni_conf["name"]
    pod = pod_address(node)
    node.hnsctl("endpoint", "delete", endpoint_of(node, remote_backend(node)))
    for ip in ("10.244.99.7", pod):
        node.hnsctl("endpoint", "create", "", "--network", net, "--ip", ip, "--remote")
    pod_a = endpoint_of(node, pod, remote=False)
    (dns_tcp,) = [
        lb["ID"]
        for lb in node.hnsctl("loadbalancer", "list", "-o", "json")
        if lb.get("FrontendVIPs") == ["10.96.0.10"] and lb["PortMappings"][0]["ExternalPort"] == 53
        and lb["PortMappings"][0]["Protocol"] == 6
    ]  # fmt: skip
    node.hnsctl("loadbalancer", "delete", dns_tcp)
    if node.cni_conf["delegate"]["type"] == "win-overlay":
        node.hnsctl("loadbalancer", "create", "--endpoint", pod_a, "--vip", "10.96.0.44", "--port", "80",
                    "--source-vip", "10.244.3.9")  # fmt: skip
    return node


@pytest.mark.node(*PROXY_NODES, build=broken_services_node)
def test_replay_gives_the_live_findings_on_kube_proxys_state(node: Node, tmp_path: Path) -> None:
    """kube-proxy's checks read only HNS's documents: replayed, each finds what it found live."""
    live = node.doctor()
    wanted = {"lb-backends", "stale-remote-endpoints", "remote-endpoint-addresses"}
    wanted |= {"dns-load-balancer"} | ({"source-vip"} if node.cni_conf["delegate"]["type"] == "win-overlay" else set())
    assert {k for k, c in live.items() if c["status"] in ("warn", "fail")} >= wanted, live
    assert_replay_is_live(node, live, tmp_path)


def assert_replay_is_live(node: Node, live: dict[str, dict], tmp_path: Path) -> None:
    """The node's bundle replayed elsewhere gives every finding ``live`` holds, and says not
    checked (replay) for what only the node can answer."""
    rc, out, err = take(node, tmp_path / "out" / "node.tar.gz")
    assert (rc, err) == (0, "")
    rc, out, err = replay(tmp_path / "out" / "node.tar.gz", "-o", "json")
    assert err == ""
    replayed = {c["id"]: c for c in json.loads(out)["checks"]}
    assert list(replayed) == list(live)
    for id_, check in replayed.items():
        if checks.BY_ID[id_].live_only:
            assert check["status"] == "not-checked" and check["message"].startswith("not checked (replay)"), check
        else:
            assert check == live[id_], id_
    assert rc == (1 if any(c["status"] == "fail" for c in replayed.values()) else 0)
    table = replay(tmp_path / "out" / "node.tar.gz")[1]
    assert "SKIP  permissions" in table and "not checked (replay): needs who may write" in table


def test_the_replay_is_the_node_as_it_was_bundled(node: Node, tmp_path: Path) -> None:
    """The bundle is the node as it was: a repair made later changes the live doctor, not the replay."""
    take(node, tmp_path / "before.tar.gz")
    stale = node.doctor()["stale-endpoints"]
    node.hnsctl("endpoint", "delete", f"gone-pod_{node.cni_conf['name']}")
    assert node.doctor()["stale-endpoints"]["status"] == "ok"
    replayed = {c["id"]: c for c in json.loads(replay(tmp_path / "before.tar.gz", "-o", "json")[1])["checks"]}
    assert replayed["stale-endpoints"] == stale


def test_the_bundle_takes_nothing_but_its_allow_list(node: Node, tmp_path: Path) -> None:
    """A kubeconfig, token or key planted in every folder the bundle reads from is never taken,
    whatever its name; the stores come as names and owners, the debug log as its tail."""
    log = node.root / "log" / "wincni.log"
    log.parent.mkdir()
    log.write_bytes(b"".join(b'{"msg": "line %d"}\n' % i for i in range(120_000)))  # past the tail's size
    node.cni_conf["delegate"]["logFile"] = str(log)
    node.write_cni_conf(node.cni_conf)
    folders = {node.root, node.conf_dir, node.bin, node.ipam_dir, node.ipam_dir / node.cni_conf["name"]}
    folders |= {node.flannel_dir, log.parent}
    for folder in folders:
        for name in PLANTED:
            (folder / name).write_bytes(SECRET)
    rc, out, err = take(node, tmp_path / "b.tar.gz")
    assert rc == 0, err
    found = members(tmp_path / "b.tar.gz")
    for name, data in found.items():
        assert b"s3cr3t" not in data, name
        assert not any(p in name for p in PLANTED if p != "config"), name
    manifest = json.loads(found[MANIFEST])
    assert {Path(p).name for p in manifest["files"]} == {
        "10-flannel.conf",
        "subnet.env",
        "net-conf.json",
        "SourceVip.json",
        "netpol.json",  # the NetworkPolicy agent's state (absent here)
    }
    tail = found["logs/debug.log"]
    assert len(tail) <= LOG_TAIL and tail.startswith(b'{"msg"') and tail.endswith(b'"line 119999"}\n')
    store = json.loads(found[STORE_MEMBER])
    assert {r["container"] for r in store["reservations"]} >= {"pod-a", "pod-b"}
    assert set(store["reservations"][0]) == {"ip", "container", "ageSeconds"}
    records = json.loads(found[SANDBOX_MEMBER])["records"]  # who each reservation is for: names only
    assert {(r["container"], r["ifname"]) for r in records} == {("pod-a", "eth0"), ("pod-b", "eth0")}
    assert all(set(r) == {"ip", "container", "ifname", "netns"} for r in records)
    flannel = json.loads(found[FLANNEL_MEMBER])
    # names and owners, as flannel's GC sees the folder (the planted files too), never what they hold
    assert {c["name"] for c in flannel["configs"]} == {"pod-a", "pod-b", *(p for p in PLANTED if p[0] != ".")}
    assert all(set(c) == {"name", "owners"} for c in flannel["configs"])
    for member in ("hns/v2/loadbalancers.json", "hns/v1/endpoints.json", "node/install-manifest.json"):
        assert member in found, member
    assert json.loads(found["hns/version.json"]) == {"Major": 13, "Minor": 2}
    assert manifest["tools"]["build"] and manifest["os"]["system"]


def test_members_are_capped_and_what_is_left_out_is_named() -> None:
    taken = Members(member_cap=10, total_cap=15)
    assert taken.add("a", b"x" * 10) and not taken.add("big", b"x" * 11) and not taken.add("b", b"x" * 6)
    assert taken.add("c", b"x" * 5)
    assert list(taken.data) == ["a", "c"]
    assert set(taken.omitted) == {"big", "b"} and "member cap" in taken.omitted["big"]


def test_the_output_is_written_new_not_through_a_planted_link(node: Node, tmp_path: Path) -> None:
    out_dir = tmp_path / "reports"
    out_dir.mkdir()
    out_dir.chmod(0o777)  # others may write it: used as it is, through a file of our own
    victim = tmp_path / "victim"
    victim.write_bytes(b"keep me")
    (out_dir / "b.tar.gz").symlink_to(victim)
    rc, _, err = take(node, out_dir / "b.tar.gz")
    assert rc == 0, err
    assert victim.read_bytes() == b"keep me"
    assert not (out_dir / "b.tar.gz").is_symlink() and tarfile.is_tarfile(out_dir / "b.tar.gz")
    assert stat.S_IMODE(out_dir.stat().st_mode) == 0o777  # the folder is never changed
    assert stat.S_IMODE((out_dir / "b.tar.gz").stat().st_mode) == 0o600
    assert sorted(p.name for p in out_dir.iterdir()) == ["b.tar.gz"]  # no temp left


@pytest.mark.parametrize("mode, group", [(0o1777, 0), (0o2775, 100)], ids=["tmp", "group"])
def test_run_in_a_shared_folder_the_default_out_leaves_it_shared(node: Node, mode: int, group: int) -> None:
    """``--out`` defaults to the working folder: run from /tmp, every other user keeps /tmp."""
    os.chown(node.root, 0, group)
    node.root.chmod(mode)
    rc, out, err = node.wincni("bundle")
    assert rc == 0, err
    (written,) = node.root.glob("wincni-bundle-*.tar.gz")
    assert (stat.S_IMODE(node.root.stat().st_mode), node.root.stat().st_gid) == (mode, group)
    assert stat.S_IMODE(written.stat().st_mode) == 0o600 and tarfile.is_tarfile(written)


@pytest.mark.parametrize(
    "content, words",
    [
        (b"not a tar", "not a wincni bundle"),
        (None, "has no readable MANIFEST.json"),
        (b"", "not a wincni bundle"),
    ],
)
def test_a_bad_bundle_is_one_line_not_a_traceback(tmp_path: Path, content: bytes | None, words: str) -> None:
    path = tmp_path / "bad.tar.gz"
    path.write_bytes(_tar({"x": b"{}"}) if content is None else content)
    rc, out, err = replay(path)
    assert (rc, err) == (1, "") and words in out and out.startswith("FAILED: ") and out.count("\n") == 1


def _tar(files: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def realhns_bundle(path: Path) -> Path:
    """A bundle of the real-node captures (V1 networks and endpoints, a V2 load balancer) beside an
    overlay config naming their "External" network, as an operator's node would hand it over."""
    networks = json.loads((REALHNS / "04-v1-networks-list-overlay-external-and-nat-ws2019.json").read_bytes())
    version = networks["Output"][0]["Version"]
    endpoints = [
        json.loads((REALHNS / name).read_bytes())
        for name in ("05-v1-endpoint-nat-docker-ws2019.json", "07-v1-endpoint-remote-overlay-pa-flannel-fixture.json")
    ]
    lb = json.loads((REALHNS / "09-v2-loadbalancer-nodeport-kubeproxy-calico-derived.json").read_bytes())
    conf = {"cniVersion": "0.3.1", "name": "External", "type": "win-overlay", "ipam": {"subnet": "192.168.255.0/30"}}
    conf_dir = r"C:\etc\cni\net.d"
    conf_path = conf_dir + r"\10-overlay.conf"
    manifest = {
        "format": FORMAT,
        "platform": "win32",
        "cwd": "C:\\",
        "configs": {conf_dir: ["10-overlay.conf"]},
        "doctor": {
            "cni_conf": conf_dir,
            "subnet_env": r"C:\run\flannel\subnet.env",
            "net_conf": r"C:\etc\kube-flannel\net-conf.json",
            "source_vip": r"C:\k\SourceVip.json",
            "cni_bin_dir": r"C:\k\cni",
        },
        "exists": {conf_dir: True},
        "files": {
            conf_path: {"flag": "--cni-conf", "member": "files/0-10-overlay.conf", "owner": ""},
            r"C:\run\flannel\subnet.env": {"flag": "--subnet-env", "absent": True},
            r"C:\etc\kube-flannel\net-conf.json": {"flag": "--net-conf", "absent": True},
            r"C:\k\SourceVip.json": {"flag": "--source-vip", "absent": True},
        },
    }
    taken = Members()
    taken.json("files/0-10-overlay.conf", conf)
    taken.json(VERSION_MEMBER, {"Major": version >> 32, "Minor": version & 0xFFFFFFFF})
    taken.json("hns/v1/networks.json", networks["Output"])
    taken.json("hns/v1/endpoints.json", endpoints)
    taken.json("hns/v2/loadbalancers.json", [lb])
    path.write_bytes(archive(manifest, taken))
    return path


def test_real_node_documents_replay(tmp_path: Path) -> None:
    """V1 documents alone (what older nodes and most captures give): the checks that need the
    V2 view say the bundle lacks it, the rest run, nothing raises."""
    rc, out, err = replay(realhns_bundle(tmp_path / "real.tar.gz"), "-o", "json")
    assert err == ""
    found = {c["id"]: c for c in json.loads(out)["checks"]}
    assert found["config"]["status"] == "ok", found["config"]
    assert found["config"]["message"].startswith("C:\\etc\\cni\\net.d\\10-overlay.conf: win-overlay config")
    assert found["hns-network"]["status"] == "fail"
    assert "the bundle holds no V2 Network documents" in found["hns-network"]["message"]
    assert found["hns-network"]["fix"] == "replay a bundle that holds it"
    assert {found[i]["status"] for i in (c.id for c in checks.CHECKS if c.live_only)} == {"not-checked"}


def test_real_documents_read_through_the_recorded_backend(tmp_path: Path) -> None:
    """libhns reads the captures as it reads live HNS: the remote endpoint is remote, the NAT one
    is not, the load balancer's backends and ports parse, and the remote endpoint no load balancer
    lists is the one networkhealth.ps1 calls stale."""
    from tools.wincni.doctor.archive import replay as replaying
    from tools.wincni.node.hns import Inventory

    hcn, hnscall = replaying.load(str(realhns_bundle(tmp_path / "real.tar.gz"))).clients({})
    assert hnscall.version() == (9, 2)
    eps = hnscall.list_endpoints()
    assert [e.is_remote for e in eps] == [False, True]
    assert hnscall.get_endpoint(eps[1].id).name == "remote_10.244.2.141"
    (lb,) = hcn.list_load_balancers()
    assert lb.source_vip == "10.10.253.194" and lb.port_mappings[0]["ExternalPort"] == 31416
    assert hcn.get_load_balancer(lb.id) == lb
    inv = Inventory((), tuple(eps), (lb,))
    assert [e.name for e in inv.unreferenced_remote_endpoints] == ["remote_10.244.2.141"]
    with pytest.raises(Exception, match="read-only"):
        hnscall.delete_endpoint(eps[0].id)


def test_the_bundle_says_what_hns_would_not_list(node: Node, tmp_path: Path) -> None:
    """An HNS that refuses ``GET /policylists/`` is named in the manifest and on stdout, not an
    empty list in the bundle; one that answers has its policy lists recorded."""
    out = node.wincni("bundle", "--out", str(tmp_path / "a.tar.gz"))[1]
    assert "hns/v1/policylists.json" in members(tmp_path / "a.tar.gz"), out
    refusing = {**node.env, "LIBHNS_SIM_FAULTS": "HNSCall:GET /policylists/=0x803B0015"}
    rc, out, _ = node.wincni("bundle", "--out", str(tmp_path / "b.tar.gz"), env=refusing)
    manifest = json.loads(members(tmp_path / "b.tar.gz")[MANIFEST])
    assert "hns/v1/policylists.json" in manifest["hnsErrors"]
    assert "hns/v1/policylists.json" not in members(tmp_path / "b.tar.gz")
    assert "not recorded hns/v1/policylists.json" in out


def test_bundle_default_name_is_in_the_working_folder(node: Node) -> None:
    rc, out, err = node.wincni("bundle")
    assert rc == 0, err
    path = Path(out.split(":")[0])
    assert path.parent == node.root and path.name.startswith("wincni-bundle-") and path.name.endswith(".tar.gz")
    assert os.path.getsize(path) < TOTAL_CAP
