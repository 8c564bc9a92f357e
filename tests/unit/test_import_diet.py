"""Start-up cost is the plugins' whole speed problem: each path may import only the modules pinned
here beyond what ``python -I`` and ``json`` already loaded, so a heavy import sneaking onto the
VERSION or error path (dataclasses, typing, inspect, pathlib, jsonschema, libhns …) fails the suite."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PROBE = """
import io, json, sys
sys.path.insert(0, sys.argv[1])
base = set(sys.modules)
from plugins.ipam_host_local.__main__ import main
env = {"CNI_COMMAND": sys.argv[2], "CNI_CONTAINERID": "c", "CNI_NETNS": "/x", "CNI_IFNAME": "eth0"}
main(env, io.BytesIO(sys.argv[3].encode()), io.StringIO())
print(json.dumps(sorted(set(sys.modules) - base)))
"""
OS = {"os", "os.path", "stat", "_stat", "genericpath", "posixpath", "ntpath", "__future__"}
CORE = {"plugins", "plugins.cni", "plugins.cni.skel", "plugins.cni.log", "plugins.cni.version",
        "plugins.cni.errors", "plugins.cni.buildinfo", "plugins.ipam_host_local", "plugins.ipam_host_local.__main__"}
# Rejected input never reaches the handlers: env and config checks only.
CHECKS = CORE | {"plugins.cni.env", "plugins.cni.config", "plugins.cni.names"}
HEAVY = {"dataclasses", "typing", "inspect", "pathlib", "traceback", "contextlib", "urllib.parse",
         "jsonschema", "netaddr", "libhns", "subprocess", "ipaddress"}


def imported(command: str, stdin: str) -> set[str]:
    # -I without -S: site-packages stay importable, so a path reaching for jsonschema really
    # imports it (under -S the import would fail, be reported as an error, and go unseen).
    proc = subprocess.run([sys.executable, "-I", "-c", PROBE, str(REPO), command, stdin],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return set(json.loads(proc.stdout))


@pytest.mark.parametrize("command, stdin, allowed", [
    ("VERSION", "{}", CORE),
    ("ADD", "{nope", CHECKS),                                       # code 6
    ("ADD", '{"cniVersion": "9.9.9", "name": "n", "type": "t"}', CHECKS),  # code 1
    ("ADD", '{"cniVersion": "1.0.0", "type": "t"}', CHECKS),              # code 7, no name
])
def test_start_up_paths_import_only_what_they_use(command, stdin, allowed):
    extra = imported(command, stdin) - allowed - OS
    assert not extra, f"{command} {stdin!r} imported {sorted(extra)}"


def test_heavy_modules_stay_off_the_version_and_error_paths():
    """The same bound, said the other way: a readable failure names the heavy module."""
    for command, stdin in (("VERSION", ""), ("DEL", "[]")):
        assert not imported(command, stdin) & HEAVY


def test_a_valid_teardown_never_imports_jsonschema(tmp_path):
    """jsonschema (~60 ms) only explains a rejection: DEL of a valid config, as win-bridge hands
    it to host-local (with its rangeStart), is decided by quickschema alone."""
    conf = {"cniVersion": "1.0.0", "name": "cbr0", "type": "win-bridge",
            "ipam": {"type": "host-local", "subnet": "10.244.4.0/24", "rangeStart": "10.244.4.3",
                     "dataDir": str(tmp_path)}}
    assert "jsonschema" not in imported("DEL", json.dumps(conf))
