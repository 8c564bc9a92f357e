"""flannel's contract with the runtime and its delegate, through ``main`` and the real executables.

The delegate is a fake plugin on CNI_PATH that records what it was given and prints a result, so
these tests see exactly what flannel sends and prints, independently of win-bridge / win-overlay.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hnsnode import Node, drain_jsonl
from testdata import FIXTURES, GOLDENS

GOLDEN = GOLDENS / "flannel-win-bridge.json"
VENV_BIN = Path(sys.executable).parent
REPO = Path(__file__).resolve().parents[2]
RESULT = {
    "cniVersion": "0.3.1",
    "interfaces": [{"name": "x_cbr0", "mac": "00-15-5D-52-C0-01"}],
    "ips": [{"version": "4", "address": "10.244.4.2/24", "gateway": "10.244.4.2"}],
    "dns": {},
}

FAKE = f"""#!{sys.executable} -S
import json, os, sys
cmd = os.environ["CNI_COMMAND"]
with open(os.environ["FAKE_RECORD"], "a") as f:
    f.write(json.dumps({{"plugin": os.path.basename(sys.argv[0]), "cmd": cmd, "stdin": sys.stdin.read(),
                        "env": {{k: v for k, v in os.environ.items() if k.startswith("CNI_")}}}}) + "\\n")
if cmd in os.environ.get("FAKE_FAIL", "").split(","):
    print(json.dumps({{"cniVersion": "1.1.0", "code": int(os.environ.get("FAKE_CODE", "11")), "msg": "fake " + cmd + " failed"}}))
    sys.exit(1)
if cmd == "ADD":
    print(os.environ["FAKE_RESULT"])
"""


class RecordingNode(Node):
    """The node with a recording fake as both delegates (flannel runs in-process: ``Node.flannel``);
    host-local's store is left as the fixture has it (the fake never runs IPAM)."""

    def __init__(self, root: Path) -> None:
        super().__init__(root, "flannel")
        self.lease()
        for name in ("win-bridge", "win-overlay"):
            (self.bin / name).unlink()
            (self.bin / name).write_text(FAKE)
            (self.bin / name).chmod(0o755)
        self.record = root / "record.jsonl"
        self.env.update(
            CNI_CONTAINERID="pod1", CNI_NETNS="none", FAKE_RECORD=str(self.record), FAKE_RESULT=json.dumps(RESULT)
        )

    def flannel_conf(self, fixture: str = "cni.conf.l2bridge-v1.json", **changes) -> dict:
        return super().flannel_conf(fixture, ipam_store=False, **changes)

    def calls(self) -> list[dict]:
        """What the fake delegates were given since the last look."""
        return drain_jsonl(self.record)

    def saved(self) -> dict[str, bytes]:
        """flannel's saved delegate configs by container ID."""
        if not self.flannel_dir.exists():
            return {}
        return {p.name: p.read_bytes() for p in self.flannel_dir.iterdir() if p.is_file()}


pytestmark = pytest.mark.node(build=RecordingNode)


@pytest.mark.parametrize(
    "fixture, net_conf, plugin",
    [
        ("cni.conf.l2bridge-v1.json", "net-conf.host-gw.json", "win-bridge"),
        ("cni.conf.l2bridge-v2.json", "net-conf.host-gw.json", "win-bridge"),
        ("cni.conf.overlay-v1.json", "net-conf.vxlan.json", "win-overlay"),
        ("cni.conf.overlay-v2.json", "net-conf.vxlan.json", "win-overlay"),
    ],
)
def test_add_then_del_with_every_node_fixture(node, fixture, net_conf, plugin):
    node.net_conf.write_bytes((FIXTURES / net_conf).read_bytes())
    conf = node.flannel_conf(fixture)
    rc, out = node.flannel("ADD", conf)
    assert (rc, out) == (0, RESULT)  # the delegate's result, printed unchanged
    [add] = node.calls()
    sent = json.loads(add["stdin"])
    assert (add["plugin"], add["cmd"], add["env"]["CNI_CONTAINERID"], add["env"]["CNI_IFNAME"]) == (
        plugin,
        "ADD",
        "pod1",
        "eth0",
    )
    assert sent == {
        **json.loads((FIXTURES / fixture).read_text())["delegate"],
        "name": conf["name"],
        "ipMasq": True,
        "ipMasqNetwork": "10.244.0.0/16",
        "cniVersion": conf["cniVersion"],
        "ipam": {"type": "host-local", "subnet": "10.244.4.0/24"},
    }
    assert node.saved() == {"pod1": add["stdin"].encode()}  # saved before the delegate ran, the same bytes

    assert node.flannel("DEL", conf) == (0, None)
    [delete] = node.calls()
    assert (delete["plugin"], delete["cmd"], delete["stdin"]) == (plugin, "DEL", add["stdin"])
    assert node.saved() == {}
    assert node.flannel("DEL", conf) == (0, None) and node.calls() == []  # a second DEL succeeds quietly


