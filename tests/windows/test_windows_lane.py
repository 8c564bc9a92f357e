"""The package zip as a Windows node runs it: Wine processes, ``C:\\k\\cni``, the ctypes path to HNS.

Wine starts a process in ~2.5 s, so each case is chosen for what only Windows exercises: the
frozen Windows bundle itself, ``CNI_PATH`` with ``.exe`` lookup, Windows default paths on drive
C:, ``ctypes.WinDLL`` with the real signatures, ``LockFileEx`` in host-local, CNI errors printed
by a Windows process. Every case asserts on what HNS (the simulator behind the fake DLLs) and the
host-local store hold afterwards.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import time
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from hnsnode import first_ip
from testdata import FIXTURES
from tools.wincni.node.installed import CONTENTS_PREFIX
from winbuild.dist import PLUGINS
from winenode import WineNode, toolchain


@pytest.fixture(scope="module")
def cluster(node: WineNode) -> WineNode:
    """flanneld's part: both networks, cbr0's host endpoint and the node's lease at its Windows path."""
    node.bridge("cbr0")
    node.overlay("vxlan0")
    return node.lease()


def test_version_of_every_exe_and_its_cost_over_the_wine_floor(node: WineNode, timings: dict) -> None:
    for name in PLUGINS:
        run = node.run("VERSION", {"cniVersion": "1.1.0"}, plugin=name)
        assert run.ok and "1.1.0" in run.out["supportedVersions"], (name, run.stderr)
    stdin = json.dumps({"cniVersion": "1.1.0"}).encode()
    plugin = [node.timed(node.exe("win-bridge"), stdin, CNI_COMMAND="VERSION") for _ in range(5)]
    floor = [node.timed(r"C:\k\cni\trivial.exe") for _ in range(5)]
    timings.update(version_s=statistics.median(plugin), floor_s=statistics.median(floor))
    assert timings["version_s"] < timings["floor_s"] + 5, timings


def test_every_exe_names_the_packages_one_build_and_its_commit(node: WineNode, package_zip: Path) -> None:
    """Built under Wine, where the Windows Python finds no git: the commit came from the host."""
    from buildids import assert_one_build

    with zipfile.ZipFile(package_zip) as zf:
        [build] = {n.split("/")[0][len(CONTENTS_PREFIX) :] for n in zf.namelist() if n.startswith(CONTENTS_PREFIX)}
    assert_one_build(lambda name: node.wine(node.exe(name), "--version").stdout.decode(), build)


LIFECYCLES = [  # (fixture, net-conf, network, sandbox API, extra env)
    ("cni.conf.l2bridge-v1.json", "net-conf.host-gw.json", "cbr0", "v1", {}),
    ("cni.conf.l2bridge-v2.json", "net-conf.host-gw.json", "cbr0", "v2", {}),
    ("cni.conf.overlay-v1.json", "net-conf.vxlan.json", "vxlan0", "v1", {}),
    ("cni.conf.overlay-v2.json", "net-conf.vxlan.json", "vxlan0", "v2", {}),
    # flannel exec'ing win-bridge.exe even where it could run its sibling in-process, found in
    # the second entry of a `;`-separated CNI_PATH.
    (
        "cni.conf.l2bridge-v2.json",
        "net-conf.host-gw.json",
        "cbr0",
        "v2",
        {"WINCNI_NO_INPROCESS": "1", "CNI_PATH": r"C:\opt\cni\bin;C:\k\cni"},
    ),
]


