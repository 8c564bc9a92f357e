"""skel.run in-process: dispatch, version-aware output, error JSON, crash containment, logging."""

import importlib
import io
import json

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

import _fake_handlers
from plugins.cni import skel
from plugins.cni.errors import INCOMPATIBLE_VERSION, INTERNAL, INVALID_ENV, IO_FAILURE, TRY_AGAIN_LATER
from plugins.registry import PLUGINS

PLUGIN = skel.Plugin("fake", lambda: _fake_handlers.HANDLERS, "a plugin for tests")
ENV = {
    "CNI_COMMAND": "ADD",
    "CNI_CONTAINERID": "c1",
    "CNI_NETNS": "ns",
    "CNI_IFNAME": "eth0",
    "CNI_ARGS": "IgnoreUnknown=1;K8S_POD_NAME=web",
    "CNI_PATH": "/opt/cni/bin",
}
CONF = {"cniVersion": "1.0.0", "name": "net", "type": "fake"}


class Run:
    """One skel.run with captured streams; ``doc`` is stdout parsed as exactly one JSON value."""

    def __init__(self, env=None, conf=None, stdin=None, plugin=PLUGIN, platform="linux", **env_changes):
        data = stdin if stdin is not None else json.dumps(CONF if conf is None else conf).encode()
        out, err = io.StringIO(), io.StringIO()
        _fake_handlers.seen.clear()
        self.rc = skel.run(
            plugin,
            {**(ENV if env is None else env), **env_changes},
            data if hasattr(data, "read") else io.BytesIO(data),
            out,
            err,
            platform,
        )
        self.stdout, self.stderr = out.getvalue(), err.getvalue()
        self.doc = json.loads(self.stdout) if self.stdout else None
        self.req = _fake_handlers.seen[0] if _fake_handlers.seen else None


def test_add_prints_the_result_in_the_configs_version():
    run = Run(conf=dict(CONF, cniVersion="0.3.1"))
    assert run.rc == 0
    assert run.doc == {
        "cniVersion": "0.3.1",
        "dns": {},
        "ips": [{"version": "4", "address": "10.0.0.5/24", "gateway": "10.0.0.1"}],
    }


def test_config_without_version_gets_a_0_1_0_result():
    run = Run(conf={"name": "net"})
    assert run.doc == {"cniVersion": "0.1.0", "ip4": {"ip": "10.0.0.5/24", "gateway": "10.0.0.1"}, "dns": {}}


def test_handler_may_return_a_ready_document():
    assert Run(conf=dict(CONF, rawResult={"cniVersion": "1.0.0", "ips": []})).doc == {"cniVersion": "1.0.0", "ips": []}


@pytest.mark.parametrize("command, version", [("DEL", "0.1.0"), ("CHECK", "0.4.0"), ("STATUS", "1.1.0")])
def test_commands_without_output_print_nothing(command, version):
    run = Run(CNI_COMMAND=command, conf=dict(CONF, cniVersion=version))
    assert (run.rc, run.stdout, run.req.command) == (0, "", command)


def test_gc_without_a_handler_succeeds():
    run = Run(CNI_COMMAND="GC", conf=dict(CONF, cniVersion="1.1.0"))
    assert (run.rc, run.stdout) == (0, "")


def test_handler_error_is_printed_with_the_config_version():
    run = Run(conf=dict(CONF, action="fail", cniVersion="0.4.0"))
    assert run.rc == 1
    assert run.doc == {
        "cniVersion": "0.4.0",
        "code": TRY_AGAIN_LATER,
        "msg": "network not ready",
        "details": "try again later",
    }


def test_crash_is_code_999_with_one_line_and_the_traceback_only_on_stderr(tmp_path):
    log_file = tmp_path / "debug.log"
    run = Run(conf=dict(CONF, action="crash"), WINCNI_LOG_FILE=str(log_file))
    assert (run.rc, run.doc["code"], run.doc["msg"]) == (1, INTERNAL, "RuntimeError: boom")
    assert "Traceback" not in run.stdout and "second line" not in run.stdout
    assert "Traceback (most recent call last)" in run.stderr and 'raise RuntimeError("boom' in run.stderr
    crash = [r for r in map(json.loads, log_file.read_text().splitlines()) if r["event"] == "crash"]
    assert "Traceback" in crash[0]["traceback"]