def test_the_recorded_go_run_saves_and_deletes_like_the_reference(node):
    golden = json.loads(GOLDEN.read_text())
    add, delete = golden["steps"]
    node.subnet_env.write_text(golden["initial_files"]["/run/flannel/subnet.env"])
    conf = {
        **add["stdin"],
        "subnetFile": str(node.subnet_env),
        "dataDir": str(node.flannel_dir),
        "netConf": str(node.net_conf),
    }
    env = {k: v for k, v in add["env"].items() if k not in ("CNI_PATH", "CNI_COMMAND")}
    assert node.flannel("ADD", conf, **env)[0] == 0
    cid = add["env"]["CNI_CONTAINERID"]
    assert node.saved() == {cid: add["files_after"][f"/var/lib/cni/flannel/{cid}"].encode()}
    assert node.calls()[0]["stdin"] == add["files_after"][f"/var/lib/cni/flannel/{cid}"]
    assert node.flannel("DEL", conf, **env) == (0, None)
    assert node.saved() == {} and [c["cmd"] for c in node.calls()] == ["DEL"]


def test_a_file_saved_by_the_go_plugin_is_deleted_through_its_delegate(node):
    go_saved = b'{"cniVersion":"0.2.0","ipMasq":true,"name":"cbr0","type":"win-overlay"}'
    node.flannel_dir.mkdir()
    (node.flannel_dir / "pod1").write_bytes(go_saved)
    assert node.flannel("DEL", node.flannel_conf()) == (0, None)
    [delete] = node.calls()
    assert (delete["plugin"], delete["stdin"]) == ("win-overlay", go_saved.decode())
    assert node.saved() == {}


def test_dockershim_pause_and_app_container_share_one_saved_config(node):
    conf = node.flannel_conf()
    assert node.flannel("ADD", conf, CNI_CONTAINERID="pause1", CNI_NETNS="none")[0] == 0
    assert node.flannel("ADD", conf, CNI_CONTAINERID="app1", CNI_NETNS="container:pause1")[0] == 0
    assert list(node.saved()) == ["pause1"]
    assert node.flannel("DEL", conf, CNI_CONTAINERID="app1", CNI_NETNS="container:pause1") == (0, None)
    assert list(node.saved()) == ["pause1"]  # the pause container still needs it for its own DEL
    assert node.flannel("DEL", conf, CNI_CONTAINERID="pause1", CNI_NETNS="none") == (0, None)
    assert node.saved() == {}
    assert [(c["cmd"], c["env"]["CNI_CONTAINERID"]) for c in node.calls()] == [
        ("ADD", "pause1"),
        ("ADD", "app1"),
        ("DEL", "app1"),
        ("DEL", "pause1"),
    ]


def test_missing_subnet_env_is_try_again_later_naming_the_path(node):
    node.subnet_env.unlink()
    rc, out = node.flannel("ADD", node.flannel_conf())
    assert rc == 1 and out["code"] == 11
    assert str(node.subnet_env) in out["msg"] and "flanneld" in out["details"] and "log" in out["details"]
    assert node.calls() == [] and node.saved() == {}


def test_malformed_subnet_env_lists_what_is_missing(node):
    node.subnet_env.write_text("FLANNEL_NETWORK=10.244.0.0/16\r\nFLANNEL_SUBNET=10.244.4.1/24\r\n")
    rc, out = node.flannel("ADD", node.flannel_conf())
    assert (rc, out["code"]) == (1, 7)
    assert (
        out["msg"]
        == f"failed to load flannel 'subnet.env' file: {node.subnet_env} is missing FLANNEL_MTU, FLANNEL_IPMASQ"
    )
    assert "Check the flannel pod log for this node" in out["details"]


def test_a_network_name_flanneld_did_not_create_is_refused_before_anything_runs(node):
    node.net_conf.write_bytes((FIXTURES / "net-conf.vxlan.json").read_bytes())
    rc, out = node.flannel("ADD", node.flannel_conf("cni.conf.l2bridge-v1.json"))
    assert (rc, out["code"]) == (1, 7)
    assert out["msg"] == f"flanneld's net-conf.json {node.net_conf}: Backend.Name is vxlan0, the CNI config names cbr0"
    assert node.calls() == [] and node.saved() == {}


