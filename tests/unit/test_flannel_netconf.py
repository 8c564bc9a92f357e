"""flanneld's net-conf.json checks, flannel's own config keys and node defaults, the sandbox ID."""

from __future__ import annotations

import json

import pytest

from plugins.cni.errors import INVALID_CONFIG, INVALID_ENV, IO_FAILURE, CniError
from plugins.flannel import netconf
from plugins.flannel.config import FlannelConf, node_path, sandbox_id
from testdata import FIXTURES


def backend_of(doc) -> netconf.Backend:
    return netconf.parse(json.dumps(doc).encode(), "/etc/kube-flannel/net-conf.json")


# ---------------------------------------------------------------- net-conf.json


def test_the_node_fixtures():
    vxlan = netconf.load(f"{FIXTURES}/net-conf.vxlan.json")
    assert (vxlan.type, vxlan.name, vxlan.vni, vxlan.port, vxlan.delegate_type()) == (
        "vxlan",
        "vxlan0",
        4096,
        4789,
        "win-overlay",
    )
    hostgw = netconf.load(f"{FIXTURES}/net-conf.host-gw.json")
    assert (hostgw.type, hostgw.network_name, hostgw.delegate_type()) == ("host-gw", "cbr0", "win-bridge")
    netconf.check(vxlan, "vxlan0")
    netconf.check(hostgw, "cbr0")


def test_keys_are_read_like_go_and_the_type_is_case_insensitive():
    b = backend_of({"network": "10.244.0.0/16", "backend": {"NAME": "vxlan0", "TYPE": "VXLAN", "vni": 5000}})
    assert (b.type, b.name, b.vni) == ("vxlan", "vxlan0", 5000)


def test_network_names_default_like_flanneld():
    assert backend_of({"Backend": {"Type": "vxlan"}}).network_name == "flannel.4096"
    assert backend_of({"Backend": {"Type": "vxlan", "VNI": 4100}}).network_name == "flannel.4100"
    assert backend_of({"Backend": {"Type": "host-gw"}}).network_name == "cbr0"


@pytest.mark.parametrize(
    "backend, conf_name, message, fix",
    [
        (
            {"Type": "vxlan", "Name": "vxlan0", "VNI": 1},
            "vxlan0",
            "Backend.VNI 1 is not allowed on Windows",
            "at least 4096",
        ),
        ({"Type": "vxlan", "Name": "vxlan0", "VNI": 4095}, "vxlan0", "Backend.VNI 4095", "at least 4096"),
        (
            {"Type": "vxlan", "Name": "vxlan0", "Port": 8472},
            "vxlan0",
            "Backend.Port 8472 is not allowed on Windows",
            "4789",
        ),
        (
            {"Type": "vxlan", "Name": "vxlan0"},
            "cbr0",
            "Backend.Name is vxlan0, the CNI config names cbr0",
            '"name": "vxlan0"',
        ),
        (
            {"Type": "host-gw", "Name": "cbr0"},
            "vxlan0",
            "Backend.Name is cbr0, the CNI config names vxlan0",
            "L2Bridge",
        ),
        ({"Type": "vxlan"}, "vxlan0", "Backend.Name is flannel.4096, the CNI config names vxlan0", "Backend.Name"),
    ],
)
def test_what_windows_refuses_is_a_config_error_with_the_fix(backend, conf_name, message, fix):
    with pytest.raises(CniError) as err:
        netconf.check(backend_of({"Backend": backend}), conf_name)
    assert err.value.code == INVALID_CONFIG and message in err.value.msg and fix in err.value.details


def test_what_windows_accepts():
    netconf.check(backend_of({"Backend": {"Type": "vxlan", "Name": "v", "VNI": 4096, "Port": 4789}}), "v")
    netconf.check(backend_of({"Backend": {"Type": "vxlan", "Name": "v", "VNI": 16777215, "Port": 0}}), "v")
    netconf.check(backend_of({"Backend": {"Type": "udp", "Name": "other"}}), "v")  # no Windows rules to apply


@pytest.mark.parametrize(
    "raw, what",
    [
        (b"{not json", "not JSON"),
        (b"[" * 100000, "not JSON"),
        (b'["Backend"]', "Backend must be an object"),
        (b'{"Backend": "vxlan"}', "Backend must be an object"),
        (b'{"Backend": {"Type": 1}}', "must be strings"),
        (b'{"Backend": {"Type": "vxlan", "VNI": "4096"}}', "Backend.VNI must be an integer"),
        (b'{"Backend": {"Type": "vxlan", "Port": true}}', "Backend.Port must be an integer"),
    ],
)
def test_a_broken_net_conf_is_named(raw, what):
    with pytest.raises(CniError) as err:
        netconf.parse(raw, "/etc/kube-flannel/net-conf.json")
    assert err.value.code == INVALID_CONFIG
    assert (
        err.value.msg.startswith("flanneld's net-conf.json /etc/kube-flannel/net-conf.json: ") and what in err.value.msg
    )


def test_absent_is_fine_and_unreadable_is_an_io_error(tmp_path):
    assert netconf.load(str(tmp_path / "net-conf.json")) is None
    with pytest.raises(CniError) as err:
        netconf.load(str(tmp_path))
    assert err.value.code == IO_FAILURE and str(tmp_path) in err.value.msg


# ---------------------------------------------------------------- flannel's config


