"""host-local configuration: the reference's config_test.go, plus the bad-input table."""

from __future__ import annotations

import json

import pytest

from basics import ipaddr
from plugins.cni.config import validate
from plugins.cni.errors import INVALID_CONFIG, INVALID_ENV, CniError
from plugins.ipam_host_local import config
from plugins.ipam_host_local.resolvconf import parse as parse_resolv

ip = ipaddr.ip_address


def load(conf: dict, args: dict | None = None, version: str | None = None, platform: str = "linux"):
    conf = {"name": "mynet", **conf}
    return config.load(conf, args or {}, version or conf.get("cniVersion", "0.3.1"), platform)


def bounds(cfg):
    return [
        [(str(r.subnet), str(r.range_start), str(r.range_end), str(r.gateway)) for r in s.ranges]
        for s in cfg.range_sets
    ]


def test_old_style_single_range():
    cfg = load(
        {
            "cniVersion": "0.3.1",
            "ipam": {
                "type": "host-local",
                "subnet": "10.1.2.0/24",
                "rangeStart": "10.1.2.9",
                "rangeEnd": "10.1.2.20",
                "gateway": "10.1.2.30",
            },
        }
    )
    assert bounds(cfg) == [[("10.1.2.0/24", "10.1.2.9", "10.1.2.20", "10.1.2.30")]]
    assert cfg.name == "mynet" and cfg.data_dir == "/var/lib/cni/networks"


def test_new_style_two_sets_with_defaults():
    cfg = load(
        {"ipam": {"ranges": [[{"subnet": "10.1.2.0/24"}, {"subnet": "10.2.2.0/24"}], [{"subnet": "2001:db8:1::/64"}]]}}
    )
    assert bounds(cfg)[0][0] == ("10.1.2.0/24", "10.1.2.1", "10.1.2.254", "10.1.2.1")
    assert len(cfg.range_sets) == 2 and cfg.range_sets[1].version == 6


def test_runtime_ranges_first_then_legacy_then_ranges():
    cfg = load(
        {
            "ipam": {"subnet": "10.1.0.0/24", "ranges": [[{"subnet": "10.2.0.0/24"}]]},
            "runtimeConfig": {"ipRanges": [[{"subnet": "10.3.0.0/24"}]]},
        }
    )
    assert [str(s.ranges[0].subnet) for s in cfg.range_sets] == ["10.3.0.0/24", "10.1.0.0/24", "10.2.0.0/24"]


@pytest.mark.parametrize("env_ip", ["10.1.2.10", "10.1.2.10/24"])
def test_cni_args_ip_prefix_dropped(env_ip):
    cfg = load({"ipam": {"subnet": "10.1.2.0/24"}}, {"IP": env_ip})
    assert cfg.requested == (ip("10.1.2.10"),)


@pytest.mark.parametrize("with_prefix", [False, True])
def test_requested_ips_order(with_prefix):
    p = (lambda s, n: f"{s}/{n}") if with_prefix else (lambda s, n: s)
    cfg = load(
        {
            "ipam": {
                "ranges": [[{"subnet": "10.1.2.0/24"}], [{"subnet": "11.11.0.0/16"}], [{"subnet": "2001:db8:1::/64"}]]
            },
            "args": {"cni": {"ips": [p("10.1.2.11", 24), p("11.11.11.11", 16), p("2001:db8:1::11", 64)]}},
        },
        {"IP": p("10.1.2.10", 24)},
    )
    assert [str(a) for a in cfg.requested] == ["10.1.2.10", "10.1.2.11", "11.11.11.11", "2001:db8:1::11"]


def test_runtime_config_ips():
    cfg = load(
        {
            "ipam": {"subnet": "192.168.0.0/24", "ranges": [[{"subnet": "2001:db8::/64"}]]},
            "runtimeConfig": {"ips": ["192.168.0.1", "192.168.0.5/24", "2001:db8::1/64"]},
        }
    )
    assert cfg.requested == (ip("192.168.0.1"), ip("192.168.0.5"), ip("2001:db8::1"))
    assert cfg.requested[0].version == 4


def test_keys_are_case_insensitive_like_go():
    cfg = load({"IPAM": {"Subnet": "10.1.2.0/24", "DataDir": "/tmp/x", "Routes": [{"Dst": "0.0.0.0/0"}]}})
    assert bounds(cfg)[0][0][0] == "10.1.2.0/24" and cfg.data_dir == "/tmp/x" and cfg.routes[0].dst == "0.0.0.0/0"


