"""The CNI protocol as the kubelet/containerd see it: a plugin process, env + stdin in, one JSON out."""

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from plugins.cni import version as ver

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = Path(__file__).with_name("_echo_plugin.py")
ENV = {
    "CNI_COMMAND": "ADD",
    "CNI_CONTAINERID": "0123abcd",
    "CNI_NETNS": "/var/run/netns/cni-1",
    "CNI_IFNAME": "eth0",
    "CNI_ARGS": "IgnoreUnknown=1;K8S_POD_NAME=web-0",
    "CNI_PATH": "/opt/cni/bin",
}
CONF = {"cniVersion": "1.0.0", "name": "cbr0", "type": "echo"}
DROP = object()  # an env row value meaning "unset this variable"
SUPPORTED_TEXT = ", ".join(ver.SUPPORTED)


@dataclass
class Proc:
    rc: int
    stdout: str
    stderr: str

    def error(self) -> dict:
        """The CNI error: exit 1, stdout exactly one JSON object of the CNI specification's keys, no traceback."""
        assert self.rc == 1, self
        doc = json.loads(self.stdout)  # raises on anything besides one JSON document
        assert isinstance(doc, dict) and {"cniVersion", "code", "msg"} <= set(doc), doc
        assert set(doc) <= {"cniVersion", "code", "msg", "details"} and doc["cniVersion"] in ver.SUPPORTED
        assert "Traceback" not in self.stdout
        return doc


