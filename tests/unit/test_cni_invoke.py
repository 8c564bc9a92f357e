"""Executing IPAM/delegate plugins the way libcni's pkg/invoke does: lookup, env, results, errors."""

import io
import json
import os
import stat
import sys

import pytest

from plugins.cni import log
from plugins.cni.errors import INTERNAL, INVALID_CONFIG, TRY_AGAIN_LATER, CniError
from plugins.cni.invoke import Executor, exec_plugin, find_plugin
from plugins.cni.skel import run

# A child plugin scripted by its stdin: writes "stderr", prints "stdout" (default: an echo of
# what it was given, without cniVersion) and exits with "rc".
CHILD = f"""#!{sys.executable}
import json, os, sys
conf = json.load(sys.stdin)
sys.stderr.write(conf.get("stderr", ""))
echo = {{"env": {{k: v for k, v in os.environ.items() if k.startswith("CNI_")}}, "conf": conf}}
sys.stdout.write(conf["stdout"] if "stdout" in conf else json.dumps(echo))
sys.exit(conf.get("rc", 0))
"""


def make_file(directory, name, text="", executable=True):
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(text)
    if executable:
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


@pytest.fixture
def stderr():
    """Our plugin's stderr, where a child's stderr must be forwarded."""
    buf = io.StringIO()
    with log.scope():
        log.configure("parent", stderr=buf)
        yield buf


@pytest.fixture
def child(tmp_path):
    return make_file(tmp_path / "bin", "child", CHILD)


def run_child(tmp_path, conf, env=None, command="ADD"):
    return exec_plugin(
        "child",
        command,
        json.dumps(conf).encode(),
        env or {"CNI_COMMAND": "ADD"},
        [str(tmp_path / "empty"), str(tmp_path / "bin")],
        "0.4.0",
        Executor(run),
        platform="linux",
    )


# ---------------------------------------------------------------- lookup


def test_posix_lookup_takes_the_first_executable_in_path_order(tmp_path):
    make_file(tmp_path / "a", "ipam", executable=False)
    second = make_file(tmp_path / "b", "ipam")
    make_file(tmp_path / "c", "ipam")
    assert find_plugin("ipam", [str(tmp_path / d) for d in "abc"], "linux") == second


def test_windows_lookup_prefers_exe_in_each_directory(tmp_path):
    make_file(tmp_path / "a", "host-local", executable=False)
    exe = make_file(tmp_path / "a", "host-local.exe", executable=False)
    assert find_plugin("host-local", [str(tmp_path / "a")], "win32") == exe


def test_windows_lookup_falls_back_to_the_bare_name(tmp_path):
    bare = make_file(tmp_path / "a", "host-local", executable=False)
    make_file(tmp_path / "b", "host-local.exe")
    assert find_plugin("host-local", [str(tmp_path / "a"), str(tmp_path / "b")], "win32") == bare


def test_missing_plugin_names_the_path(tmp_path):
    with pytest.raises(CniError) as info:
        find_plugin("x", ["/nowhere", str(tmp_path)], "linux")
    assert info.value.msg == f'failed to find plugin "x" in path [/nowhere {tmp_path}]'


@pytest.mark.parametrize(
    "name, platform, words",
    [
        ("", "linux", "no plugin name provided"),
        ("../x", "linux", "invalid plugin name"),
        ("a/b", "win32", "invalid plugin name"),
    ],
)
def test_bad_plugin_type_is_code_7(name, platform, words):
    with pytest.raises(CniError) as info:
        find_plugin(name, ["/opt/cni/bin"], platform)
    assert info.value.code == INVALID_CONFIG and words in info.value.msg


# ---------------------------------------------------------------- exec


def test_child_gets_parent_env_with_command_replaced_and_our_stdin(tmp_path, child, stderr):
    env = {"CNI_COMMAND": "ADD", "CNI_CONTAINERID": "c1", "CNI_IFNAME": "eth0", "PATH": os.environ["PATH"]}
    result = run_child(tmp_path, {"name": "n"}, env, command="DEL")
    assert result["env"] == {"CNI_COMMAND": "DEL", "CNI_CONTAINERID": "c1", "CNI_IFNAME": "eth0"}
    assert result["conf"] == {"name": "n"}
    assert env["CNI_COMMAND"] == "ADD"


