"""The PyInstaller executables speak the protocol and carry what is imported lazily (handlers, schemas).

Runs against the one-folder bundle ``dist/wincni/`` (``make dist``, or ``build.ps1`` on Windows) or ``WINCNI_DIST``.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from plugins.cni import version as ver

DIST = Path(os.environ.get("WINCNI_DIST") or Path(__file__).resolve().parents[2] / "dist" / "wincni")
PLUGINS = ("win-bridge", "win-overlay", "flannel", "host-local")
SUFFIX = ".exe" if sys.platform == "win32" else ""

if not any((DIST / f"{name}{SUFFIX}").is_file() for name in (*PLUGINS, "hnsctl")):
    pytest.skip(f"no frozen executables in {DIST}: run `make dist` first (build.ps1 on Windows), "
                "or point WINCNI_DIST at them", allow_module_level=True)


def run_exe(name, env, stdin=b"", args=()):
    exe = DIST / f"{name}{SUFFIX}"
    assert exe.is_file(), f"{exe} is missing: the build makes all five executables"
    full_env = {k: v for k, v in os.environ.items() if not k.startswith(("CNI_", "LIBHNS_", "WINCNI_"))}
    full_env.update(env)
    return subprocess.run([str(exe), *args], input=stdin, env=full_env, capture_output=True, timeout=120)


@pytest.mark.parametrize("name", PLUGINS)
def test_version(name):
    proc = run_exe(name, {"CNI_COMMAND": "VERSION"}, b'{"cniVersion": "0.4.0"}')
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"cniVersion": "0.4.0", "supportedVersions": list(ver.SUPPORTED)}


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
    """The operator executable carries its checks and netaddr; on an empty node every check reports, none crashes."""
    env = {"LIBHNS_BACKEND": "sim", "LIBHNS_SIM_DIR": str(tmp_path / "hns")}
    proc = run_exe("wincni", env, args=("doctor", "--cni-conf", str(tmp_path), "--cni-bin-dir", str(DIST), "-o", "json"))
    assert proc.returncode == 1 and b"Traceback" not in proc.stderr, proc.stderr
    checks = {c["id"]: c["status"] for c in json.loads(proc.stdout)["checks"]}
    assert checks["config"] == "fail" and checks["hns-features"] == "ok"