def test_version_020_allows_one_v4_and_one_v6():
    cfg = load({"ipam": {"ranges": [[{"subnet": "10.1.2.0/24"}], [{"subnet": "2001:db8:1::/64"}]]}}, version="0.2.0")
    assert len(cfg.range_sets) == 2


def test_default_data_dir_on_windows_is_on_the_current_drive():
    assert config.default_data_dir("win32", "D:\\k\\cni") == "D:\\var\\lib\\cni\\networks"
    assert config.default_data_dir("win32", "\\\\srv\\share\\x") == "\\\\srv\\share\\var\\lib\\cni\\networks"
    assert config.default_data_dir("linux") == "/var/lib/cni/networks"


@pytest.mark.parametrize("command", ["DEL", "GC"])
def test_location_ignores_broken_ranges(command):
    conf = {"name": "n", "ipam": {"subnet": "10.0.0.5/24", "ranges": "x", "routes": [{"gw": 1}], "dataDir": "/d"}}
    assert config.load_location(conf, "linux", command).directory == "/d/n"


@pytest.mark.parametrize("ipam, field", [({"dataDir": 5}, "ipam.dataDir"), ("host-local", "ipam")])
def test_location_needs_a_readable_data_dir(ipam, field):
    with pytest.raises(CniError) as info:
        config.load_location({"name": "n", "ipam": ipam}, "linux", "DEL")
    assert info.value.code == INVALID_CONFIG and field in info.value.msg and "addresses" in info.value.msg


# ---- bad input: (config, CNI_ARGS) -> code, message fragment (field or reference wording) ----
BAD = [
    ({}, {}, INVALID_CONFIG, "IPAM config missing 'ipam' key"),
    ({"ipam": {}}, {}, INVALID_CONFIG, "no IP ranges specified"),
    ({"ipam": "host-local"}, {}, INVALID_CONFIG, "ipam: "),
    ({"ipam": {"subnet": "10.0.0.0"}}, {}, INVALID_CONFIG, 'ipam.subnet: "10.0.0.0" is not a valid CIDR'),
    ({"ipam": {"subnet": 10}}, {}, INVALID_CONFIG, "ipam.subnet"),
    ({"ipam": {"subnet": "10.0.0.0/24", "gateway": "10.0.0.x"}}, {}, INVALID_CONFIG, "ipam.gateway"),
    ({"ipam": {"ranges": [{"subnet": "10.0.0.0/24"}]}}, {}, INVALID_CONFIG, "ipam.ranges[0]"),
    (
        {"ipam": {"ranges": [[{"subnet": "10.0.0.0/24", "rangeEnd": "nope"}]]}},
        {},
        INVALID_CONFIG,
        "ipam.ranges[0][0].rangeEnd",
    ),
    (
        {"ipam": {"ranges": [[{"rangeStart": "10.0.0.2"}]]}},
        {},
        INVALID_CONFIG,
        "ipam.ranges[0][0]: missing required field 'subnet'",
    ),
    (
        {"ipam": {"subnet": "10.0.0.0/24", "routes": [{"gw": "10.0.0.1"}]}},
        {},
        INVALID_CONFIG,
        "ipam.routes[0]: missing required field 'dst'",
    ),
    ({"ipam": {"subnet": "10.0.0.0/24", "routes": [{"dst": "default"}]}}, {}, INVALID_CONFIG, "ipam.routes[0].dst"),
    ({"ipam": {"subnet": "10.0.0.0/24", "dataDir": 5}}, {}, INVALID_CONFIG, "ipam.dataDir"),
    (
        {"ipam": {"subnet": "10.0.0.0/24"}, "args": {"cni": {"ips": ["10.0.0.300"]}}},
        {},
        INVALID_CONFIG,
        "args.cni.ips[0]",
    ),
    (
        {"ipam": {"subnet": "10.0.0.0/24"}, "runtimeConfig": {"ips": "10.0.0.3"}},
        {},
        INVALID_CONFIG,
        "runtimeConfig.ips",
    ),
    (
        {"ipam": {"subnet": "10.0.0.0/24"}, "runtimeConfig": {"ipRanges": [[{"subnet": "x"}]]}},
        {},
        INVALID_CONFIG,
        "runtimeConfig.ipRanges[0][0].subnet",
    ),
    (
        {"ipam": {"subnet": "10.0.0.12/24"}},
        {},
        INVALID_CONFIG,
        "invalid range set 0: Network has host bits set. For a subnet mask of length 24 the network address is 10.0.0.0",
    ),
    (
        {"ipam": {"subnet": "10.0.0.0/31"}},
        {},
        INVALID_CONFIG,
        "invalid range set 0: Network 10.0.0.0/31 too small to allocate from",
    ),
    (
        {"ipam": {"ranges": [[{"subnet": "10.1.0.0/22"}, {"subnet": "10.1.2.0/24"}]]}},
        {},
        INVALID_CONFIG,
        "invalid range set 0: subnets 10.1.0.1-10.1.3.254 and 10.1.2.1-10.1.2.254 overlap",
    ),
    (
        {"ipam": {"ranges": [[{"subnet": "10.1.0.0/24"}, {"subnet": "2001:db8::/64"}]]}},
        {},
        INVALID_CONFIG,
        "invalid range set 0: mixed address families",
    ),
    (
        {"ipam": {"ranges": [[{"subnet": "10.1.0.0/22"}], [{"subnet": "10.1.2.0/24"}]]}},
        {},
        INVALID_CONFIG,
        "range set 0 overlaps with 1",
    ),
    (
        {"cniVersion": "0.2.0", "ipam": {"ranges": [[{"subnet": "10.1.0.0/24"}], [{"subnet": "10.2.0.0/24"}]]}},
        {},
        INVALID_CONFIG,
        "CNI version 0.2.0 does not support more than 1 address per family",
    ),
    ({"ipam": {"subnet": "10.0.0.0/24"}}, {"IP": "10.0.0.x"}, INVALID_ENV, "invalid IP address 10.0.0.x"),
    ({"ipam": {"subnet": "10.0.0.0/24"}}, {"FOO": "1"}, INVALID_ENV, "ARGS: unknown args ['FOO']"),
]


