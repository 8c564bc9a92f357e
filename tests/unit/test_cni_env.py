"""CNI_* environment parsing: what each command needs, and the names every file name relies on."""

import string

import pytest
from hypothesis import given
from hypothesis import strategies as st

from plugins.cni.env import COMMANDS, check_ifname, parse_env, split_path
from plugins.cni.errors import INVALID_ENV, CniError

FULL = {
    "CNI_COMMAND": "ADD",
    "CNI_CONTAINERID": "abc-1_2.3",
    "CNI_NETNS": "/var/run/netns/x",
    "CNI_IFNAME": "eth0",
    "CNI_ARGS": "K8S_POD_NAME=p",
    "CNI_PATH": "/opt/cni/bin:/usr/lib/cni",
}


def env_error(env, platform="linux"):
    with pytest.raises(CniError) as info:
        parse_env(env, platform)
    assert info.value.code == INVALID_ENV
    return str(info.value)


def test_full_env_becomes_typed_args():
    cmd = parse_env(FULL, "linux")
    assert (cmd.command, cmd.container_id, cmd.netns, cmd.ifname, cmd.args) == (
        "ADD",
        "abc-1_2.3",
        "/var/run/netns/x",
        "eth0",
        "K8S_POD_NAME=p",
    )
    assert cmd.path == ("/opt/cni/bin", "/usr/lib/cni")
    assert cmd.env is FULL


@pytest.mark.parametrize(
    "command, missing",
    [
        ("ADD", ["CNI_CONTAINERID", "CNI_NETNS", "CNI_IFNAME"]),
        ("CHECK", ["CNI_CONTAINERID", "CNI_NETNS", "CNI_IFNAME"]),
        ("DEL", ["CNI_CONTAINERID", "CNI_IFNAME"]),
    ],
)
def test_every_missing_variable_is_named_at_once(command, missing):
    msg = env_error({"CNI_COMMAND": command})
    assert f"[{','.join(missing)}]" in msg


def test_del_does_not_need_netns():
    env = {k: v for k, v in FULL.items() if k != "CNI_NETNS"}
    assert parse_env(dict(env, CNI_COMMAND="DEL"), "linux").netns == ""


@pytest.mark.parametrize("command", ["GC", "STATUS", "VERSION"])
def test_commands_without_a_container_need_only_the_command(command):
    cmd = parse_env({"CNI_COMMAND": command}, "linux")
    assert (cmd.command, cmd.container_id, cmd.path) == (command, "", ())


@pytest.mark.parametrize("command", ["add", "FOO", " ADD"])
def test_unknown_command_is_code_4(command):
    assert "unknown CNI_COMMAND" in env_error(dict(FULL, CNI_COMMAND=command))


@pytest.mark.parametrize("cid", ["-abc", ".abc", "_abc", "a/b", "a b", "a\\b", "ab:c", "ä", "abc\n"])
def test_bad_container_id_is_code_4(cid):
    assert "containerID" in env_error(dict(FULL, CNI_CONTAINERID=cid))


@pytest.mark.parametrize(
    "ifname, words",
    [
        ("", "empty"),
        ("a" * 16, "too long"),
        (".", ". or .."),
        ("..", ". or .."),
        ("a/b", "/"),
        ("a:b", ":"),
        ("a b", "whitespace"),
        ("a\tb", "whitespace"),
    ],
)
def test_bad_ifname_is_code_4(ifname, words):
    with pytest.raises(CniError) as info:
        check_ifname(ifname)
    assert info.value.code == INVALID_ENV and words in info.value.msg


def test_ifname_of_15_characters_is_fine():
    assert parse_env(dict(FULL, CNI_IFNAME="a" * 15), "linux").ifname == "a" * 15


def test_cni_path_separator_follows_the_platform():
    assert split_path("C:\\k\\cni;D:\\x;", "win32") == ("C:\\k\\cni", "D:\\x")
    assert split_path("/a::/b", "linux") == ("/a", "/b")
    assert parse_env(dict(FULL, CNI_PATH="C:\\k\\cni;C:\\opt"), "win32").path == ("C:\\k\\cni", "C:\\opt")


_ID_CHARS = set(string.ascii_letters + string.digits + "_.-")
_KEYS = st.sampled_from(["CNI_COMMAND", "CNI_CONTAINERID", "CNI_NETNS", "CNI_IFNAME", "CNI_ARGS", "CNI_PATH"])


@given(
    env=st.dictionaries(_KEYS, st.text()),
    command=st.sampled_from(COMMANDS) | st.text(),
    platform=st.sampled_from(["linux", "win32"]),
)
def test_arbitrary_env_either_parses_or_is_code_4(env, command, platform):
    env["CNI_COMMAND"] = command
    try:
        cmd = parse_env(env, platform)
    except CniError as err:
        assert err.code == INVALID_ENV
    else:
        assert cmd.command in COMMANDS
        # Accepted IDs are safe in file names: nothing beyond the CNI specification's characters, no trailing \n.
        assert set(cmd.container_id) <= _ID_CHARS
