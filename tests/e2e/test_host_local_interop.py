"""host-local interop with the Go reference binary on one store: same bytes, each releases the
other's reservations, and interleaved or parallel runs never double-allocate."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from basics.safefs import checked_folder
from plugins.ipam_host_local.store import DiskStore, load_index

GO = Path(os.environ.get("WINCNI_GO_HOST_LOCAL", "/usr/lib/cni/host-local"))
BIN = Path(sys.executable).with_name("host-local")
OURS = [str(BIN)] if BIN.exists() else [sys.executable, "-m", "plugins.ipam_host_local"]
REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(
    not GO.exists(),
    reason=f"Go host-local not found at {GO}: apt-get install containernetworking-plugins "
    "(or set WINCNI_GO_HOST_LOCAL)",
)


def start(cmd: list[str], command: str, cid: str, conf: dict, netns: str = "/var/run/netns/x") -> subprocess.Popen:
    env = {
        "PATH": os.environ.get("PATH", ""),
        "CNI_COMMAND": command,
        "CNI_CONTAINERID": cid,
        "CNI_NETNS": netns,
        "CNI_IFNAME": "eth0",
        "CNI_PATH": str(GO.parent),
    }
    p = subprocess.Popen(cmd, env=env, cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdin.write(json.dumps(conf).encode())
    p.stdin.close()
    return p


def finish(p: subprocess.Popen) -> dict | None:
    out = p.stdout.read()
    p.stderr.close()
    p.stdout.close()
    assert p.wait(60) == 0, out
    return json.loads(out) if out.strip() else None


def run(cmd: list[str], command: str, cid: str, conf: dict) -> dict | None:
    return finish(start(cmd, command, cid, conf))


@pytest.fixture
def conf(tmp_path) -> dict:
    # cniVersion 1.0.0: Debian's build (plugins 1.1.x) does not speak 1.1.0.
    return {
        "cniVersion": "1.0.0",
        "name": "mixed",
        "type": "bridge",
        "ipam": {"type": "host-local", "subnet": "10.7.0.0/26", "dataDir": str(tmp_path)},
    }


def addr(res: dict) -> str:
    return res["ips"][0]["address"]


def store_owners(d: Path) -> dict:
    scan = DiskStore(str(d), "linux")
    scan.rescan()
    current = load_index(checked_folder(str(d)))
    assert current is None or current == scan.index
    return {str(ip): o.container_id for ip, o in scan.allocations()}


def test_same_bytes_and_round_robin_across_plugins(tmp_path, conf):
    d = tmp_path / "mixed"
    go = run([str(GO)], "ADD", "go1", conf)
    go_bytes = {n: (d / n).read_bytes() for n in os.listdir(d)}
    ours = run(OURS, "ADD", "py1", conf)
    assert (addr(go), addr(ours)) == ("10.7.0.2/26", "10.7.0.3/26")  # round-robin continues across plugins
    assert (d / "10.7.0.3").read_bytes() == go_bytes["10.7.0.2"].replace(b"go1", b"py1")
    assert (d / "last_reserved_ip.0").read_bytes() == b"10.7.0.3"
    assert run([str(GO)], "ADD", "go2", conf)["ips"][0]["address"] == "10.7.0.4/26"


def test_each_releases_the_others_reservations(tmp_path, conf):
    d = tmp_path / "mixed"
    run(OURS, "ADD", "py1", conf)  # our index now exists
    run([str(GO)], "ADD", "go1", conf)  # written behind its back
    run(OURS, "DEL", "go1", conf)
    run([str(GO)], "DEL", "py1", conf)
    assert store_owners(d) == {}
    run([str(GO)], "ADD", "go2", conf)
    run(OURS, "DEL", "go2", conf)
    assert store_owners(d) == {}


def test_interleaved_parallel_never_double_allocates(tmp_path, conf):
    procs = [start([str(GO)] if i % 2 else OURS, "ADD", f"c{i}", conf) for i in range(40)]
    results = [finish(p) for p in procs]
    addrs = [addr(r) for r in results]
    assert len(set(addrs)) == 40
    owners = store_owners(tmp_path / "mixed")
    assert sorted(owners.values()) == sorted(f"c{i}" for i in range(40))
    dels = [start(OURS if i % 2 else [str(GO)], "DEL", f"c{i}", conf) for i in range(40)]
    for p in dels:
        finish(p)
    assert store_owners(tmp_path / "mixed") == {}


def test_sandbox_records_leave_the_go_plugin_as_it_was(tmp_path, conf):
    """Our ADD records its sandbox in a folder of the store (``store.SANDBOXES``): the Go plugin,
    which walks the store's whole tree, still finds, checks and releases our reservations and
    reserves beside them; a record the Go plugin's DEL left behind goes at our next rebuild."""
    from plugins.ipam_host_local.store import SANDBOXES

    d = tmp_path / "mixed"
    guid = "5E3C8F0A-1B2C-4D5E-8F90-A1B2C3D4E5F6"
    ours = finish(start(OURS, "ADD", "py1", conf, guid))
    assert os.listdir(d / SANDBOXES) == ["10.7.0.2"]
    prev = {**conf, "prevResult": ours}
    assert run([str(GO)], "CHECK", "py1", prev) is None  # found through the walk, the record not taken for it
    assert addr(run([str(GO)], "ADD", "go1", conf)) == "10.7.0.3/26"
    run([str(GO)], "DEL", "go1", conf)
    assert os.listdir(d / SANDBOXES) == ["10.7.0.2"]  # not released as if it were go1's or py1's
    run([str(GO)], "DEL", "py1", conf)
    assert store_owners(d) == {}
    py2 = addr(finish(start(OURS, "ADD", "py2", conf, guid))).split("/")[0]
    assert os.listdir(d / SANDBOXES) == [py2]  # py1's, which the Go DEL left, pruned
