"""``wincni sourcevip`` on a simulated overlay node: the reservation, its permanence against pod DEL
and GC, idempotence, a new subnet, a network that comes up late, and the doctor agreeing."""
from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from libhns import hnsctl
from plugins.cni import skel
from plugins.flannel import subnet_env
from plugins.ipam_host_local.__main__ import SPEC as HOST_LOCAL
from plugins.wincni.__main__ import build_parser, main
from plugins.wincni.facts import default_paths
from plugins.wincni.sourcevip import run

LEASE = "FLANNEL_NETWORK=10.244.0.0/16\nFLANNEL_SUBNET={}\nFLANNEL_MTU=1450\nFLANNEL_IPMASQ=true\n"


class OverlayNode:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.env = {"LIBHNS_BACKEND": "sim", "LIBHNS_SIM_DIR": str(root / "hns")}
        self.lease("10.244.4.1/24")
        self.conf = root / "10-flannel.conflist"
        self.conf.write_text(json.dumps({"cniVersion": "1.0.0", "name": "vxlan0", "plugins": [{
            "type": "flannel", "subnetFile": str(root / "subnet.env"), "ipam": {"dataDir": str(root / "ipam")},
            "delegate": {"type": "win-overlay"}}]}))
        self.out = root / "k" / "sourceVip.json"
        self.store = root / "ipam" / "vxlan0"

    def lease(self, subnet: str) -> None:
        (self.root / "subnet.env").write_text(LEASE.format(subnet))

    def network(self, subnet: str = "10.244.4.0/24") -> None:
        err = io.StringIO()
        assert hnsctl.main(["network", "create", "vxlan0", "--type", "Overlay", "--subnet", subnet, "--vsid", "4096",
                            "--management-ip", "10.127.130.36"], io.StringIO(), err, self.env) == 0, err.getvalue()

    def sourcevip(self, *args: str, expect: int = 0, clock=None, sleep=None) -> dict:
        argv = ["sourcevip", "--cni-conf", str(self.conf), "--out", str(self.out), "-o", "json", *args]
        parsed = build_parser(default_paths("linux"), "linux").parse_args(argv)
        out = io.StringIO()
        extra = {"clock": clock, "sleep": sleep} if clock else {}
        rc = run(parsed, out, self.env, "linux", str(self.root), **extra)
        doc = json.loads(out.getvalue())
        assert rc == expect, doc
        return doc

    def host_local(self, command: str, cid: str, **extra) -> int:
        """A pod's IPAM call exactly as flannel -> win-overlay makes it for this lease."""
        subnet = subnet_env.load(str(self.root / "subnet.env")).subnet
        conf = {"cniVersion": "1.1.0", "name": "vxlan0", "type": "win-overlay",
                "ipam": {"type": "host-local", "subnet": str(subnet), "dataDir": str(self.root / "ipam")}, **extra}
        env = {"CNI_COMMAND": command, "CNI_CONTAINERID": cid, "CNI_NETNS": "ns", "CNI_IFNAME": "eth0",
               "CNI_PATH": "/opt/cni/bin"}
        out = io.StringIO()
        rc = skel.run(HOST_LOCAL, env, io.BytesIO(json.dumps(conf).encode()), out, io.StringIO(), platform="linux")
        self.last = json.loads(out.getvalue()) if out.getvalue() else None
        return rc

    def reserved(self) -> dict[str, str]:
        return {p.name: p.read_bytes().decode() for p in self.store.iterdir() if p.name[0].isdigit()}


@pytest.fixture
def node(tmp_path: Path) -> OverlayNode:
    return OverlayNode(tmp_path)


def test_reserve_then_idempotent_and_pods_never_get_it(node: OverlayNode) -> None:
    node.network()
    doc = node.sourcevip()
    vip = doc["sourceVip"]
    assert doc["flags"] == [f"--source-vip={vip}", "--network-name=vxlan0"] and doc["written"]
    assert json.loads(node.out.read_text()) == {"cniVersion": "0.2.0", "ip4": {"ip": f"{vip}/24", "gateway": "10.244.4.1"},
                                               "dns": {}}
    assert node.reserved() == {vip: "_wincni-source-vip\r\nsourcevip"}

    again = node.sourcevip()
    assert (again["sourceVip"], again["written"], again["released"]) == (vip, False, [])

    assert node.host_local("ADD", "pod1") == 0
    pod_ip = node.last["ips"][0]["address"].split("/")[0]
    assert pod_ip != vip
    assert node.host_local("DEL", "pod1") == 0
    assert node.host_local("GC", "x", **{"cni.dev/valid-attachments": []}) == 0
    assert node.reserved() == {vip: "_wincni-source-vip\r\nsourcevip"}
    assert node.sourcevip()["sourceVip"] == vip


