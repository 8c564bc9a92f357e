"""plugins.winnet.acls: the operator's rule form → HNS ACL policies on both APIs (pure)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from libhns.client import Features
from plugins.cni.config import validate
from plugins.cni.errors import CniError
from plugins.cni.runtimeconfig import PortMapping
from plugins.win_bridge.flavor import FLAVOR
from plugins.winnet import acls
from plugins.winnet.policies import V1, V2


def render(rule: dict, form: object) -> dict:
    validate({"name": "cbr0", "acls": [rule]}, FLAVOR.schema())
    [parsed] = acls.parse([rule])
    return parsed.render(form)


FULL = {
    "action": "block",
    "direction": "out",
    "protocol": "tcp",
    "localPorts": [80, "8000-8080"],
    "remotePorts": "443",
    "localAddresses": "10.244.4.0/24",
    "remoteAddresses": ["10.96.0.10", "10.96.0.0/12"],
    "priority": 200,
    "type": "host",
    "id": "rule-1",
}
ENCODED = {
    "Id": "rule-1",
    "Protocols": "6",
    "Action": "Block",
    "Direction": "Out",
    "LocalAddresses": "10.244.4.0/24",
    "RemoteAddresses": "10.96.0.10,10.96.0.0/12",
    "LocalPorts": "80,8000-8080",
    "RemotePorts": "443",
    "RuleType": "Host",
    "Priority": 200,
}


def test_every_field_in_the_v2_settings_form():
    assert render(FULL, V2) == {"Type": "ACL", "Settings": ENCODED}


def test_every_field_in_the_v1_flat_form():
    assert render(FULL, V1) == {"Type": "ACL", **ENCODED}


@pytest.mark.parametrize(
    "field,value,key,encoded",
    [
        ("action", "allow", "Action", "Allow"),
        ("action", "Block", "Action", "Block"),
        ("direction", "in", "Direction", "In"),
        ("direction", "out", "Direction", "Out"),
        ("type", "switch", "RuleType", "Switch"),
        ("type", "host", "RuleType", "Host"),
        ("protocol", "udp", "Protocols", "17"),
        ("protocol", "icmpv4", "Protocols", "1"),
        ("protocol", "icmpv6", "Protocols", "58"),
        ("protocol", 47, "Protocols", "47"),
        ("protocol", "252", "Protocols", "252"),
    ],
)
@pytest.mark.parametrize("form", [V1, V2])
def test_each_encoding(form, field, value, key, encoded):
    rule = {"action": "allow", "direction": "in", field: value}
    doc = render(rule, form)
    assert (doc["Settings"] if form == V2 else doc)[key] == encoded


def test_any_protocol_and_the_defaults():
    assert render({"action": "allow", "direction": "in", "protocol": "any"}, V2) == {
        "Type": "ACL",
        "Settings": {"Action": "Allow", "Direction": "In", "RuleType": "Switch"},
    }


@pytest.mark.parametrize("form", [V1, V2])
def test_the_rendering_is_what_the_other_api_translation_gives(form):
    """A rule rendered for one API and translated by libhns equals the rule rendered for the other."""
    other = V1 if form == V2 else V2
    assert other.fit(render(FULL, form)) == render(FULL, other)


BAD = [  # (rule, field named in the message)
    ({"action": "allow", "direction": "in", "protocol": "tcp", "localPorts": 70000}, "acls[0].localPorts"),
    ({"action": "allow", "direction": "in", "protocol": "tcp", "localPorts": "9000-8000"}, "acls[0].localPorts"),
    ({"action": "allow", "direction": "in", "protocol": "icmpv4", "localPorts": 80}, "acls[0].localPorts"),
    ({"action": "allow", "direction": "in", "remotePorts": [53]}, "acls[0].remotePorts"),
    (
        {"action": "allow", "direction": "in", "protocol": "icmpv4", "remoteAddresses": "fd00::/64"},
        "acls[0].remoteAddresses",
    ),
    (
        {"action": "allow", "direction": "in", "protocol": "icmpv6", "localAddresses": ["10.0.0.1"]},
        "acls[0].localAddresses",
    ),
    (
        {"action": "allow", "direction": "in", "localAddresses": "10.0.0.1", "remoteAddresses": "fd00::1"},
        "acls[0].localAddresses",
    ),
    ({"action": "allow", "direction": "in", "remoteAddresses": "10.0.0.300"}, "acls[0].remoteAddresses"),
    ({"action": "allow", "direction": "in", "priority": 99}, "acls[0].priority"),
    ({"action": "allow", "direction": "in", "priority": 65501}, "acls[0].priority"),
    ({"action": "permit", "direction": "in"}, "acls[0].action"),
    ({"action": "allow", "direction": "sideways"}, "acls[0].direction"),
    ({"action": "allow"}, "acls[0]"),
    ({"action": "allow", "direction": "in", "protocol": "sctp"}, "acls[0].protocol"),
    ({"action": "allow", "direction": "in", "protocol": 256}, "acls[0].protocol"),
    ({"action": "allow", "direction": "in", "ports": 80}, "acls[0]"),
    ({"action": "allow", "direction": "in", "type": "vfp"}, "acls[0].type"),
]


@pytest.mark.parametrize("rule,field", BAD, ids=[f"{i}-{f}" for i, (_, f) in enumerate(BAD)])
def test_bad_rules_are_code_7_naming_the_field(rule, field):
    with pytest.raises(CniError) as exc:
        render(rule, V2)
    assert exc.value.code == 7 and exc.value.msg.startswith(field), exc.value.msg


def test_port_mapping_acls_allow_in_to_each_container_port():
    rules = acls.port_mapping_rules([PortMapping(8080, 80, "tcp"), PortMapping(5353, 53, "UDP")])
    assert [r.render(V2) for r in rules] == [
        {
            "Type": "ACL",
            "Settings": {
                "Protocols": "6",
                "Action": "Allow",
                "Direction": "In",
                "LocalPorts": "80",
                "RuleType": "Switch",
                "Priority": 1000,
            },
        },
        {
            "Type": "ACL",
            "Settings": {
                "Protocols": "17",
                "Action": "Allow",
                "Direction": "In",
                "LocalPorts": "53",
                "RuleType": "Switch",
                "Priority": 1000,
            },
        },
    ]
    assert rules[0].render(V1) == {
        "Type": "ACL",
        "Protocols": "6",
        "Action": "Allow",
        "Direction": "In",
        "LocalPorts": "80",
        "RuleType": "Switch",
        "Priority": 1000,
    }


@pytest.mark.parametrize(
    "rule,version,gap",
    [
        ({"protocol": "tcp", "localPorts": "8000-8080"}, (7, 1), "port ranges"),
        ({"remoteAddresses": ["10.0.0.1", "10.0.0.2"]}, (7, 1), "address lists"),
        ({"id": "r1"}, (7, 1), "rule IDs"),
        ({"protocol": 252}, (10, 4), "protocol 252"),
    ],
)
def test_features_newer_hns_has_are_a_clear_error_on_an_older_one(rule, version, gap):
    [parsed] = acls.parse([{"action": "allow", "direction": "in", **rule}])
    old = Features.for_version(version)
    [message] = acls.unsupported([parsed], lambda name: getattr(old, name))
    assert gap in message
    assert acls.unsupported([parsed], lambda name: getattr(Features.for_version((15, 0)), name)) == []


ports = st.integers(1, 65535)


@given(st.lists(st.one_of(ports, st.tuples(ports, ports).map(lambda t: f"{min(t)}-{max(t)}")), min_size=1, max_size=5))
def test_any_valid_port_list_renders_as_the_comma_string_hns_takes(items):
    doc = render({"action": "allow", "direction": "in", "protocol": "udp", "remotePorts": items}, V2)
    parts = doc["Settings"]["RemotePorts"].split(",")
    assert len(parts) == len(items)
    for part, item in zip(parts, items):
        low, _, high = part.partition("-")
        want = str(item).split("-")
        assert int(low) == int(want[0]) and int(high or low) == int(want[-1])


def test_the_configuration_references_examples_are_what_the_code_renders():
    """docs/CONFIGURATION.md's two worked examples are checked against the code, not kept by hand."""
    import json
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "CONFIGURATION.md").read_text()
    section = text[text.index("### ACLs") : text.index("## win-overlay")]
    blocks = re.findall(r"```json\n(.*?)```", section, re.S)
    assert len(blocks) == 6
    for config, v2, v1 in (blocks[0:3], blocks[3:6]):
        rules = acls.parse(json.loads("{" + config + "}")["acls"])
        assert [json.loads(line) for line in v2.splitlines()] == [r.render(V2) for r in rules]
        assert [json.loads(line) for line in v1.splitlines()] == [r.render(V1) for r in rules]