@pytest.mark.parametrize(
    "fixture,net_conf,network,api,env",
    LIFECYCLES,
    ids=[
        "l2bridge-dockershim",
        "l2bridge-containerd",
        "overlay-dockershim",
        "overlay-containerd",
        "l2bridge-containerd-exec",
    ],
)
def test_flannel_pod_lifecycle(
    cluster: WineNode, fixture: str, net_conf: str, network: str, api: str, env: dict
) -> None:
    node = cluster
    node.network = network
    node.write_net_conf(json.loads((FIXTURES / net_conf).read_text()))
    conf = json.loads((FIXTURES / fixture).read_text())
    conf["cniVersion"] = "1.0.0"  # the fixture's node config, new enough for CHECK
    cid = f"pod-{api}-{network}{'-exec' if env else ''}"
    netns = node.sandbox(api, cid)

    add = node.run("ADD", conf, cid, netns, plugin="flannel", **env)
    assert add.ok, (add.out, add.stderr)
    ip, _ = first_ip(add.out)
    endpoint = node.endpoints()[f"{cid}_{network}"]
    assert endpoint["IPAddress"] == ip and endpoint["ID"].upper() in node.attachments()
    assert node.ip_files()[ip] == cid
    assert node.sandbox_records() == {ip: (cid, netns)}  # written through the Windows path, no descriptor
    saved = node.flannel_dir / cid
    assert json.loads(saved.read_text())["type"] == ("win-overlay" if network == "vxlan0" else "win-bridge")
    listed = {e["Name"] for e in node.hnsctl_exe("endpoint", "list")}
    assert f"{cid}_{network}" in listed

    if api == "v1":  # dockershim's app container joins the pause container's endpoint
        app, app_netns = f"{cid}-app", f"container:{cid}"
        node.hnsctl("container", "create", app)
        joined = node.run("ADD", conf, app, app_netns, plugin="flannel", **env)
        assert joined.ok and first_ip(joined.out)[0] == ip, (joined.out, joined.stderr)
        assert sorted(node.endpoints()[f"{cid}_{network}"]["SharedContainers"]) == sorted([cid, app])
        assert node.run("DEL", conf, app, app_netns, plugin="flannel", **env).ok
        assert node.endpoints()[f"{cid}_{network}"]["SharedContainers"] == [cid]
        assert node.ip_files()[ip] == cid and node.sandbox_records() == {ip: (cid, netns)}

    check = node.run("CHECK", {**conf, "prevResult": add.out}, cid, netns, plugin="flannel", **env)
    assert check.ok, (check.out, check.stderr)

    for _ in range(2):  # DEL is idempotent
        delete = node.run("DEL", conf, cid, netns, plugin="flannel", **env)
        assert delete.ok, (delete.out, delete.stderr)
    node.assert_clean(cid)
    assert not saved.exists()


def test_hns_fault_mid_add_leaves_nothing_behind(cluster: WineNode) -> None:
    node = cluster
    node.network = "cbr0"
    conf = {
        "cniVersion": "1.0.0",
        "name": "cbr0",
        "type": "win-bridge",
        "ipam": {"type": "host-local", "subnet": "10.244.4.0/24"},
    }
    netns = node.sandbox("v2", "faulted")
    run = node.fault_run("ADD", conf, "faulted", netns, "HcnModifyNamespace#1=0x803B0014")
    assert run.failed(100, "HcnModifyNamespace")
    assert "Traceback" not in run.stderr
    node.assert_clean("faulted")
    assert not node.ip_files(), "the address was not released"


def test_the_hns_dlls_come_from_system32_only(cluster: WineNode) -> None:
    """A computenetwork.dll beside the executables or in their contents folder is never loaded
    (LoadLibrary's default search tries both before System32; hcsshim loads from System32 only)."""
    node = cluster
    node.network = "cbr0"
    cni = node.path(r"C:\k\cni")
    planted = [cni / "computenetwork.dll", *(d / "computenetwork.dll" for d in cni.glob("_wincni-*"))]
    conf = {
        "cniVersion": "1.0.0",
        "name": "cbr0",
        "type": "win-bridge",
        "apiVersion": 2,
        "ipam": {"type": "host-local", "subnet": "10.244.4.0/24"},
    }
    netns = node.sandbox("v2", "planted")
    try:
        for path in planted:
            path.write_bytes(b"MZ: not the DLL HNS is")
        add = node.run("ADD", conf, "planted", netns)
        assert add.ok, (add.out, add.stderr)
        assert node.run("DEL", conf, "planted", netns).ok
    finally:
        for path in planted:
            path.unlink()
    node.assert_clean("planted")