def test_unreadable_stdin_is_code_5():
    class Broken:
        def read(self, size=-1):
            raise OSError("stdin closed")

    run = Run(stdin=Broken())
    assert (run.rc, run.doc["code"]) == (1, IO_FAILURE)


def test_request_gives_the_handler_typed_views():
    prev = {"cniVersion": "1.0.0", "ips": [{"address": "10.0.0.9/24"}]}
    run = Run(
        conf=dict(CONF, prevResult=prev, runtimeConfig={"portMappings": [{"hostPort": 80, "containerPort": 8080}]})
    )
    req = run.req
    assert (req.container_id, req.netns, req.ifname, req.cni_version) == ("c1", "ns", "eth0", "1.0.0")
    assert req.cni_args == {"IgnoreUnknown": "1", "K8S_POD_NAME": "web"}
    assert req.runtime_config.port_mappings[0].container_port == 8080
    assert req.prev_result.ips[0].address == "10.0.0.9/24"
    assert req.stdin == json.dumps(run.req.conf).encode()


def test_request_execs_from_cni_path_split_for_its_platform():
    req = Run(platform="win32", CNI_PATH="C:\\k\\cni;C:\\opt\\cni").req
    with pytest.raises(Exception) as info:
        req.exec_plugin("host-local")
    assert 'failed to find plugin "host-local" in path [C:\\k\\cni C:\\opt\\cni]' in str(info.value)


# ---------------------------------------------------------------- laziness and logging


def _unimportable():
    import no_such_module_anywhere  # noqa: F401 - the cheap answers never get here

    raise AssertionError("unreachable")


UNIMPORTABLE = skel.Plugin("lazy", _unimportable, "never imported")


@pytest.mark.parametrize(
    "kwargs, code",
    [
        ({"CNI_COMMAND": "VERSION"}, None),
        ({"CNI_IFNAME": ""}, INVALID_ENV),
        ({"stdin": b"{not json"}, 6),
        ({"conf": dict(CONF, cniVersion="9.9.9")}, INCOMPATIBLE_VERSION),
    ],
)
def test_cheap_answers_never_import_the_handlers(kwargs, code):
    run = Run(plugin=UNIMPORTABLE, **kwargs)
    assert (run.doc or {}).get("code") == code


def test_debug_log_gets_json_lines_and_stdout_stays_clean(tmp_path):
    log_file = tmp_path / "debug.log"
    run = Run(WINCNI_LOG_FILE=str(log_file))
    assert run.doc["ips"]
    records = [json.loads(line) for line in log_file.read_text().splitlines()]
    assert [r["event"] for r in records] == ["start", "done"]
    assert {(r["plugin"], r["command"], r["containerID"]) for r in records} == {("fake", "ADD", "c1")}


def test_config_log_file_turns_the_debug_log_on(tmp_path):
    log_file = tmp_path / "conf.log"
    Run(conf=dict(CONF, logFile=str(log_file)))
    assert "done" in log_file.read_text()


def test_log_settings_do_not_leak_into_the_next_run(tmp_path):
    log_file = tmp_path / "debug.log"
    Run(WINCNI_LOG_FILE=str(log_file))
    before = log_file.read_text()
    Run(CNI_CONTAINERID="c2")
    assert log_file.read_text() == before