@pytest.mark.parametrize("conf,args,code,fragment", BAD, ids=[b[3][:40] for b in BAD])
def test_bad_input(conf, args, code, fragment):
    with pytest.raises(CniError) as err:
        load(conf, args, conf.get("cniVersion", "1.0.0"))
    assert err.value.code == code
    assert fragment in err.value.msg
    assert err.value.details, "every error says how to fix it"


def test_ignore_unknown_args():
    cfg = load({"ipam": {"subnet": "10.0.0.0/24"}}, {"K8S_POD_NAME": "p", "IgnoreUnknown": "1"})
    assert cfg.requested == ()


GOOD = [
    {
        "ipam": {
            "type": "host-local",
            "subnet": "10.0.0.0/24",
            "rangeStart": "",
            "gateway": "10.0.0.1",
            "routes": [{"dst": "0.0.0.0/0", "gw": "10.0.0.1", "mtu": 1400}],
            "dataDir": "/d",
            "resolvConf": "/r",
        }
    },
    {
        "ipam": {"ranges": [[{"subnet": "10.1.2.0/24", "rangeStart": "10.1.2.9"}], [{"subnet": "2001:db8::/64"}]]},
        "args": {"cni": {"ips": ["10.1.2.10/24"]}},
        "runtimeConfig": {"ips": ["2001:db8::5"], "ipRanges": []},
    },
]


@pytest.mark.parametrize("conf", GOOD)
def test_schema_accepts_what_the_parser_accepts(conf):
    """The schema only explains failures; it must never reject a configuration the parser takes."""
    load(conf)
    with open(config.SCHEMA_PATH) as f:
        validate(config.normalize(conf), json.load(f))


def test_resolv_conf_two_nameservers_and_comment():
    dns = parse_resolv("nameserver 192.0.2.0\nnameserver 192.0.2.1\n; nameserver 192.0.2.9\n#x y\nsearch\n")
    assert dns.nameservers == ["192.0.2.0", "192.0.2.1"] and dns.search == []


def test_resolv_conf_all_fields():
    dns = parse_resolv(
        "nameserver 192.0.2.0\ndomain example.com\nsearch example.net example.org\n"
        "search example.gov\noptions one two three\noptions four\n"
    )
    assert dns.to_dict() == {
        "nameservers": ["192.0.2.0"],
        "domain": "example.com",
        "search": ["example.net", "example.org", "example.gov"],
        "options": ["one", "two", "three", "four"],
    }
