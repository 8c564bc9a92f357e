"""The PyInstaller executables speak the protocol and carry what is imported lazily (handlers, schemas).

Runs against the one-folder bundle ``dist/wincni/`` (``make dist``, or ``build.ps1`` on Windows) or ``WINCNI_DIST``.
"""

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from plugins import registry
from plugins.cni import version as ver
from testdata import require_frozen

DIST = Path(os.environ.get("WINCNI_DIST") or Path(__file__).resolve().parents[2] / "dist" / "wincni")
PLUGINS = tuple(registry.PLUGINS)
SUFFIX = ".exe" if sys.platform == "win32" else ""

pytestmark = pytest.mark.frozen


@pytest.fixture(autouse=True)
def bundle() -> None:
    require_frozen(DIST, *(f"{name}{SUFFIX}" for name in (*PLUGINS, "hnsctl")))


def run_exe(name, env, stdin=b"", args=()):
    exe = DIST / f"{name}{SUFFIX}"
    assert exe.is_file(), f"{exe} is missing: the build makes one per command of plugins/registry.py"
    full_env = {k: v for k, v in os.environ.items() if not k.startswith(("CNI_", "LIBHNS_", "WINCNI_"))}
    full_env.update(env)
    return subprocess.run([str(exe), *args], input=stdin, env=full_env, capture_output=True, timeout=120)


def test_every_executable_names_the_packages_one_build_and_its_commit(tmp_path):
    from buildids import assert_one_build
    from tools.wincni.node.installed import CONTENTS_PREFIX

    [build] = [p.name[len(CONTENTS_PREFIX) :] for p in DIST.iterdir() if p.name.startswith(CONTENTS_PREFIX)]
    env = {"LIBHNS_BACKEND": "sim", "LIBHNS_SIM_DIR": str(tmp_path / "hns")}
    assert_one_build(lambda name: run_exe(name, env, args=("--version",)).stdout.decode(), build)


@pytest.mark.parametrize("name", PLUGINS)
def test_version(name):
    proc = run_exe(name, {"CNI_COMMAND": "VERSION"}, b'{"cniVersion": "0.4.0"}')
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"cniVersion": "0.4.0", "supportedVersions": list(ver.SUPPORTED)}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's LD_DEBUG names every library loaded")
def test_version_loads_only_the_extension_modules_it_uses():
    """PyInstaller's bootstrap would import ctypes (and load libffi) at every start: the spec gives it
    specs/bootstrap/pyimod03_ctypes.py instead. VERSION reads and writes JSON, nothing more."""
    proc = run_exe("host-local", {"CNI_COMMAND": "VERSION", "LD_DEBUG": "files"}, b'{"cniVersion": "1.0.0"}')
    assert proc.returncode == 0, proc.stderr
    loaded = {
        line.rsplit("/", 1)[-1].split(".")[0]
        for line in proc.stderr.decode().splitlines()
        if "calling init:" in line and "lib-dynload" in line
    }
    assert loaded == {"_struct", "zlib", "_json"}, loaded


def test_the_python_modules_come_from_one_pack_file():
    """Loose .pyc files cost a stat and an open each (specs/bootstrap/pyi_rth_wincni_pack.py): none
    is left; what starts the interpreter before the pack's run-time hook is in base_library.zip."""
    (contents,) = (p for p in DIST.iterdir() if p.is_dir() and p.name.startswith("_wincni-"))
    assert (contents / "wincni.pack").is_file()
    assert not list(contents.rglob("*.pyc"))  # what starts the interpreter is in base_library.zip
    with zipfile.ZipFile(contents / "base_library.zip") as zf:
        boot = {name.split("/")[0].removesuffix(".pyc") for name in zf.namelist()}
    assert boot == {"encodings", "struct"}, boot


ADD = {"CNI_COMMAND": "ADD", "CNI_CONTAINERID": "frozen1", "CNI_NETNS": "none", "CNI_IFNAME": "eth0"}


@pytest.mark.parametrize("name", PLUGINS)
def test_bad_json_is_code_6_without_traceback(name):
    proc = run_exe(name, ADD, b"{not json")
    assert proc.returncode == 1
    doc = json.loads(proc.stdout)
    assert doc["code"] == 6 and b"Traceback" not in proc.stdout + proc.stderr


@pytest.mark.parametrize("name", PLUGINS)
def test_add_reaches_the_lazily_imported_handler(name, tmp_path):
    """Any CNI error but 999: a handler module or schema missing from the bundle would crash."""
    env = dict(ADD, CNI_PATH=str(DIST), LIBHNS_BACKEND="sim", LIBHNS_SIM_DIR=str(tmp_path / "hns"))
    proc = run_exe(name, env, json.dumps({"cniVersion": "1.0.0", "name": "cbr0", "type": name}).encode())
    assert proc.returncode == 1
    doc = json.loads(proc.stdout)
    assert doc["code"] != 999, (doc, proc.stderr.decode(errors="replace"))


def test_hnsctl_runs():
    proc = run_exe("hnsctl", {}, args=("--help",))
    assert proc.returncode == 0 and b"usage: hnsctl" in proc.stdout


