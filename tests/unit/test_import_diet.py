"""Start-up cost is the plugins' whole speed problem: each path may import only the modules pinned
here beyond what ``python -I`` and ``json`` already loaded, so a heavy import sneaking onto the
VERSION or error path (dataclasses, typing, inspect, pathlib, jsonschema, libhns …) fails the suite."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from plugins.registry import PLUGINS

REPO = Path(__file__).resolve().parents[2]
PROBE = """
import io, sys
sys.path.insert(0, sys.argv[1])
base = set(sys.modules)
main = __import__(sys.argv[4], fromlist=["main"]).main
env = {"CNI_COMMAND": sys.argv[2], "CNI_CONTAINERID": "c", "CNI_NETNS": "/x", "CNI_IFNAME": "eth0"}
main(env, io.BytesIO(sys.argv[3].encode()), io.StringIO())
print(" ".join(sorted(set(sys.modules) - base)))
"""
OS = {"os", "os.path", "stat", "_stat", "genericpath", "posixpath", "ntpath", "__future__"}
CORE = {
    "plugins",
    "plugins.cni",
    "plugins.cni.skel",
    "plugins.cni.log",
    "plugins.cni.version",
    "plugins.cni.errors",
    "plugins.cni.buildinfo",
    "plugins.ipam_host_local",
    "plugins.ipam_host_local.__main__",
    "plugins.plugin",
    "plugins.registry",  # plain data (~55 us from source): registry.sibling handed over as it is, no pass-through in plugins.plugin
    "basics",
    "basics.jsontext",
    "basics.closedpipe",
    "_json",
}
# Rejected input never reaches the handlers: env and config checks only.
CHECKS = CORE | {"plugins.cni.env", "plugins.cni.config", "plugins.cni.names"}
# Only text that is not JSON needs the json package (basics.jsontext reads the rest without it).
JSON = {"json", "json.decoder", "json.encoder", "json.scanner"}
HEAVY = {
    "dataclasses",
    "typing",
    "inspect",
    "pathlib",
    "traceback",
    "contextlib",
    "urllib.parse",
    "jsonschema",
    "libhns.client",
    "libhns.backend",
    "subprocess",
    "ipaddress",
    "json",
    "re",
    "enum",
}


def imported(command: str, stdin: str, entry: str = "plugins.ipam_host_local.__main__") -> set[str]:
    # -I without -S: site-packages stay importable, so a path reaching for jsonschema really
    # imports it (under -S the import would fail, be reported as an error, and go unseen).
    proc = subprocess.run(
        [sys.executable, "-I", "-c", PROBE, str(REPO), command, stdin, entry],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    return set(proc.stdout.split())


@pytest.mark.parametrize(
    "command, stdin, allowed",
    [
        ("VERSION", "{}", CORE),
        ("ADD", "{nope", CHECKS | JSON),  # code 6: json explains
        ("ADD", '{"cniVersion": "9.9.9", "name": "n", "type": "t"}', CHECKS),  # code 1
        ("ADD", '{"cniVersion": "1.0.0", "type": "t"}', CHECKS),  # code 7, no name
    ],
)
def test_start_up_paths_import_only_what_they_use(command, stdin, allowed):
    extra = imported(command, stdin) - allowed - OS
    assert not extra, f"{command} {stdin!r} imported {sorted(extra)}"


@pytest.mark.parametrize("name", PLUGINS)
def test_every_plugins_version_imports_the_core_and_its_entry_only(name):
    """Every plugin's ``__main__`` is its ``PLUGIN`` over ``plugins.plugin``: nothing else at start."""
    package = PLUGINS[name]
    allowed = CORE - {"plugins.ipam_host_local", "plugins.ipam_host_local.__main__"} | {package, package + ".__main__"}
    extra = imported("VERSION", "{}", package + ".__main__") - allowed - OS
    assert not extra, f"{name} VERSION imported {sorted(extra)}"


def test_heavy_modules_stay_off_the_version_and_error_paths():
    """The same bound, said the other way: a readable failure names the heavy module."""
    for command, stdin in (("VERSION", ""), ("DEL", "[]")):
        assert not imported(command, stdin) & HEAVY


