"""host-local commands through ``main`` (in-process): the reference's host_local_test.go, ported
for every CNI version, plus CHECK, GC and STATUS."""

from __future__ import annotations

import io
import json
import os

import pytest

from plugins.cni import skel
from plugins.cni.version import SUPPORTED
from plugins.ipam_host_local.__main__ import PLUGIN, main
from plugins.ipam_host_local.index import INDEX_NAME
from plugins.ipam_host_local.store import SANDBOXES

DUAL = [[{"subnet": "10.1.2.0/24"}, {"subnet": "10.2.2.0/24"}], [{"subnet": "2001:db8:1::/64"}]]


@pytest.fixture
def net(tmp_path):
    resolv = tmp_path / "resolv.conf"
    resolv.write_text("nameserver 192.0.2.3\n")

    def conf(version: str = "1.1.0", ranges=None, **extra) -> dict:
        ipam = {
            "type": "host-local",
            "dataDir": str(tmp_path / "data"),
            "resolvConf": str(resolv),
            "routes": [{"dst": "0.0.0.0/0"}, {"dst": "::/0"}, {"dst": "192.168.0.0/16", "gw": "1.1.1.1"}],
            "ranges": DUAL if ranges is None else ranges,
        }
        ipam.update(extra.pop("ipam", {}))
        return {"cniVersion": version, "name": extra.pop("name", "mynet"), "type": "ipvlan", "ipam": ipam, **extra}

    conf.dir = tmp_path / "data"
    return conf


def run(
    command: str, conf: dict, cid: str = "dummy", ifname: str = "eth0", args: str = "", platform: str = "linux"
) -> tuple[int, dict | None, str]:
    env = {
        "CNI_COMMAND": command,
        "CNI_CONTAINERID": cid,
        "CNI_NETNS": "/proc/1/ns/net",
        "CNI_IFNAME": ifname,
        "CNI_PATH": "/opt/cni/bin",
        "CNI_ARGS": args,
    }
    out = io.StringIO()
    rc = skel.run(PLUGIN, env, io.BytesIO(json.dumps(conf).encode()), out, io.StringIO(), platform=platform)
    text = out.getvalue()
    return rc, json.loads(text) if text else None, text


def read(d, name) -> bytes:
    return (d / name).read_bytes()


@pytest.mark.parametrize("version", SUPPORTED)
def test_dual_stack_add_del(net, version):
    rc, res, raw = run("ADD", net(version))
    assert rc == 0, raw
    d = net.dir / "mynet"
    if version in ("0.1.0", "0.2.0"):
        assert res["ip4"] == {
            "ip": "10.1.2.2/24",
            "gateway": "10.1.2.1",
            "routes": [{"dst": "0.0.0.0/0"}, {"dst": "192.168.0.0/16", "gw": "1.1.1.1"}],
        }
        assert res["ip6"] == {"ip": "2001:db8:1::2/64", "gateway": "2001:db8:1::1", "routes": [{"dst": "::/0"}]}
    else:
        assert [(i["address"], i["gateway"]) for i in res["ips"]] == [
            ("10.1.2.2/24", "10.1.2.1"),
            ("2001:db8:1::2/64", "2001:db8:1::1"),
        ]
        assert res["routes"][2] == {"dst": "192.168.0.0/16", "gw": "1.1.1.1"}
        assert ('"version":' in raw) is (version in ("0.3.0", "0.3.1", "0.4.0"))
    assert res["dns"] == {"nameservers": ["192.0.2.3"]}
    assert read(d, "10.1.2.2") == b"dummy\r\neth0" and read(d, "2001:db8:1::2") == b"dummy\r\neth0"
    assert read(d, "last_reserved_ip.0") == b"10.1.2.2" and read(d, "last_reserved_ip.1") == b"2001:db8:1::2"
    assert run("DEL", net(version))[0] == 0
    assert not (d / "10.1.2.2").exists() and not (d / "2001:db8:1::2").exists()


def test_windows_escaping_end_to_end(net):
    assert run("ADD", net(), platform="win32")[0] == 0
    assert read(net.dir / "mynet", "2001_db8_1__2") == b"dummy\r\neth0"
    assert run("DEL", net(), platform="win32")[0] == 0
    assert not (net.dir / "mynet" / "2001_db8_1__2").exists()


def test_per_ifname_on_two_networks(net):
    for name, ifname in (("net1", "eth0"), ("net2", "eth1")):
        assert run("ADD", net(name=name), ifname=ifname)[0] == 0
    assert run("DEL", net(name="net1"), ifname="eth0")[0] == 0
    assert not (net.dir / "net1" / "10.1.2.2").exists()
    assert read(net.dir / "net2", "10.1.2.2") == b"dummy\r\neth1"