def test_missing_result_version_is_filled_with_the_config_version(tmp_path, child, stderr):
    assert run_child(tmp_path, {})["cniVersion"] == "0.4.0"
    assert run_child(tmp_path, {"stdout": '{"cniVersion": "0.3.1"}'})["cniVersion"] == "0.3.1"


def test_child_prints_nothing_on_success(tmp_path, child, stderr):
    assert run_child(tmp_path, {"stdout": ""}, command="DEL") is None


def test_child_error_keeps_its_code_and_stderr_is_forwarded(tmp_path, child, stderr):
    err_doc = {"cniVersion": "1.0.0", "code": TRY_AGAIN_LATER, "msg": "busy", "details": "lock held"}
    with pytest.raises(CniError) as info:
        run_child(tmp_path, {"stdout": json.dumps(err_doc), "rc": 1, "stderr": "child: warning: x\n"})
    assert (info.value.code, info.value.msg, info.value.details) == (TRY_AGAIN_LATER, "busy", "lock held")
    assert stderr.getvalue() == "child: warning: x\n"


def test_non_json_failure_is_reported_with_its_stderr(tmp_path, child, stderr):
    with pytest.raises(CniError) as info:
        run_child(tmp_path, {"stdout": "panic!", "rc": 2, "stderr": "segfault at 0"})
    assert info.value.code == INTERNAL
    assert info.value.msg == 'netplugin failed: "segfault at 0": exit status 2'
    assert "panic!" in info.value.details


def test_non_json_success_is_an_error(tmp_path, child, stderr):
    with pytest.raises(CniError) as info:
        run_child(tmp_path, {"stdout": "ok"})
    assert info.value.code == INTERNAL and "not JSON" in info.value.msg


def test_exec_is_in_the_debug_log(tmp_path, child, stderr):
    log_file = tmp_path / "debug.log"
    log.configure("parent", log_file=str(log_file))
    run_child(tmp_path, {"name": "n"})
    (record,) = [json.loads(line) for line in log_file.read_text().splitlines()]
    assert (record["event"], record["plugin"], record["child"], record["path"], record["rc"]) == (
        "exec",
        "parent",
        "child",
        child,
        0,
    )


class RecordingExecutor:
    """Answers for the child without starting anything: the executor is the one I/O seam."""

    siblings = None  # no plugin of ours: every child is spawned

    def __init__(self, rc, out, err=""):
        self.answer, self.calls = (rc, out, err), []

    def spawn(self, name, exe, stdin, env):
        self.calls.append((name, exe, stdin, env["CNI_COMMAND"]))
        return self.answer


def test_a_replaced_executor_sees_the_child_env_and_its_answer_is_parsed(tmp_path, child):
    fake = RecordingExecutor(0, b'{"ips": []}')
    result = exec_plugin(
        "child", "DEL", b"{}", {"CNI_COMMAND": "ADD"}, [str(tmp_path / "bin")], "1.0.0", fake, platform="linux"
    )
    assert result == {"ips": [], "cniVersion": "1.0.0"}
    assert fake.calls == [("child", child, b"{}", "DEL")]


def test_a_replaced_executor_s_error_keeps_its_code(tmp_path, child):
    fake = RecordingExecutor(1, b'{"code": 11, "msg": "later"}')
    with pytest.raises(CniError) as exc:
        exec_plugin("child", "ADD", b"{}", {}, [str(tmp_path / "bin")], "1.0.0", fake, platform="linux")
    assert (exc.value.code, exc.value.msg) == (11, "later")


@pytest.mark.parametrize("rc, out", [(1, b'{"code": 1e999}'), (1, b"[" * 100000), (0, b"[" * 100000)])
def test_a_child_answer_json_cannot_hold_is_a_cni_error_not_a_crash(tmp_path, child, rc, out):
    with pytest.raises(CniError) as exc:
        exec_plugin(
            "child", "ADD", b"{}", {}, [str(tmp_path / "bin")], "1.0.0", RecordingExecutor(rc, out), platform="linux"
        )
    assert exc.value.code == INTERNAL