def test_a_new_subnet_releases_the_old_address(node: OverlayNode) -> None:
    node.network()
    old = node.sourcevip()["sourceVip"]
    node.lease("10.244.9.1/24")  # the node rejoined with another lease
    doc = node.sourcevip()
    assert doc["released"] == [old] and doc["sourceVip"].startswith("10.244.9.") and doc["written"]
    assert list(node.reserved()) == [doc["sourceVip"]]
    assert json.loads(node.out.read_text())["ip4"]["ip"] == doc["sourceVip"] + "/24"


def test_waits_for_a_network_that_comes_up_late(node: OverlayNode) -> None:
    now = [0.0]

    def sleep(seconds: float) -> None:  # flanneld creates the network during the second wait
        now[0] += seconds
        if now[0] == 2.0:
            node.network()
    doc = node.sourcevip("--timeout", "30", clock=lambda: now[0], sleep=sleep)
    assert doc["sourceVip"] and now[0] == 2.0


def test_gives_up_after_the_timeout_naming_what_is_missing(node: OverlayNode) -> None:
    now = [0.0]
    doc = node.sourcevip("--timeout", "5", expect=1, clock=lambda: now[0],
                         sleep=lambda s: now.__setitem__(0, now[0] + s))
    assert "HNS network 'vxlan0' not there after 5 s" in doc["error"] and now[0] == 5.0
    (node.root / "subnet.env").unlink()
    node.network()
    doc = node.sourcevip("--timeout", "0", expect=1, clock=lambda: 0.0, sleep=lambda s: None)
    assert "flanneld's lease" in doc["error"] and not node.out.exists()


def test_the_doctor_agrees(node: OverlayNode) -> None:
    node.network()
    vip = node.sourcevip()["sourceVip"]
    bin_dir = node.root / "bin"
    bin_dir.mkdir()
    for plugin in ("flannel", "win-overlay", "host-local"):
        (bin_dir / plugin).write_text("")

    def doctor() -> dict:
        out = io.StringIO()
        main(["doctor", "--cni-conf", str(node.conf), "--cni-bin-dir", str(bin_dir), "--source-vip", str(node.out),
              "--net-conf", str(node.root / "none.json"), "-o", "json"], out, io.StringIO(), node.env,
             platform="linux", cwd=str(node.root))
        return {c["id"]: c for c in json.loads(out.getvalue())["checks"]}
    found = doctor()
    assert found["source-vip"]["status"] == "ok" and "reserved" in found["source-vip"]["message"], found["source-vip"]
    assert found["ipam-store"]["status"] == "ok", found["ipam-store"]

    (node.store / vip).unlink()  # reserved by nobody: a pod may get it
    assert doctor()["source-vip"]["status"] == "warn"
    (node.store / vip).write_bytes(b"pod7\r\neth0")  # and a pod did
    err = io.StringIO()
    assert hnsctl.main(["endpoint", "create", "pod7_vxlan0", "--network", "vxlan0", "--ip", vip],
                       io.StringIO(), err, node.env) == 0, err.getvalue()
    check = doctor()["source-vip"]
    assert check["status"] == "fail" and "pod7" in check["message"] and "wincni sourcevip" in check["fix"]


def test_table_output_and_a_bad_config(node: OverlayNode) -> None:
    node.network()
    out = io.StringIO()
    argv = ["sourcevip", "--cni-conf", str(node.conf), "--out", str(node.out)]
    assert main(argv, out, io.StringIO(), node.env, platform="linux", cwd=str(node.root)) == 0
    assert "kube-proxy  --source-vip=10.244.4." in out.getvalue() and "--network-name=vxlan0" in out.getvalue()
    node.conf.write_text("{not json")
    out = io.StringIO()
    assert main(argv, out, io.StringIO(), node.env, platform="linux", cwd=str(node.root)) == 1
    assert out.getvalue().startswith("FAILED: ")


def test_the_doctor_counts_the_source_vip_as_the_nodes_own(node: OverlayNode) -> None:
    node.network()
    node.sourcevip()
    out = io.StringIO()
    main(["doctor", "--cni-conf", str(node.conf), "--cni-bin-dir", str(node.root), "--source-vip", str(node.out),
          "-o", "json"], out, io.StringIO(), node.env, platform="linux", cwd=str(node.root))
    [store] = [c for c in json.loads(out.getvalue())["checks"] if c["id"] == "ipam-store"]
    assert store["status"] == "ok" and store["message"].startswith("0 reservation(s)")
    assert "1 of the node's own" in store["message"]