def test_the_delegate_type_follows_the_backend_when_the_config_has_none(node):
    node.net_conf.write_text(json.dumps({"Network": "10.244.0.0/16", "Backend": {"name": "vxlan0", "type": "vxlan"}}))
    conf = node.flannel_conf("cni.conf.overlay-v1.json")
    del conf["delegate"]["type"]
    assert node.flannel("ADD", conf)[0] == 0
    assert [c["plugin"] for c in node.calls()] == ["win-overlay"]


@pytest.mark.parametrize(
    "change, code, text",
    [
        ({"delegate": {"type": "win-bridge", "name": "x"}}, 7, "'delegate' dictionary must not have 'name' field"),
        ({"delegate": {"ipam": {"type": "host-local"}}}, 7, "'delegate' dictionary must not have 'ipam' field"),
        ({"subnetFile": 7}, 7, "subnetFile: 7 is invalid"),
        ({"delegate": {"type": "no-such-plugin"}}, 999, 'failed to find plugin "no-such-plugin"'),
    ],
)
def test_bad_config_is_a_cni_error_and_nothing_else_on_stdout(node, change, code, text):
    rc, out = node.flannel("ADD", node.flannel_conf(**change))
    assert (rc, out["code"]) == (1, code) and text in out["msg"]


def test_a_failed_delegate_add_keeps_the_saved_config_for_the_runtimes_del(node):
    conf = node.flannel_conf()
    rc, out = node.flannel("ADD", conf, FAKE_FAIL="ADD", FAKE_CODE="11")
    assert (rc, out["code"], out["msg"]) == (1, 11, "fake ADD failed")  # the delegate's code is kept
    assert list(node.saved()) == ["pod1"]
    assert node.flannel("DEL", conf) == (0, None) and node.saved() == {}


def test_a_failed_delegate_del_keeps_the_saved_config_for_the_retry(node):
    conf = node.flannel_conf()
    node.flannel("ADD", conf)
    rc, out = node.flannel("DEL", conf, FAKE_FAIL="DEL")
    assert (rc, out["code"]) == (1, 11) and list(node.saved()) == ["pod1"]
    assert node.flannel("DEL", conf) == (0, None) and node.saved() == {}


def test_del_needs_neither_flanneld_nor_the_current_config(node):
    conf = node.flannel_conf()
    node.flannel("ADD", conf)
    node.subnet_env.unlink()
    del conf["delegate"]
    assert node.flannel("DEL", conf) == (0, None)
    assert [c["plugin"] for c in node.calls()] == ["win-bridge", "win-bridge"]


def test_check_delegates_the_saved_config_with_the_runtimes_prev_result(node):
    conf = node.flannel_conf(cniVersion="1.0.0")
    node.flannel("ADD", conf)
    node.calls()
    prev = {"cniVersion": "1.0.0", "ips": [{"address": "10.244.4.2/24"}]}
    assert node.flannel("CHECK", {**conf, "prevResult": prev}) == (0, None)
    [check] = node.calls()
    sent = json.loads(check["stdin"])
    assert check["cmd"] == "CHECK" and sent["prevResult"] == prev and sent["ipam"]["subnet"] == "10.244.4.0/24"
    rc, out = node.flannel("CHECK", conf, CNI_CONTAINERID="unknown")
    assert (rc, out["code"]) == (1, 3) and "unknown" in out["msg"]


def test_a_corrupt_saved_config_is_named(node):
    node.flannel_dir.mkdir()
    (node.flannel_dir / "pod1").write_text("{trunc")
    rc, out = node.flannel("DEL", node.flannel_conf())
    assert (rc, out["code"]) == (1, 7) and str(node.flannel_dir / "pod1") in out["msg"]


# ---------------------------------------------------------------- STATUS / GC (CNI 1.1.0)


def test_status_reads_the_lease_then_asks_the_delegate(node):
    conf = node.flannel_conf(cniVersion="1.1.0")
    assert node.flannel("STATUS", conf) == (0, None)
    [status] = node.calls()
    assert (status["cmd"], json.loads(status["stdin"])["ipam"]["subnet"]) == ("STATUS", "10.244.4.0/24")
    rc, out = node.flannel("STATUS", conf, FAKE_FAIL="STATUS", FAKE_CODE="50")
    assert (rc, out["code"]) == (1, 50)


