"""Network config: decoding, name/version checks, Go-style keys, schema errors an operator can act on."""

import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from basics.jsonci import get_ci
from plugins.cni import config, log, runtimeconfig
from plugins.cni.errors import DECODE_FAILURE, INCOMPATIBLE_VERSION, INVALID_CONFIG, CniError


def cni_error(fn, *args):
    with pytest.raises(CniError) as info:
        fn(*args)
    return info.value


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"{",
        b"nope",
        b"\xff\xfe\x00",
        b"[" * 100_000,
        b'{"mtu": NaN}',
        b'{"prevResult": {"ips": [{"interface": Infinity}]}}',
    ],
)
def test_not_json_is_code_6(data):
    err = cni_error(config.decode, data)
    assert err.code == DECODE_FAILURE and err.msg.startswith("error unmarshall network config")


@pytest.mark.parametrize("data", [b"[]", b"null", b"1", b'"s"'])
def test_json_that_is_not_an_object_is_code_6(data):
    assert cni_error(config.decode, data).code == DECODE_FAILURE


def test_utf8_bom_is_accepted():
    assert config.decode(b'\xef\xbb\xbf{"name": "n"}') == {"name": "n"}


@pytest.mark.parametrize(
    "conf, msg",
    [
        ({}, "missing network name"),
        ({"name": ""}, "missing network name"),
        ({"name": "-x"}, "invalid characters"),
        ({"name": "a b"}, "invalid characters"),
        ({"name": "net\n"}, "invalid characters"),
        ({"name": 5}, "invalid characters"),
    ],
)
def test_bad_network_name_is_code_7(conf, msg):
    err = cni_error(config.check_name, conf)
    assert err.code == INVALID_CONFIG and msg in err.msg


def test_good_network_name():
    assert config.check_name({"name": "cbr0.l2-bridge_1"}) == "cbr0.l2-bridge_1"


@pytest.mark.parametrize(
    "conf, expected",
    [({}, "0.1.0"), ({"cniVersion": ""}, "0.1.0"), ({"cniVersion": None}, "0.1.0"), ({"cniVersion": "0.3.1"}, "0.3.1")],
)
def test_cni_version(conf, expected):
    assert config.cni_version(conf) == expected


@pytest.mark.parametrize("value", ["0.5.0", "1.1", "v1.0.0"])  # not a string: tests/unit/test_operator_small.py
def test_unsupported_version_lists_the_supported_ones(value):
    err = cni_error(config.cni_version, {"cniVersion": value})
    assert err.code == INCOMPATIBLE_VERSION and err.msg == "incompatible CNI versions"
    assert '["0.1.0" "0.2.0" "0.3.0" "0.3.1" "0.4.0" "1.0.0" "1.1.0"]' in err.details


def test_get_ci_prefers_the_exact_key_then_any_case():
    assert get_ci({"ApiVersion": 2, "apiVersion": 1}, "apiVersion") == 1
    assert get_ci({"ApiVersion": 2}, "apiVersion") == 2
    assert get_ci({}, "apiVersion", 1) == 1


def test_policies_are_read_with_go_style_keys():
    conf = {
        "Policies": [{"Name": "EndpointPolicy", "Value": {"Type": "OutBoundNAT"}}, {"name": "x", "value": 1}, "junk"]
    }
    assert list(config.iter_policies(conf)) == [("EndpointPolicy", {"Type": "OutBoundNAT"}), ("x", 1)]


# ---------------------------------------------------------------- schema validation

SCHEMA = {
    "type": "object",
    "required": ["name"],
    "properties": {
        "name": {"type": "string"},
        "mtu": {"type": "integer", "minimum": 576},
        "ipam": {
            "type": "object",
            "properties": {
                "ranges": {
                    "type": "array",
                    "items": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["subnet"],
                            "properties": {
                                "subnet": {
                                    "type": "string",
                                    "format": "cidr",
                                    "description": "a CIDR such as 10.244.1.0/24",
                                },
                                "gateway": {"type": "string", "format": "ip"},
                            },
                        },
                    },
                }
            },
        },
    },
}