def test_a_valid_teardown_never_imports_jsonschema(tmp_path):
    """jsonschema (~60 ms) only explains a rejection: DEL of a valid config, as win-bridge hands
    it to host-local (with its rangeStart), is decided by quickschema alone."""
    conf = {
        "cniVersion": "1.0.0",
        "name": "cbr0",
        "type": "win-bridge",
        "ipam": {"type": "host-local", "subnet": "10.244.4.0/24", "rangeStart": "10.244.4.3", "dataDir": str(tmp_path)},
    }
    assert "jsonschema" not in imported("DEL", json.dumps(conf))


# What a Windows pod command must never import: code generation (dataclasses -> inspect), typing,
# modules that compile regexes or load extension DLLs at import, what only errors need, and
# modules a few lines of ours replace (on Windows every module is a file to open and scan).
POD_HEAVY = {
    "dataclasses",
    "inspect",
    "typing",
    "uuid",
    "pathlib",
    "tempfile",
    "shutil",
    "logging",
    "enum",
    "re",
    "urllib.parse",
    "jsonschema",
    "platform",
    "json",
    "contextlib",
    "threading",
    "copy",
    "weakref",
    "importlib",
    "warnings",
    "ipaddress",
    "functools",
    "collections",
    "types",
    "itertools",
    "operator",
}
# Run without site (-I -S), as the frozen bundle starts: what site imports (functools, collections…)
# would otherwise hide what the pod path pulls in. sys.prefix is the venv's, as site would set it,
# so the venv's console scripts on CNI_PATH still run in-process.
POD_PROBE = """
import io, sys
sys.path.insert(0, sys.argv[1])
sys.prefix = sys.argv[4]
from basics import jsontext
import libhns.sim, libhns.sim.simulator  # the simulator stands in for HNS: not on a node's path
base = set(sys.modules)
from plugins.flannel.__main__ import main
env = jsontext.loads(sys.argv[2])
out = io.StringIO()
assert main(env, io.BytesIO(sys.argv[3].encode()), out) == 0, out.getvalue()
print(jsontext.dumps(sorted(set(sys.modules) - base)))
"""