# ---------------------------------------------------------------- never a crash

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner),
    max_leaves=8,
)
_confs = st.fixed_dictionaries(
    {},
    optional={
        "cniVersion": st.sampled_from(["", "0.1.0", "0.4.0", "1.1.0", "2.0"]) | st.text(),
        "name": st.sampled_from(["net", "-bad"]) | st.text(),
        "prevResult": _json,
        "runtimeConfig": _json,
    },
)
_good_confs = _confs.map(lambda d: {**d, "name": "net", "cniVersion": "1.1.0"})  # reach the handler often
_stdins = st.one_of(
    st.binary(),
    *[
        strategy.map(lambda d: json.dumps(d).encode())
        for strategy in (_json, _confs, _good_confs, _good_confs, _good_confs)
    ],
)
_envs = st.builds(
    lambda command, garbled: {**ENV, "CNI_COMMAND": command, **garbled},
    st.sampled_from(["ADD", "DEL", "CHECK", "GC", "STATUS", "VERSION", "x"]),
    st.just({}) | st.dictionaries(st.sampled_from(sorted(ENV)), st.text(), max_size=2),
)


@pytest.mark.slow
@settings(max_examples=300)
@given(env=_envs, stdin=_stdins)
def test_arbitrary_input_gives_one_json_answer_never_999(env, stdin):
    run = Run(env=env, stdin=stdin)
    event("handler reached" if run.req else "rejected before the handler")
    assert run.rc in (0, 1)
    if run.rc:
        assert set(run.doc) <= {"cniVersion", "code", "msg", "details"} and run.doc["code"] != INTERNAL
    assert run.stdout == "" or run.stdout == json.dumps(run.doc, indent=4) + "\n"


def test_about_text_names_version_and_checkout_commit(tmp_path):
    """Run without CNI_COMMAND, a plugin says which build it is (version, commit read from .git)."""
    from plugins.cni import buildinfo

    err = io.StringIO()
    assert skel.run(PLUGIN, {}, io.BytesIO(b""), io.StringIO(), err) == 0
    assert f"fake {buildinfo.VERSION}" in err.getvalue()
    git = tmp_path / ".git"
    (git / "refs" / "heads").mkdir(parents=True)
    (git / "HEAD").write_text("ref: refs/heads/main\n")
    (git / "packed-refs").write_text("# pack-refs\n" + "a" * 40 + " refs/heads/main\n")
    assert buildinfo.checkout_commit(str(tmp_path)) == "a" * 40
    (git / "refs" / "heads" / "main").write_text("b" * 40 + "\n")
    assert buildinfo.checkout_commit(str(tmp_path)) == "b" * 40
    assert buildinfo.checkout_commit(str(tmp_path / "nowhere")) == ""


# ---------------------------------------------------------------- handlers


def test_each_command_runs_its_own_handler():
    ran = []
    handlers = skel.Handlers(
        add=lambda req: ran.append("add") or {"cniVersion": "1.1.0"},
        delete=lambda req: ran.append("delete"),
        check=lambda req: ran.append("check"),
        gc=lambda req: ran.append("gc"),
        status=lambda req: ran.append("status"),
    )
    plugin = skel.Plugin("fake", lambda: handlers, "a plugin for tests")
    for command in ("ADD", "DEL", "CHECK", "GC", "STATUS"):
        assert Run(plugin=plugin, CNI_COMMAND=command, conf=dict(CONF, cniVersion="1.1.0")).rc == 0
    assert ran == ["add", "delete", "check", "gc", "status"]


def test_handlers_are_named_and_frozen():
    with pytest.raises(TypeError):
        skel.Handlers(_fake_handlers.add, _fake_handlers.delete, _fake_handlers.check)  # no order to get wrong
    with pytest.raises(AttributeError, match="frozen"):
        _fake_handlers.HANDLERS.add = _fake_handlers.delete
    assert _fake_handlers.HANDLERS.add is _fake_handlers.add


@pytest.mark.parametrize("name, package", sorted(PLUGINS.items()))
def test_every_plugin_hands_skel_all_five_handlers(name, package):
    """Ours implement every command: none falls back on skel's "nothing to collect, ready"."""
    handlers = importlib.import_module(package + ".__main__").PLUGIN.handlers()
    assert type(handlers) is skel.Handlers
    for field in skel.Handlers.__slots__:
        assert callable(getattr(handlers, field)) and getattr(handlers, field) is not skel._ready, field