@pytest.mark.parametrize(
    "conf, msg",
    [
        (
            {"name": "n", "ipam": {"ranges": [[{"subnet": "10.0.0.0/33"}]]}},
            'ipam.ranges[0][0].subnet: "10.0.0.0/33" is not a valid CIDR',
        ),
        (
            {"name": "n", "ipam": {"ranges": [[{"subnet": "10.0.0.0"}]]}},
            'ipam.ranges[0][0].subnet: "10.0.0.0" is not a valid CIDR',
        ),
        (
            {"name": "n", "ipam": {"ranges": [[{"subnet": "10.0.0.0/24", "gateway": "10.0.0"}]]}},
            'ipam.ranges[0][0].gateway: "10.0.0" is not a valid IP address',
        ),
        ({"name": "n", "ipam": {"ranges": [[{}]]}}, "ipam.ranges[0][0]: missing required field 'subnet'"),
        ({}, "(config): missing required field 'name'"),
        ({"name": "n", "mtu": 100}, "mtu: 100 is invalid"),
        ({"name": "n", "ipam": {"ranges": 5}}, "ipam.ranges: 5 is invalid"),
    ],
)
def test_schema_error_names_path_and_value(conf, msg):
    err = cni_error(config.validate, conf, SCHEMA)
    assert err.code == INVALID_CONFIG and err.msg.startswith(msg)


def test_schema_error_carries_the_fields_description_as_the_fix():
    err = cni_error(config.validate, {"name": "n", "ipam": {"ranges": [[{"subnet": "x/1"}]]}}, SCHEMA)
    assert err.details == "a CIDR such as 10.244.1.0/24"


def test_valid_config_passes():
    config.validate({"name": "n", "ipam": {"ranges": [[{"subnet": "fd00::/64", "gateway": "fd00::1"}]]}}, SCHEMA)


# ---------------------------------------------------------------- runtimeConfig and GC


def test_runtime_config_typed_view():
    rc = runtimeconfig.RuntimeConfig.from_conf(
        {
            "RuntimeConfig": {
                "portMappings": [
                    {"hostPort": "8080", "containerPort": 80},
                    {"hostPort": 53, "containerPort": 53, "protocol": "udp", "hostIP": "10.0.0.1"},
                ],
                "dns": {"servers": ["10.96.0.10", ""], "searches": ["svc.local"]},
                "ips": ["10.0.0.9/24"],
                "mac": "00-11-22-33-44-55",
            }
        }
    )
    assert rc.port_mappings == (
        runtimeconfig.PortMapping(8080, 80),
        runtimeconfig.PortMapping(53, 53, "udp", "10.0.0.1"),
    )
    assert rc.dns == runtimeconfig.RuntimeDNS(servers=("10.96.0.10",), searches=("svc.local",))
    assert (rc.ips, rc.mac) == (("10.0.0.9/24",), "00-11-22-33-44-55")


def test_absent_runtime_config_is_empty():
    assert runtimeconfig.RuntimeConfig.from_conf({}) == runtimeconfig.RuntimeConfig()


@pytest.mark.parametrize(
    "rc, words",
    [
        ("x", "runtimeConfig"),
        ({"portMappings": [{"hostPort": 1}]}, "portMappings[0]"),
        ({"portMappings": [{"hostPort": "a", "containerPort": 1}]}, "portMappings[0]"),
        ({"portMappings": 5}, "runtimeConfig.portMappings"),
        ({"ips": 5}, "runtimeConfig.ips"),
        ({"ipRanges": "10.0.0.0/24"}, "runtimeConfig.ipRanges"),
        ({"dns": ["10.0.0.1"]}, "runtimeConfig.dns"),
        ({"dns": {"servers": "10.0.0.1"}}, "dns.servers"),
    ],
)
def test_bad_runtime_config_is_code_7_naming_the_field(rc, words):
    err = cni_error(runtimeconfig.RuntimeConfig.from_conf, {"runtimeConfig": rc})
    assert err.code == INVALID_CONFIG and words in err.msg


def test_valid_attachments():
    conf = {
        "cni.dev/valid-attachments": [{"containerID": "a", "ifname": "eth0"}, {"containerID": "b", "ifname": "eth0"}]
    }
    assert config.valid_attachments(conf) == {("a", "eth0"), ("b", "eth0")}
    assert config.valid_attachments({"cni.dev/valid-attachments": []}) == set()


def test_absent_valid_attachments_is_none_so_gc_releases_nothing():
    assert config.valid_attachments({}) is None


@pytest.mark.parametrize("raw", [{}, [{"containerID": "a"}], ["a"]])
def test_bad_valid_attachments_is_code_7(raw):
    assert cni_error(config.valid_attachments, {"cni.dev/valid-attachments": raw}).code == INVALID_CONFIG