def test_defaults_resolve_against_the_current_drive_on_windows():
    assert node_path("/run/flannel/subnet.env", "win32", "D:\\k") == "D:\\run\\flannel\\subnet.env"
    assert (
        node_path("/run/flannel/subnet.env", "win32", "\\\\srv\\share\\k") == "\\\\srv\\share\\run\\flannel\\subnet.env"
    )
    assert node_path("/run/flannel/subnet.env", "linux", "/home") == "/run/flannel/subnet.env"
    conf = FlannelConf.from_conf({"name": "cbr0"}, "win32", "C:\\k")
    assert (conf.subnet_file, conf.data_dir, conf.net_conf) == (
        "C:\\run\\flannel\\subnet.env",
        "C:\\var\\lib\\cni\\flannel",
        "C:\\etc\\kube-flannel\\net-conf.json",
    )
    conf = FlannelConf.from_conf({"name": "cbr0"}, "linux", "/")
    assert (conf.subnet_file, conf.data_dir, conf.net_conf, conf.cni_version, conf.delegate, conf.runtime_config) == (
        "/run/flannel/subnet.env",
        "/var/lib/cni/flannel",
        "/etc/kube-flannel/net-conf.json",
        "",
        {},
        None,
    )


def test_keys_are_case_insensitive_like_go():
    conf = FlannelConf.from_conf(
        {
            "name": "n",
            "SubnetFile": "/a",
            "DATADIR": "/b",
            "netconf": "/c",
            "Delegate": {"type": "x"},
            "RuntimeConfig": {},
        },
        "linux",
        "/",
    )
    assert (conf.subnet_file, conf.data_dir, conf.net_conf, conf.delegate, conf.runtime_config) == (
        "/a",
        "/b",
        "/c",
        {"type": "x"},
        {},
    )


@pytest.mark.parametrize(
    "key, value",
    [
        ("subnetFile", 5),
        ("subnetFile", ""),
        ("dataDir", ["/x"]),
        ("netConf", {}),
        ("delegate", "win-bridge"),
        ("runtimeConfig", []),
    ],
)
def test_wrong_types_name_the_field_and_the_fix(key, value):
    with pytest.raises(CniError) as err:
        FlannelConf.from_conf({"name": "n", key: value}, "linux", "/")
    assert err.value.code == INVALID_CONFIG and err.value.msg.startswith(f"{key}: ")
    assert f'"{key}"' in err.value.details


# ---------------------------------------------------------------- sandbox ID


@pytest.mark.parametrize(
    "netns, key",
    [
        ("none", "cid"),
        ("", "cid"),
        ("container:pause1", "pause1"),
        ("7c5e0a3e-7d2f-4b7e-9d0c-2d6b0b1c3f11", "cid"),
        ("other:abc", "abc"),
    ],
)
def test_sandbox_id_follows_the_reference(netns, key):
    assert sandbox_id("cid", netns) == key


@pytest.mark.parametrize("netns", ["container:../../etc", "container:", "container:a/b", "container:abc\n"])
def test_a_sandbox_id_that_is_not_a_file_name_is_refused(netns):
    with pytest.raises(CniError) as err:
        sandbox_id("cid", netns)
    assert err.value.code == INVALID_ENV and "container:<sandbox container ID>" in err.value.details


def test_every_problem_is_reported_at_once():
    with pytest.raises(CniError) as err:
        netconf.check(backend_of({"Backend": {"Type": "vxlan", "Name": "v1", "VNI": 1, "Port": 8472}}), "v0")
    for word in ("Backend.VNI 1", "Backend.Port 8472", "Backend.Name is v1"):
        assert word in err.value.msg
    for word in ("at least 4096", "4789", '"name": "v1"'):
        assert word in err.value.details
    with pytest.raises(CniError) as err:
        netconf.parse(b'{"Network": 10, "Backend": {"Type": "vxlan", "VNI": "1", "Port": "8472"}}', "n.json")
    assert all(w in err.value.msg for w in ("Backend.VNI", "Backend.Port", "Network must be a string"))


@pytest.mark.parametrize(
    "backend, unset",
    [
        ({"Type": "vxlan"}, "Backend.VNI or Backend.Port"),
        ({"Type": "vxlan", "VNI": 4096}, "Backend.Port"),
        ({"Type": "vxlan", "Port": 4789}, "Backend.VNI"),
    ],
)
def test_linux_flannel_defaults_differ_unless_vni_and_port_are_explicit(backend, unset):
    msg, fix = netconf.linux_mismatch(backend_of({"Backend": backend}))
    assert f"sets no {unset}:" in msg and "VNI 1 and UDP port 8472" in msg
    assert '"VNI": 4096 and "Port": 4789' in fix


def test_no_linux_mismatch_when_explicit_or_not_vxlan():
    assert netconf.linux_mismatch(backend_of({"Backend": {"Type": "vxlan", "VNI": 4096, "Port": 4789}})) is None
    assert netconf.linux_mismatch(backend_of({"Backend": {"Type": "host-gw"}})) is None
    assert backend_of({"Network": "10.244.0.0/16", "Backend": {"Type": "host-gw"}}).network == "10.244.0.0/16"


def test_a_saved_delegate_config_nested_past_the_parser_is_a_config_error():
    from plugins.flannel.commands import _saved

    with pytest.raises(CniError) as err:
        _saved(b"[" * 100000, "/var/lib/cni/flannel/abc")
    assert err.value.code == INVALID_CONFIG and "/var/lib/cni/flannel/abc" in err.value.msg


def test_a_net_conf_far_larger_than_flanneld_writes_is_code_7(tmp_path):
    big = tmp_path / "net-conf.json"
    big.write_bytes(b'{"Network": "10.244.0.0/16", "x": "' + b"a" * (1 << 20) + b'"}')
    with pytest.raises(CniError) as info:
        netconf.load(str(big))
    assert info.value.code == INVALID_CONFIG and "over 1024 KiB" in info.value.msg