@pytest.mark.parametrize("content, code", [(None, 50), ("FLANNEL_MTU=1450\n", 50)])
def test_status_without_a_usable_lease(node, content, code):
    if content is None:
        node.subnet_env.unlink()
    else:
        node.subnet_env.write_text(content)
    rc, out = node.flannel("STATUS", node.flannel_conf(cniVersion="1.1.0"))
    assert (rc, out["code"]) == (1, code) and str(node.subnet_env) in out["msg"]
    assert node.calls() == []


def gc_conf(node: RecordingNode, *alive: str) -> dict:
    return node.flannel_conf(
        cniVersion="1.1.0", **{"cni.dev/valid-attachments": [{"containerID": cid, "ifname": "eth0"} for cid in alive]}
    )


def test_gc_forwards_to_each_delegate_type_then_drops_dead_attachments(node):
    conf = node.flannel_conf(cniVersion="1.1.0")
    for cid in ("pod1", "pod2"):
        node.flannel("ADD", conf, CNI_CONTAINERID=cid)
    (node.flannel_dir / "old-overlay-pod").write_text(
        json.dumps(
            {"name": "cbr0", "type": "win-overlay", "cniVersion": "0.2.0", "runtimeConfig": {"portMappings": []}}
        )
    )
    (node.flannel_dir / "other-net-pod").write_text(json.dumps({"name": "vxlan0", "type": "win-overlay"}))
    node.calls()
    assert node.flannel("GC", gc_conf(node, "pod1")) == (0, None)
    calls = {c["plugin"]: json.loads(c["stdin"]) for c in node.calls()}
    assert set(calls) == {"win-bridge", "win-overlay"}
    for sent in calls.values():
        assert sent["cni.dev/valid-attachments"] == [{"containerID": "pod1", "ifname": "eth0"}]
        assert sent["cniVersion"] == "1.1.0" and sent["name"] == "cbr0" and "runtimeConfig" not in sent
    assert calls["win-bridge"]["ipam"] == {"type": "host-local", "subnet": "10.244.4.0/24"}
    assert sorted(node.saved()) == ["other-net-pod", "pod1"]  # another network's file is not ours to judge


def test_gc_still_works_while_flanneld_is_down(node):
    node.flannel("ADD", node.flannel_conf(cniVersion="1.1.0"))
    node.subnet_env.unlink()
    node.calls()
    assert node.flannel("GC", gc_conf(node)) == (0, None)
    assert [c["cmd"] for c in node.calls()] == ["GC"] and node.saved() == {}


def test_a_failed_delegate_gc_prunes_nothing(node):
    node.flannel("ADD", node.flannel_conf(cniVersion="1.1.0"))
    rc, out = node.flannel("GC", gc_conf(node), FAKE_FAIL="GC")
    assert (rc, out["code"]) == (1, 11) and list(node.saved()) == ["pod1"]


# ---------------------------------------------------------------- the executables


@pytest.mark.parametrize("argv", [[str(VENV_BIN / "flannel")], [sys.executable, "-m", "plugins.flannel"]])
def test_the_console_script_and_module_run_add(node, argv):
    env = {**node.env, "CNI_COMMAND": "ADD", "PATH": os.environ.get("PATH", "")}
    proc = subprocess.run(
        argv, input=json.dumps(node.flannel_conf()).encode(), env=env, capture_output=True, cwd=REPO, timeout=60
    )
    assert proc.returncode == 0, proc.stderr.decode()
    assert json.loads(proc.stdout) == RESULT and proc.stderr == b""
    proc = subprocess.run(
        argv, input=b"{}", env={**env, "CNI_COMMAND": "VERSION"}, capture_output=True, cwd=REPO, timeout=60
    )
    assert "1.1.0" in json.loads(proc.stdout)["supportedVersions"]


@pytest.mark.parametrize(
    "edit,field",
    [
        ({"delegate": "win-bridge"}, "delegate"),
        ({"subnetFile": 5}, "subnetFile"),
        ({"runtimeConfig": []}, "runtimeConfig"),
    ],
)
def test_del_tolerates_fields_edited_since_add_but_not_a_lost_data_dir(node, edit, field, capfd):
    conf = node.flannel_conf()
    assert node.flannel("ADD", conf)[0] == 0
    node.calls()
    assert node.flannel("DEL", {**conf, **edit}) == (0, None)
    assert [c["cmd"] for c in node.calls()] == ["DEL"] and node.saved() == {}
    assert f"ignores {field}" in capfd.readouterr().err
    rc, out = node.flannel("DEL", {**conf, "dataDir": ["not", "a", "path"]})
    assert (rc, out["code"]) == (1, 7) and "dataDir" in out["msg"], out