def _pod_modules(tmp_path, command: str) -> set[str]:
    """A flannel -> win-bridge -> host-local command (HCN, in one process) on a simulated node."""
    from tools import hnsctl

    hns = {"LIBHNS_BACKEND": "sim", "LIBHNS_SIM_DIR": str(tmp_path / "hns")}
    for args in (
        ["network", "create", "cbr0", "--type", "L2Bridge", "--subnet", "10.244.4.0/24"],
        ["endpoint", "create", "cbr0_ep", "--network", "cbr0", "--ip", "10.244.4.2", "--host"],
    ):
        if command == "ADD":
            assert hnsctl.main(args, io.StringIO(), io.StringIO(), hns) == 0
    out = io.StringIO()
    if command == "ADD":
        assert hnsctl.main(["namespace", "create", "-o", "json"], out, io.StringIO(), hns) == 0
        (tmp_path / "ns").write_text(json.loads(out.getvalue())["ID"])
    (tmp_path / "subnet.env").write_text(
        "FLANNEL_NETWORK=10.244.0.0/16\nFLANNEL_SUBNET=10.244.4.1/24\nFLANNEL_MTU=1450\nFLANNEL_IPMASQ=true\n"
    )
    bindir = Path(sys.executable).parent
    env = {
        **hns,
        "CNI_COMMAND": command,
        "CNI_CONTAINERID": "pod1",
        "CNI_NETNS": (tmp_path / "ns").read_text(),
        "CNI_IFNAME": "eth0",
        "CNI_PATH": str(bindir),
        "WINCNI_LOCK_DIR": str(tmp_path / "locks"),
    }
    conf = {
        "cniVersion": "1.0.0",
        "name": "cbr0",
        "type": "flannel",
        "subnetFile": str(tmp_path / "subnet.env"),
        "dataDir": str(tmp_path / "flannel"),
        "ipam": {"dataDir": str(tmp_path / "ipam")},
        "delegate": {
            "type": "win-bridge",
            "apiVersion": 2,
            "policies": [
                {
                    "name": "EndpointPolicy",
                    "value": {"Type": "OutBoundNAT", "Settings": {"Exceptions": ["10.96.0.0/12"]}},
                }
            ],
        },
    }
    proc = subprocess.run(
        [sys.executable, "-I", "-S", "-c", POD_PROBE, str(REPO), json.dumps(env), json.dumps(conf), sys.prefix],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    return set(json.loads(proc.stdout))


def _top_level_imports(module: str) -> set[str]:
    """What a module of ours imports unconditionally at import time (not under TYPE_CHECKING,
    not inside a function)."""
    import ast

    path = REPO / (module.replace(".", "/") + ".py")
    if not path.exists():
        path = REPO / module.replace(".", "/") / "__init__.py"
    found = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
    return found


def test_a_pod_add_and_del_import_nothing_heavy(tmp_path):
    """On a node the pod path is flannel -> win-bridge -> host-local over the ctypes backend: none of
    POD_HEAVY at run time (beyond what the simulator standing in for HNS brought), and none of
    our modules on the path imports one at its top."""
    for command in ("ADD", "DEL"):
        modules = _pod_modules(tmp_path, command)
        assert not modules & POD_HEAVY, f"{command} imported {sorted(modules & POD_HEAVY)}"
        ours = sorted(m for m in modules if m.split(".")[0] in ("basics", "libhns", "plugins", "tools"))
        assert "plugins.win_bridge.flavor" in ours and "plugins.ipam_host_local.commands" in ours, ours
        offenders = {m: sorted(_top_level_imports(m) & POD_HEAVY) for m in ours}
        assert not any(offenders.values()), {m: v for m, v in offenders.items() if v}


#: The modules only Windows runs on the pod path (no Linux run imports them).
WINDOWS_POD_MODULES = (
    "libhns.ctypes_backend",
    "plugins.cni.lock",
    "basics.safefs",
    "basics.winfs",
    "basics.winfolder",
    "basics.winwalk",
    "basics.winhandle",
    "basics.win32sec",
    "basics.sddl",
)


def test_the_windows_pod_path_imports_nothing_heavy_at_the_top():
    """The modules only Windows runs on the pod path (the ctypes backend, the Win32 security
    calls, the lock): no Linux run imports them, so their top-level imports are checked here."""
    for module in WINDOWS_POD_MODULES:
        assert not _top_level_imports(module) & POD_HEAVY, module


def test_the_windows_pod_path_takes_its_win32_types_from_basics_not_ctypes_wintypes():
    """``ctypes.wintypes`` defines about a hundred types and structures when imported (1.3 ms under
    Wine); the lock and the folder walks need six, which ``basics/win32types.py`` names."""
    import ast

    for module in WINDOWS_POD_MODULES:
        for node in ast.walk(ast.parse((REPO / (module.replace(".", "/") + ".py")).read_text())):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [f"{node.module}.{a.name}" for a in node.names] + [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            assert "ctypes.wintypes" not in names, module


def test_the_simulator_imports_nothing_heavy():
    """Every simulated command (tests, `make demo`, `make bench`) imports the simulator in place of
    HNS, and the benchmark's budgets judge our whole start-up: the simulator is held to POD_HEAVY
    too (without site, so nothing site imports hides a module it pulls in)."""
    probe = (
        "import json, sys; sys.path.insert(0, sys.argv[1]); base = set(sys.modules)\n"
        "import libhns.sim\n"
        "print(json.dumps(sorted(set(sys.modules) - base)))"
    )
    proc = subprocess.run(
        [sys.executable, "-I", "-S", "-c", probe, str(REPO)], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    modules = set(json.loads(proc.stdout))
    assert "libhns.sim.simulator" in modules and not modules & POD_HEAVY, sorted(modules & POD_HEAVY)
    sim = [m for m in modules if m.startswith("libhns.sim")]
    offenders = {m: sorted(_top_level_imports(m) & POD_HEAVY) for m in sim}
    assert not any(offenders.values()), {m: v for m, v in offenders.items() if v}