def test_wincni_doctor_runs_every_check(tmp_path):
    """The operator executable carries its checks and their address library (--reach parses with it); on an empty
    node every check reports, none crashes: config fails, those that need it are not checked."""
    env = {"LIBHNS_BACKEND": "sim", "LIBHNS_SIM_DIR": str(tmp_path / "hns")}
    proc = run_exe(
        "wincni",
        env,
        args=("doctor", "--cni-conf", str(tmp_path), "--cni-bin-dir", str(DIST), "--reach", "8.8.8.8", "-o", "json"),
    )
    assert proc.returncode == 1 and b"Traceback" not in proc.stderr, proc.stderr
    checks = {c["id"]: c for c in json.loads(proc.stdout)["checks"]}
    assert checks["config"]["status"] == "fail" and "holds no *.conf" in checks["config"]["message"]
    for id_ in ("hns-features", "reach", "plugins"):
        assert checks[id_]["status"] == "not-checked" and checks[id_]["message"].startswith("not checked"), checks[id_]


def test_wincni_netpol_lists_over_tls_under_the_service_accounts_ca_and_syncs_once(tmp_path):
    """The agent's HTTPS client is in the operator executable (ssl, http.client and what they
    import on this Python: specs/wincni.spec's AGENT_NEEDS): ``--once`` lists each kind from the
    fake API server and writes the state."""
    from fakeapiserver import FakeApiServer, service_account

    lists = {
        k: [{"metadata": {"resourceVersion": "7"}, "items": []}] for k in ("pods", "namespaces", "networkpolicies")
    }
    server = FakeApiServer({"lists": lists, "watches": {k: [] for k in lists}})
    service_account(tmp_path / "sandbox")
    conf = tmp_path / "10-cbr0.conf"
    conf.write_text(json.dumps({"cniVersion": "1.0.0", "name": "cbr0", "type": "win-bridge", "apiVersion": 2}))
    env = {
        "LIBHNS_BACKEND": "sim",
        "LIBHNS_SIM_DIR": str(tmp_path / "hns"),
        "CONTAINER_SANDBOX_MOUNT_POINT": str(tmp_path / "sandbox"),
        "KUBERNETES_SERVICE_HOST": "127.0.0.1",
        "KUBERNETES_SERVICE_PORT": str(server.server_address[1]),
        "WINCNI_NETPOL_STATE": str(tmp_path / "netpol" / "netpol.json"),
    }
    try:
        proc = run_exe("wincni", env, args=("netpol", "--once", "--node-name", "n1", "--cni-conf", str(conf)))
    finally:
        server.close()
    assert proc.returncode == 0, proc.stderr
    assert sorted(k for k, q, _ in server.requests if "watch" not in q) == sorted(lists)
    assert (tmp_path / "netpol" / "netpol.json").is_file()


def test_wincni_install_lays_its_own_build_and_a_pod_runs_from_it(tmp_path):
    """The frozen wincni installs the folder it runs from; the installed flannel is that build
    (its about text) and runs a pod through the installed config on the simulator."""
    from hnsnode import Node
    from testdata import FIXTURES

    node = Node(tmp_path)
    env = {"LIBHNS_BACKEND": "sim", "LIBHNS_SIM_DIR": node.env["LIBHNS_SIM_DIR"]}
    bin_dir = node.cni_bin
    proc = run_exe(
        "wincni",
        env,
        args=(
            "install",
            "--cni-bin-dir",
            str(bin_dir),
            "--cni-conf-dir",
            str(node.conf_dir),
            "--net-conf",
            str(FIXTURES / "net-conf.vxlan.json"),
            "--containerd-config",
            str(tmp_path / "none.toml"),
            "-o",
            "json",
        ),
    )
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    build = json.loads(proc.stdout)["build"]
    assert (bin_dir / f"_wincni-{build}").is_dir() and (DIST / f"_wincni-{build}").is_dir()
    from tools.wincni.node.installed import embedded_build

    assert {embedded_build((bin_dir / f"{c}{SUFFIX}").read_bytes()) for c in (*PLUGINS, "wincni")} == {build}
    from tools.wincni.node.installed import MANIFEST

    assert json.loads((bin_dir / MANIFEST).read_text())["build"] == build  # the ID every executable names
    about = subprocess.run([str(bin_dir / f"flannel{SUFFIX}")], capture_output=True, timeout=120, env={})
    assert f"built {build.rsplit('-', 1)[1]}" in about.stderr.decode(), about.stderr

    node.overlay().lease()
    doc = node.read_cni_conf()
    conf = {
        "cniVersion": doc["cniVersion"],
        "name": doc["name"],
        **doc["plugins"][0],
        "subnetFile": str(node.subnet_env),
        "dataDir": str(node.flannel_dir),
        "ipam": {"dataDir": str(node.ipam_dir)},
    }
    pod = dict(ADD, CNI_NETNS=node.sandbox("v2", "pod"), CNI_PATH=str(bin_dir), **env)
    proc = subprocess.run(
        [str(bin_dir / f"flannel{SUFFIX}")], input=json.dumps(conf).encode(), capture_output=True, timeout=120, env=pod
    )
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    assert json.loads(proc.stdout)["ips"][0]["address"].startswith("10.244.4.")