def test_a_hung_hcn_create_endpoint_is_code_11_in_time_and_the_next_add_succeeds(
    cluster: WineNode, timings: dict
) -> None:
    """The ctypes call blocks in the DLL (the simulator behind it sleeps); the .exe gives up at
    the per-call timeout, undoes, prints code 11 and exits while the call is still blocked. HNS
    then completes the call late (the endpoint appears, attached to nothing); the runtime's retry
    replaces it: one endpoint, one address."""
    node = cluster
    node.network = "cbr0"
    conf = {
        "cniVersion": "1.0.0",
        "name": "cbr0",
        "type": "win-bridge",
        "ipam": {"type": "host-local", "subnet": "10.244.4.0/24"},
        "hnsTimeout": {"call": 3, "undo": 3},
    }
    netns = node.sandbox("v2", "hung")
    hang = 25.0
    start = time.monotonic()
    run = node.fault_run("ADD", conf, "hung", netns, f"HcnCreateEndpoint#1=hang:{hang:g}")
    took = timings["hung_add_s"] = time.monotonic() - start
    run.failed(11, "HcnCreateEndpoint", "no answer from HNS after 3.0 s")
    assert "Traceback" not in run.stderr
    assert took < hang - 5, f"the .exe waited for the hung call ({took:.1f} s)"
    assert not node.ip_files(), "the address was not released"
    time.sleep(max(0.0, hang + 2 - (time.monotonic() - start)))  # HNS answers the call late
    assert "hung_cbr0" in node.endpoints()
    retry = node.run("ADD", conf, "hung", netns)
    assert retry.ok, (retry.out, retry.stderr)
    assert "removing stale HNS endpoint hung_cbr0" in retry.stderr
    assert list(node.ip_files().values()) == ["hung"]
    assert [n for n in node.endpoints() if n.startswith("hung_")] == ["hung_cbr0"]
    assert node.run("DEL", conf, "hung", netns).ok
    node.assert_clean("hung")


def test_parallel_host_local_adds_get_distinct_addresses(node: WineNode) -> None:
    node.network = "parallel"
    conf = {"cniVersion": "1.0.0", "name": "parallel", "ipam": {"type": "host-local", "subnet": "10.250.0.0/28"}}
    cids = [f"par{i}" for i in range(10)]
    with ThreadPoolExecutor(len(cids)) as pool:
        runs = list(pool.map(lambda cid: node.run("ADD", conf, cid, "none", plugin="host-local"), cids))
    assert all(r.ok for r in runs), [(r.out, r.stderr) for r in runs if not r.ok]
    addresses = [first_ip(r.out)[0] for r in runs]
    assert len(set(addresses)) == len(cids), addresses
    assert node.ip_files() == dict(zip(addresses, cids))


@pytest.mark.parametrize(
    "stdin,code,word",
    [
        (b'{"cniVersion": "1.0.0", "name": ', 6, "JSON"),
        (
            json.dumps(
                {
                    "cniVersion": "1.0.0",
                    "name": "cbr0",
                    "type": "win-bridge",
                    "ipam": {"type": "host-local", "subnet": "10.244.4.0/33"},
                }
            ).encode(),
            7,
            "subnet",
        ),
    ],
    ids=["undecodable", "bad-subnet"],
)
def test_bad_input_is_a_cni_error_not_a_traceback(cluster: WineNode, stdin: bytes, code: int, word: str) -> None:
    node = cluster
    node.network = "cbr0"
    before = set(node.endpoints())
    run = node.run("ADD", stdin, "bad", node.sandbox("v2", "bad"), plugin="win-bridge")
    run.failed(code, word)
    assert "Traceback" not in run.stderr
    assert set(node.endpoints()) == before and "bad" not in node.ip_files().values()