def test_repeat_add_returns_the_held_address_other_container_gets_next(net):
    assert run("ADD", net())[0] == 0
    rc, res, _ = run("ADD", net())
    assert rc == 0 and res["ips"][0]["address"] == "10.1.2.2/24"
    assert sorted(p.name for p in (net.dir / "mynet").iterdir() if p.name.startswith("10.")) == ["10.1.2.2"]
    rc, res, _ = run("ADD", net(), cid="other")
    assert rc == 0 and res["ips"][0]["address"] == "10.1.2.3/24"


def test_legacy_id_only_file_released_by_del(net):
    d = net.dir / "mynet"
    d.mkdir(parents=True)
    (d / "10.1.2.2").write_bytes(b"dummy")
    assert run("DEL", net())[0] == 0
    assert not (d / "10.1.2.2").exists()


def test_del_unknown_container_and_missing_store_succeed(net):
    assert run("DEL", net(), cid="nobody")[:2] == (0, None)
    assert run("ADD", net())[0] == 0
    assert run("DEL", net(), cid="nobody")[:2] == (0, None)
    assert (net.dir / "mynet" / "10.1.2.2").exists()


def test_del_survives_a_broken_range_config(net):
    assert run("ADD", net())[0] == 0
    assert run("DEL", net(ranges=[[{"subnet": "10.1.2.7/24"}]]))[0] == 0
    assert not (net.dir / "mynet" / "10.1.2.2").exists()


def test_no_last_reserved_warning_on_first_add(net):
    out, err = io.StringIO(), io.StringIO()
    env = {"CNI_COMMAND": "ADD", "CNI_CONTAINERID": "dummy", "CNI_NETNS": "x", "CNI_IFNAME": "eth0", "CNI_PATH": "/"}
    assert skel.run(PLUGIN, env, io.BytesIO(json.dumps(net()).encode()), out, err) == 0
    assert err.getvalue() == ""


@pytest.mark.parametrize("version", SUPPORTED)
def test_requested_ips(net, version):
    sets = [[{"subnet": "10.1.2.0/24"}], [{"subnet": "10.1.3.0/24"}]]
    rc, res, _ = run("ADD", net(version, ranges=sets, args={"cni": {"ips": ["10.1.2.88", "10.1.3.77"]}}))
    if version in ("0.1.0", "0.2.0"):
        assert rc == 1 and "does not support more than 1 address per family" in res["msg"]
    else:
        assert rc == 0 and [i["address"] for i in res["ips"]] == ["10.1.2.88/24", "10.1.3.77/24"]


def test_requested_ip_from_cni_args_and_dual_stack(net):
    rc, res, _ = run("ADD", net(args={"cni": {"ips": ["2001:db8:1::999"]}}), args="IP=10.1.2.88")
    assert rc == 0 and [i["address"] for i in res["ips"]] == ["10.1.2.88/24", "2001:db8:1::999/64"]


def test_unused_requested_ip(net):
    rc, res, _ = run(
        "ADD", net(ranges=[[{"subnet": "10.1.2.0/24"}]], args={"cni": {"ips": ["10.1.2.88", "10.1.2.99"]}})
    )
    assert rc == 1 and res["msg"].startswith("failed to allocate all requested IPs: 10.1.2.")
    assert not (net.dir / "mynet" / "10.1.2.88").exists()


def test_check(net):
    rc, res, _ = run("ADD", net())
    prev = net(prevResult=res)
    assert run("CHECK", prev)[:2] == (0, None)
    rc, err, _ = run("CHECK", prev, cid="other")
    assert rc == 1 and err["code"] == 3 and err["msg"] == "host-local: Failed to find address added by container other"
    os.unlink(net.dir / "mynet" / "2001:db8:1::2")
    rc, err, _ = run("CHECK", prev)
    assert rc == 1 and "2001:db8:1::2" in err["msg"] and "10.1.2.2" not in err["msg"]