_TOY = {
    "type": "object",
    "required": ["name", "store"],
    "properties": {
        "name": {"type": "string"},
        "extra": {"type": "integer"},
        "store": {
            "type": "object",
            "properties": {"dir": {"type": "string"}, "ranges": {"type": "array", "items": {"type": "integer"}}},
        },
        "nested": {"type": "object", "properties": {"n": {"type": "integer"}}},
    },
}
NEEDS = {"name": "the endpoint", "store.dir": "the address store"}


def teardown(command, doc):
    """validate_for's result and the warnings it wrote."""
    err = io.StringIO()
    with log.scope():
        log.configure("test", stderr=err)
        out = config.validate_for(command, doc, _TOY, NEEDS)
    return out, err.getvalue()


@pytest.mark.parametrize("command", ["ADD", "CHECK", "STATUS"])
def test_validate_for_setup_commands_is_the_whole_schema(command):
    err = cni_error(config.validate_for, command, {"name": "n", "store": {}, "extra": "x"}, _TOY, NEEDS)
    assert err.code == INVALID_CONFIG and err.msg.startswith("extra: ")


@pytest.mark.parametrize("command", ["DEL", "GC"])
def test_validate_for_teardown_drops_what_it_does_not_need_with_a_warning_naming_each_field(command):
    doc = {"name": "n", "store": {"dir": "/d", "ranges": [1, "x"]}, "extra": "x", "nested": {"n": "y"}}
    out, warnings = teardown(command, doc)
    assert out == {"name": "n", "store": {"dir": "/d"}}  # cut below the needed field's holder only
    assert doc["extra"] == "x" and doc["store"]["ranges"] == [1, "x"], "the input is untouched"
    lines = warnings.splitlines()
    assert len(lines) == 3 and all(f"warning: {command} ignores" in line for line in lines)
    for field in ('extra: "x"', "store.ranges[1]", "nested.n"):
        assert field in warnings
    valid = {"name": "n", "store": {}}
    assert config.validate_for(command, valid, _TOY, NEEDS) is valid


@pytest.mark.parametrize(
    "doc,field,what",
    [
        ({"name": "n"}, "missing required field 'store'", "the address store"),  # holds a needed field
        ({"name": "n", "store": []}, "store:", "the address store"),
        ({"name": "n", "store": {"dir": 5}}, "store.dir", "the address store"),
        ({"name": 3, "store": {}, "extra": "x"}, "name", "the endpoint"),
    ],
)
def test_validate_for_teardown_fails_only_when_a_needed_field_is_unusable(doc, field, what):
    err = cni_error(config.validate_for, "DEL", doc, _TOY, NEEDS)
    assert err.code == INVALID_CONFIG and err.msg.startswith(f"DEL cannot identify {what}: ") and field in err.msg


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=200, deadline=None)
@given(
    junk=st.dictionaries(st.sampled_from(["extra", "nested", "other"]), _JSON, max_size=3),
    store_junk=st.dictionaries(st.sampled_from(["ranges", "other"]), _JSON, max_size=2),
)
def test_validate_for_teardown_keeps_what_it_needs_and_returns_a_valid_config(junk, store_junk):
    out, _ = teardown("DEL", {**junk, "name": "n", "store": {**store_junk, "dir": "/d"}})
    config.validate(out, _TOY)
    assert out["name"] == "n" and out["store"]["dir"] == "/d"


@pytest.mark.parametrize(
    "text, where",
    [
        ('{"cniVersion": "1.0.0", "name": "n", "ipam": {"dataDir": "/var/lib/cni\\u0000x"}}', "ipam.dataDir"),
        (
            '{"cniVersion": "1.0.0", "name": "n", "delegate": {"dns": {"search": ["a", "b\\u0000"]}}}',
            "delegate.dns.search[1]",
        ),
        ('{"cniVersion": "1.0.0", "name": "n", "a\\u0000b": 1}', "a\\u0000b"),
        ('{"cniVersion": "1.0.0", "name": "n", "logFile": "debug\\u0000.log"}', "logFile"),
    ],
)
def test_a_nul_anywhere_in_the_config_is_code_7_naming_where(text, where):
    """A path with a NUL makes every file call fail with ValueError (a traceback, code 999): refused at decode."""
    with pytest.raises(CniError) as info:
        config.decode(text.encode())
    assert info.value.code == INVALID_CONFIG and info.value.msg == f"{where} holds a NUL character"


def test_an_escaped_backslash_before_u0000_is_not_a_nul():
    doc = config.decode(b'{"cniVersion": "1.0.0", "name": "n", "path": "C:\\\\u0000"}')
    assert doc["path"] == "C:\\u0000"