def test_doctor_reads_the_node_at_its_windows_default_paths(cluster: WineNode) -> None:
    """wincni.exe doctor with no flags: C:\\k\\cni\\config\\, C:\\run\\flannel\\subnet.env, the HNS of
    the fake DLLs. A pod is up, so the host-local store and HNS agree; then the lease is
    moved out of the network's subnet and the doctor must fail naming it."""
    node = cluster
    node.network = "cbr0"
    conf = json.loads((FIXTURES / "cni.conf.l2bridge-v2.json").read_text())
    conf["cniVersion"] = "1.0.0"
    node.write_cni_conf(conf, "cni.conf")
    node.write_net_conf(json.loads((FIXTURES / "net-conf.host-gw.json").read_text()))
    netns = node.sandbox("v2", "doc-pod")
    add = node.run("ADD", conf, "doc-pod", netns, plugin="flannel")
    assert add.ok, (add.out, add.stderr)

    def doctor() -> tuple[int, dict]:
        proc = node.wine(node.exe("wincni"), "doctor", "-o", "json")
        assert b"Traceback" not in proc.stderr, proc.stderr.decode()
        return proc.returncode, {c["id"]: c for c in json.loads(proc.stdout)["checks"]}

    rc, checks = doctor()
    assert rc == 0 and checks["hns-network"]["status"] == "ok", checks
    assert checks["config"]["status"] == checks["ipam-store"]["status"] == "ok", checks
    lease = node.subnet_env
    healthy = lease.read_text()
    try:
        lease.write_text(healthy.replace("10.244.4.", "10.99.4."))
        rc, checks = doctor()
        assert rc == 1 and checks["subnet-env"]["status"] == "fail", checks
        assert "10.99.4." in checks["subnet-env"]["message"], checks["subnet-env"]
    finally:
        lease.write_text(healthy)
        assert node.run("DEL", conf, "doc-pod", netns, plugin="flannel").ok
        node.assert_clean("doc-pod")


def test_standalone_first_adds_create_one_network_under_the_programdata_lock(node: WineNode) -> None:
    """Three first ADDs of a win-bridge with a ``network`` section, at once: the lock is the
    Windows branch (LockFileEx on C:\\ProgramData\\wincni\\network-solo0.lock), and the wait for
    the management IP goes through HNSCall V1 beside HCN, as flanneld's does."""
    node.network = "solo0"
    conf = {
        "cniVersion": "1.0.0",
        "name": "solo0",
        "type": "win-bridge",
        "apiVersion": 2,
        "network": {"subnet": "10.244.9.0/24", "adapter": "Ethernet"},
        "ipam": {"type": "host-local", "subnet": "10.244.9.0/24"},
    }
    pods = [(f"solo{i}", node.sandbox("v2", f"solo{i}")) for i in range(3)]
    with ThreadPoolExecutor(len(pods)) as pool:
        runs = list(pool.map(lambda pod: node.run("ADD", conf, *pod), pods))
    assert all(r.ok for r in runs), [(r.out, r.stderr) for r in runs if not r.ok]
    assert [n["Name"] for n in node.hnsctl("network", "list", "-o", "json")].count("solo0") == 1
    assert node.path(r"C:\ProgramData\wincni\network-solo0.lock").exists()
    assert node.endpoints()["solo0_ep"]["IPAddress"] == "10.244.9.2"  # flanneld's host endpoint, via HNSCall
    for cid, netns in pods:
        assert node.run("DEL", conf, cid, netns).ok
        node.assert_clean(cid)
    assert "solo0" in {n["Name"] for n in node.hnsctl("network", "list", "-o", "json")}  # DEL keeps it


@pytest.mark.parametrize(
    "argv, stdin, env",
    [
        (("wincni", "doctor", "-o", "json"), b"", {}),
        (("hnsctl", "dump", "-o", "json"), b"", {}),
        (("win-bridge",), b"{}", {"CNI_COMMAND": "VERSION"}),
    ],
)
def test_a_closed_stdout_ends_a_windows_program_quietly(node: WineNode, argv: tuple, stdin: bytes, env: dict) -> None:
    """As tests/e2e/test_closed_pipe.py, for the .exe files: stdout a pipe whose reader has exited."""
    read, write = os.pipe()
    reader = subprocess.Popen(["head", "-c", "0"], stdin=read)
    os.close(read)
    reader.wait(timeout=30)
    try:
        proc = subprocess.run(
            [str(toolchain.WINE), node.exe(argv[0]), *argv[1:]],
            input=stdin,
            stdout=write,
            stderr=subprocess.PIPE,
            cwd=node.drive_c / "k",
            env={**node.win_env, **env},
            timeout=300,
        )
    finally:
        os.close(write)
    assert proc.returncode == 141 and proc.stderr == b"", (proc.returncode, proc.stderr.decode(errors="replace"))
