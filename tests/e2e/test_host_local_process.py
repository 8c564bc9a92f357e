"""host-local as a process (stdin + env), the way a runtime runs it: every CNI version, the
recorded Go run, 50 parallel ADDs, bad input, and processes killed mid-command."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest

from basics.safefs import checked_folder
from plugins.cni.version import SUPPORTED
from plugins.ipam_host_local import index as idx
from plugins.ipam_host_local.store import SANDBOXES, DiskStore, load_index
from testdata import GOLDENS

BIN = Path(sys.executable).with_name("host-local")
CMD = [str(BIN)] if BIN.exists() else [sys.executable, "-m", "plugins.ipam_host_local"]
GOLDEN = GOLDENS / "hl-single-range.json"
REPO = Path(__file__).resolve().parents[2]


def env_for(command: str, cid: str = "ctr", ifname: str = "eth0", **extra: str) -> dict:
    env = {
        "PATH": os.environ.get("PATH", ""),
        "CNI_COMMAND": command,
        "CNI_CONTAINERID": cid,
        "CNI_NETNS": "/var/run/netns/x",
        "CNI_IFNAME": ifname,
        "CNI_PATH": "/opt/cni/bin",
        **extra,
    }
    return env


def start(command: str, conf: dict, **kw) -> subprocess.Popen:
    return subprocess.Popen(
        CMD, env=env_for(command, **kw), cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )


def call(command: str, conf: dict, **kw) -> tuple[int, dict | None, str]:
    p = start(command, conf, **kw)
    out, err = p.communicate(json.dumps(conf).encode(), timeout=60)
    return p.returncode, json.loads(out) if out.strip() else None, err.decode()


def netconf(tmp_path, version="1.1.0", subnet="10.1.2.0/24", **ipam) -> dict:
    return {
        "cniVersion": version,
        "name": "hlnet",
        "type": "bridge",
        "ipam": {"type": "host-local", "subnet": subnet, "dataDir": str(tmp_path), **ipam},
    }


def assert_store_consistent(d: Path) -> dict:
    scan = DiskStore(str(d), "linux")
    scan.rescan()
    allocs = dict(scan.allocations())
    current = load_index(checked_folder(str(d)))
    assert current is None or current == scan.index
    return allocs


@pytest.mark.parametrize("version", SUPPORTED)
def test_every_version_add_check_del(tmp_path, version):
    conf = netconf(tmp_path, version, routes=[{"dst": "0.0.0.0/0"}])
    rc, res, err = call("ADD", conf)
    assert rc == 0 and err == ""
    if version in ("0.1.0", "0.2.0"):
        assert res == {
            "cniVersion": version,
            "ip4": {"ip": "10.1.2.2/24", "gateway": "10.1.2.1", "routes": [{"dst": "0.0.0.0/0"}]},
            "dns": {},
        }
    else:
        assert res["cniVersion"] == version and res["ips"][0]["address"] == "10.1.2.2/24"
    if version not in ("0.1.0", "0.2.0", "0.3.0", "0.3.1"):
        assert call("CHECK", {**conf, "prevResult": res})[:2] == (0, None)
    assert call("DEL", conf)[:2] == (0, None)
    assert not (tmp_path / "hlnet" / "10.1.2.2").exists()


def test_recorded_go_run_replays(tmp_path):
    golden = json.loads(GOLDEN.read_text())
    recorded_dir = golden["steps"][0]["stdin"]["ipam"]["dataDir"]
    for step in golden["steps"]:
        conf = json.loads(json.dumps(step["stdin"]).replace(recorded_dir, str(tmp_path)))
        p = subprocess.run(
            CMD,
            env={"PATH": os.environ["PATH"], **step["env"]},
            cwd=REPO,
            input=json.dumps(conf).encode(),
            capture_output=True,
            timeout=60,
        )
        assert p.returncode == step["exit_code"], (step["command"], p.stdout)
        got = json.loads(p.stdout) if p.stdout.strip() else None
        want = step["stdout_json"]
        if got and want:
            if got.get("dns") == {}:
                got.pop("dns")  # our core always renders dns; the recorded Go build omits it when empty
            if "code" in want:
                got = {k: got[k] for k in want}
        assert got == want, step["command"]
        files = {Path(k).relative_to(recorded_dir).as_posix(): v for k, v in step["files_after"].items()}
        ours = {
            f"hlnet/{n}": (tmp_path / "hlnet" / n).read_bytes().decode()
            for n in os.listdir(tmp_path / "hlnet")
            if n not in (idx.INDEX_NAME, SANDBOXES)  # ours alone: the Go plugin reads neither as a reservation
        }
        assert ours == files, step["command"]


def test_fifty_parallel_adds_on_a_slash26(tmp_path):
    conf = netconf(tmp_path, subnet="10.9.0.0/26")
    procs = [start("ADD", conf, cid=f"c{i}") for i in range(50)]
    results = [p.communicate(json.dumps(conf).encode(), timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), [r[0] for r, p in zip(results, procs) if p.returncode]
    addrs = [json.loads(out)["ips"][0]["address"] for out, _ in results]
    assert len(set(addrs)) == 50
    allocs = assert_store_consistent(tmp_path / "hlnet")
    assert sorted(o.container_id for o in allocs.values()) == sorted(f"c{i}" for i in range(50))


@pytest.mark.parametrize(
    "conf,env,code,fragment",
    [
        (b"{not json", {}, 6, "error unmarshall network config"),
        (json.dumps({"cniVersion": "1.0.0", "name": "n"}).encode(), {}, 7, "IPAM config missing 'ipam' key"),
        (
            json.dumps({"cniVersion": "1.0.0", "name": "n", "ipam": {"subnet": "10.0.0.0/33"}}).encode(),
            {},
            7,
            "ipam.subnet",
        ),
        (
            json.dumps({"cniVersion": "1.0.0", "name": "n", "ipam": {"subnet": "10.0.0.0/24"}}).encode(),
            {"CNI_ARGS": "IP=1.2.3"},
            4,
            "invalid IP address 1.2.3",
        ),
        (json.dumps({"cniVersion": "9.9.9", "name": "n", "ipam": {}}).encode(), {}, 1, "incompatible CNI versions"),
    ],
)
def test_bad_input_is_a_cni_error_never_a_traceback(tmp_path, conf, env, code, fragment):
    p = subprocess.run(CMD, env=env_for("ADD", **env), cwd=tmp_path, input=conf, capture_output=True, timeout=60)
    assert p.returncode == 1
    doc = json.loads(p.stdout)
    assert doc["code"] == code and fragment in doc["msg"]
    assert b"Traceback" not in p.stderr


def test_killed_processes_leave_a_consistent_store(tmp_path):
    """Killed (SIGKILL) at random points of 30 ADDs: no address owned twice, and the next call heals the index."""
    conf = netconf(tmp_path, subnet="10.9.0.0/26")
    rnd = random.Random(7)
    procs = []
    for i in range(30):
        p = start("ADD", conf, cid=f"k{i}")
        p.stdin.write(json.dumps(conf).encode())
        p.stdin.close()
        procs.append(p)
    for p in procs:
        time.sleep(rnd.uniform(0, 0.02))
        p.kill()
    for p in procs:
        p.wait(60)
        p.stdout.close()
        p.stderr.close()
    rc, res, _ = call("ADD", conf, cid="survivor")
    assert rc == 0
    allocs = assert_store_consistent(tmp_path / "hlnet")
    owners = [o for o in allocs.values() if o is not None]
    assert len(owners) == len(set(owners))
    assert load_index(checked_folder(str(tmp_path / "hlnet"))) is not None


def test_happy_path_does_not_import_jsonschema(tmp_path):
    """jsonschema (~90 ms) is for explaining bad input only; VERSION imports not even the handlers."""
    probe = (
        "import io, json, sys\n"
        "from plugins.ipam_host_local.__main__ import main\n"
        "env = dict(CNI_COMMAND=sys.argv[1], CNI_CONTAINERID='c', CNI_NETNS='x', CNI_IFNAME='eth0')\n"
        "main(env, io.BytesIO(sys.argv[2].encode()), io.StringIO())\n"
        "print(json.dumps(sorted(m for m in ('jsonschema', 'plugins.ipam_host_local.commands')"
        " if m in sys.modules)))\n"
    )
    conf = json.dumps(netconf(tmp_path))
    loaded = {
        cmd: json.loads(
            subprocess.run([sys.executable, "-c", probe, cmd, conf], cwd=REPO, check=True, capture_output=True).stdout
        )
        for cmd in ("VERSION", "ADD", "DEL")
    }
    assert loaded == {
        "VERSION": [],
        "ADD": ["plugins.ipam_host_local.commands"],
        "DEL": ["plugins.ipam_host_local.commands"],
    }