def run_plugin(env_changes=None, stdin=CONF, argv=(str(PLUGIN),), cwd=None) -> Proc:
    """Run the plugin as libcni does: the runtime's own environment plus CNI_*, config on stdin."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CNI_", "WINCNI_"))}
    env.update(ENV)
    for key, value in (env_changes or {}).items():
        env.pop(key) if value is DROP else env.__setitem__(key, value)
    env["PYTHONPATH"] = str(ROOT)
    data = stdin if isinstance(stdin, bytes) else json.dumps(stdin).encode()
    proc = subprocess.run([sys.executable, *argv], input=data, env=env, capture_output=True, timeout=60, cwd=cwd)
    return Proc(proc.returncode, proc.stdout.decode(), proc.stderr.decode())


def conf(**changes):
    return {**CONF, **changes}


BAD_INPUTS = [
    # id, env changes, stdin, expected code, words the message or details must contain
    ("unknown command", {"CNI_COMMAND": "BOGUS"}, CONF, 4, ["BOGUS"]),
    ("lower-case command", {"CNI_COMMAND": "add"}, CONF, 4, ["CNI_COMMAND"]),
    ("no container id", {"CNI_CONTAINERID": DROP}, CONF, 4, ["CNI_CONTAINERID"]),
    ("no netns", {"CNI_NETNS": DROP}, CONF, 4, ["CNI_NETNS"]),
    ("no ifname", {"CNI_IFNAME": DROP}, CONF, 4, ["CNI_IFNAME"]),
    (
        "all missing at once",
        {"CNI_CONTAINERID": DROP, "CNI_NETNS": DROP, "CNI_IFNAME": DROP},
        CONF,
        4,
        ["[CNI_CONTAINERID,CNI_NETNS,CNI_IFNAME]"],
    ),
    ("CHECK without netns", {"CNI_COMMAND": "CHECK", "CNI_NETNS": DROP}, conf(cniVersion="0.4.0"), 4, ["CNI_NETNS"]),
    ("DEL without ifname", {"CNI_COMMAND": "DEL", "CNI_IFNAME": DROP}, CONF, 4, ["CNI_IFNAME"]),
    ("container id starts with -", {"CNI_CONTAINERID": "-abc"}, CONF, 4, ["containerID", "-abc"]),
    ("container id with /", {"CNI_CONTAINERID": "../../etc"}, CONF, 4, ["containerID"]),
    ("container id with newline", {"CNI_CONTAINERID": "abc\n"}, CONF, 4, ["containerID"]),
    ("empty ifname", {"CNI_IFNAME": ""}, CONF, 4, ["CNI_IFNAME"]),
    ("16-char ifname", {"CNI_IFNAME": "a" * 16}, CONF, 4, ["interface name is too long", "16 characters"]),
    ("ifname .", {"CNI_IFNAME": "."}, CONF, 4, ["interface name is . or .."]),
    ("ifname ..", {"CNI_IFNAME": ".."}, CONF, 4, ["interface name is . or .."]),
    ("ifname a/b", {"CNI_IFNAME": "a/b"}, CONF, 4, ["interface name", "a/b"]),
    ("ifname a:b", {"CNI_IFNAME": "a:b"}, CONF, 4, ["interface name", "a:b"]),
    ("ifname a b", {"CNI_IFNAME": "a b"}, CONF, 4, ["interface name", "whitespace"]),
    ("non-JSON stdin", {}, b"cniVersion: 1.0.0", 6, ["unmarshall network config"]),
    ("empty stdin", {}, b"", 6, ["unmarshall network config"]),
    ("JSON array stdin", {}, b"[]", 6, ["not a JSON object"]),
    ("NaN is not JSON", {}, b'{"name": "cbr0", "mtu": NaN}', 6, ["NaN"]),
    ("absurd nesting", {}, b"[" * 100_000, 6, ["unmarshall network config"]),
    ("missing name", {}, {"cniVersion": "1.0.0"}, 7, ["missing network name"]),
    ("bad name", {}, conf(name="my net"), 7, ["network name", "my net"]),
    (
        "unsupported cniVersion",
        {},
        conf(cniVersion="0.5.0"),
        1,
        ['config is "0.5.0"', '["0.1.0" "0.2.0" "0.3.0" "0.3.1" "0.4.0" "1.0.0" "1.1.0"]'],
    ),
    ("CHECK with 0.3.1", {"CNI_COMMAND": "CHECK"}, conf(cniVersion="0.3.1"), 1, ["CHECK", "0.4.0"]),
    ("GC with 1.0.0", {"CNI_COMMAND": "GC"}, CONF, 1, ["GC", "1.1.0"]),
    ("STATUS with 1.0.0", {"CNI_COMMAND": "STATUS"}, CONF, 1, ["STATUS", "1.1.0"]),
]


@pytest.mark.parametrize("env, stdin, code, words", [pytest.param(*row[1:], id=row[0]) for row in BAD_INPUTS])
def test_bad_input_is_one_cni_error_naming_the_field(env, stdin, code, words):
    proc = run_plugin(env, stdin)
    doc = proc.error()
    assert doc["code"] == code, doc
    text = doc["msg"] + " " + doc.get("details", "")
    assert all(w in text for w in words), text
    assert "Traceback" not in proc.stderr


def test_error_reply_carries_the_configs_version():
    assert run_plugin({"CNI_COMMAND": "CHECK"}, conf(cniVersion="0.3.1")).error()["cniVersion"] == "0.3.1"


def test_no_command_prints_about_on_stderr_and_exits_0():
    proc = run_plugin({"CNI_COMMAND": DROP})
    assert (proc.rc, proc.stdout) == (0, "")
    assert proc.stderr.startswith("echo ") and f"CNI protocol versions supported: {SUPPORTED_TEXT}" in proc.stderr


@pytest.mark.parametrize(
    "stdin, reported",
    [
        (conf(cniVersion="0.4.0"), "0.4.0"),
        ({"name": "cbr0"}, "1.1.0"),
        (b"", "1.1.0"),
        (b"garbage", "1.1.0"),
        (b"[" * 100_000, "1.1.0"),
    ],
)
def test_version_reports_supported_versions(stdin, reported):
    proc = run_plugin({"CNI_COMMAND": "VERSION", "CNI_IFNAME": DROP}, stdin)
    assert proc.rc == 0
    assert json.loads(proc.stdout) == {"cniVersion": reported, "supportedVersions": list(ver.SUPPORTED)}


def test_add_prints_one_result_in_the_configs_version():
    proc = run_plugin(stdin=conf(cniVersion="0.3.1"))
    assert proc.rc == 0, proc
    assert json.loads(proc.stdout) == {
        "cniVersion": "0.3.1",
        "dns": {},
        "ips": [{"version": "4", "address": "10.0.0.5/24", "gateway": "10.0.0.1"}],
    }


def test_runs_as_python_dash_m_too():
    proc = run_plugin({"CNI_COMMAND": "DEL", "CNI_NETNS": DROP}, argv=("-m", "tests.e2e._echo_plugin"), cwd=ROOT)
    assert (proc.rc, proc.stdout, proc.stderr) == (0, "", "")


def test_unexpected_exception_is_999_one_line_with_traceback_on_stderr_only():
    proc = run_plugin(stdin=conf(crash=True))
    doc = proc.error()
    assert (doc["code"], doc["msg"]) == (999, "ValueError: unexpected")
    assert "multiline" not in proc.stdout
    assert "Traceback (most recent call last)" in proc.stderr and "ValueError: unexpected" in proc.stderr


def test_debug_log_is_json_lines_and_stdout_stays_one_result(tmp_path):
    log_file = tmp_path / "wincni.log"
    proc = run_plugin({"WINCNI_LOG_FILE": str(log_file)})
    assert json.loads(proc.stdout)["ips"] and proc.stderr == ""
    records = [json.loads(line) for line in log_file.read_text().splitlines()]
    assert [r["event"] for r in records] == ["start", "done"]
    assert records[0]["containerID"] == "0123abcd" and records[0]["command"] == "ADD"
    assert isinstance(records[1]["ms"], float)


START_UP = """
import io, json, sys
from plugins.cni import skel
def handlers():
    import no_such_handlers  # noqa: F401 - the import itself is the failure under test
plugin = skel.Plugin("p", handlers, "never imported")
add = {"CNI_COMMAND": "ADD", "CNI_CONTAINERID": "c", "CNI_NETNS": "n", "CNI_IFNAME": "eth0"}
rcs = [skel.run(plugin, env, io.BytesIO(data), io.StringIO(), io.StringIO()) for env, data in [
    ({"CNI_COMMAND": "VERSION"}, b'{"cniVersion": "1.0.0"}'),
    ({"CNI_COMMAND": "ADD"}, b'{"cniVersion": "1.0.0", "name": "n"}'),
    (add, b'{"cniVersion": '),
]]
heavy = ("jsonschema", "libhns.client", "libhns.backend")  # basics.jsontext is the JSON reader
print(json.dumps({"rcs": rcs, "heavy": [m for m in heavy if m in sys.modules]}))
"""


def test_cheap_answers_do_not_import_jsonschema_or_the_hns_library():
    proc = subprocess.run([sys.executable, "-c", START_UP], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert json.loads(proc.stdout) == {"rcs": [0, 1, 1], "heavy": []}, proc.stderr