def test_gc_releases_everything_not_valid(net):
    for cid, ifname in (("a", "eth0"), ("b", "eth0"), ("c", "eth1")):
        assert run("ADD", net(), cid=cid, ifname=ifname)[0] == 0
    d = net.dir / "mynet"
    (d / "10.1.2.100").write_bytes(b"c")  # legacy, container c still valid
    (d / "10.1.2.101").write_bytes(b"gone")  # legacy, container gone
    (d / "10.1.2.102").write_bytes(b"")  # torn reservation
    gc = net(
        **{
            "cni.dev/valid-attachments": [
                {"containerID": "a", "ifname": "eth0"},
                {"containerID": "c", "ifname": "eth0"},
            ]
        }
    )
    assert run("GC", gc)[:2] == (0, None)
    left = {n for n in os.listdir(d)}
    assert left == {
        "10.1.2.2",
        "2001:db8:1::2",
        "10.1.2.100",
        "lock",
        "last_reserved_ip.0",
        "last_reserved_ip.1",
        INDEX_NAME,
        SANDBOXES,
    }
    assert os.listdir(d / SANDBOXES) == ["10.1.2.2"]  # a's; b's and c/eth1's went with their reservations
    assert run("GC", net(**{"cni.dev/valid-attachments": []}))[0] == 0
    assert set(os.listdir(d)) == {"lock", "last_reserved_ip.0", "last_reserved_ip.1", INDEX_NAME, SANDBOXES}
    assert os.listdir(d / SANDBOXES) == []


def test_gc_without_attachments_key_releases_nothing(net):
    assert run("ADD", net())[0] == 0
    assert run("GC", net())[0] == 0
    assert (net.dir / "mynet" / "10.1.2.2").exists()


def test_status(net, tmp_path):
    small = [[{"subnet": "10.9.0.0/30"}]]
    assert run("STATUS", net(ranges=small))[:2] == (0, None)
    assert run("ADD", net(ranges=small))[0] == 0
    rc, err, _ = run("STATUS", net(ranges=small))
    assert rc == 1 and err["code"] == 50 and err["msg"] == "no IP addresses available in range set: 10.9.0.1-10.9.0.2"
    (tmp_path / "file").write_text("")
    rc, err, _ = run("STATUS", net(ipam={"dataDir": str(tmp_path / "file")}))
    assert rc == 1 and err["code"] == 50 and str(tmp_path / "file") in err["msg"]


def test_status_takes_no_lock_and_writes_nothing(net):
    assert run("STATUS", net())[:2] == (0, None)
    assert not net.dir.exists()  # the first ADD creates the store
    assert run("ADD", net())[0] == 0
    store = net.dir / "mynet"
    (store / "lock").unlink()
    (store / INDEX_NAME).unlink()  # a rebuilt index is not saved either
    before = {p.name: p.stat().st_mtime_ns for p in store.iterdir()}
    assert run("STATUS", net())[:2] == (0, None)
    assert {p.name: p.stat().st_mtime_ns for p in store.iterdir()} == before


def test_unusable_data_dir_on_add_is_an_io_error(net, tmp_path):
    (tmp_path / "file").write_text("")
    rc, err, _ = run("ADD", net(ipam={"dataDir": str(tmp_path / "file")}))
    assert rc == 1 and err["code"] == 5 and "cannot use data directory" in err["msg"]


def test_missing_resolv_conf_names_the_field(net):
    rc, err, _ = run("ADD", net(ipam={"resolvConf": "/nonexistent/resolv.conf"}))
    assert rc == 1 and err["code"] == 7 and err["msg"].startswith("ipam.resolvConf: cannot read /nonexistent")


def test_main_is_the_entry(net):
    out = io.StringIO()
    env = {"CNI_COMMAND": "VERSION"}
    assert main(env, io.BytesIO(b'{"cniVersion":"1.0.0"}'), out) == 0
    assert json.loads(out.getvalue())["supportedVersions"] == list(SUPPORTED)


def test_check_confirms_a_miss_against_the_files(net):
    """A reservation the index cannot see (written in the same clock tick) is still found."""
    assert run("ADD", net())[0] == 0
    d = net.dir / "mynet"
    stamp = os.stat(d).st_mtime_ns
    (d / "10.1.2.50").write_bytes(b"hidden\r\neth0")
    os.utime(d, ns=(stamp, stamp))
    assert run("CHECK", net(), cid="hidden")[:2] == (0, None)


def test_gc_and_del_never_release_a_pinned_reservation(net):
    """The node's own addresses (kube-proxy's source VIP): a container ID no runtime can pass."""
    assert run("ADD", net(), cid="a")[0] == 0
    d = net.dir / "mynet"
    (d / "10.1.2.200").write_bytes(b"_wincni-source-vip\r\nsourcevip")
    assert run("DEL", net(), cid="a")[0] == 0
    assert run("GC", net(**{"cni.dev/valid-attachments": []}))[0] == 0
    assert {n for n in os.listdir(d) if n[0].isdigit()} == {"10.1.2.200"}
