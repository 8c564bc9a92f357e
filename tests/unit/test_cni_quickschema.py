"""quickschema must agree with jsonschema whenever it gives an answer (it decides the happy path)."""

import json
from pathlib import Path

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plugins.cni import config
from plugins.cni.quickschema import _IGNORED, _KEYWORDS, is_valid
from plugins.win_bridge.flavor import FLAVOR as BRIDGE
from plugins.win_overlay.flavor import FLAVOR as OVERLAY

ROOT = Path(__file__).resolve().parents[2] / "plugins"
SCHEMAS = {
    "win-bridge": BRIDGE.schema(),
    "win-overlay": OVERLAY.schema(),
    "flannel": json.loads((ROOT / "flannel" / "schema.json").read_text()),
    "host-local": json.loads((ROOT / "ipam_host_local" / "schema.json").read_text()),
}

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 70000),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(
        [
            "",
            "10.0.0.0/24",
            "10.0.0.1",
            "fd00::/64",
            "10.0.0.0/33",
            "0E-2A",
            "zz",
            "host-local",
            "EndpointPolicy",
            "tcp",
            "x",
        ]
    ),
)
keys = st.sampled_from(
    [
        "name",
        "type",
        "apiVersion",
        "policies",
        "ipam",
        "dns",
        "runtimeConfig",
        "loopbackDSR",
        "ipMasq",
        "ipMasqNetwork",
        "endpointMacPrefix",
        "subnet",
        "ranges",
        "routes",
        "dst",
        "gw",
        "value",
        "Type",
        "portMappings",
        "hostPort",
        "containerPort",
        "protocol",
        "nameservers",
        "search",
        "delegate",
        "subnetFile",
        "dataDir",
        "rangeStart",
        "gateway",
        "servers",
        "Settings",
    ]
)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(keys, inner, max_size=5)),
    max_leaves=20,
)


def reference_valid(doc, schema) -> bool:
    cls = jsonschema.validators.validator_for(schema)
    return not any(cls(schema, format_checker=config._format_checker(cls)).iter_errors(doc))


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SCHEMAS))
@settings(max_examples=150, deadline=None)
@given(doc=st.dictionaries(keys, json_values, max_size=6))
def test_agrees_with_jsonschema(name, doc):
    schema = SCHEMAS[name]
    quick = is_valid(doc, schema)
    if quick is not None:
        assert quick == reference_valid(doc, schema)


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_our_schemas_are_fully_understood(name):
    """Every keyword our schemas use is handled, so a valid config never imports jsonschema
    (an unhandled ``maxLength`` once cost every host-local DEL ~60 ms of jsonschema imports)."""
    assert is_valid({"name": "n", "ipam": {"type": "host-local", "subnet": "10.0.0.0/24"}}, SCHEMAS[name]) is True
    assert set(_keywords(SCHEMAS[name])) <= set(_KEYWORDS) | _IGNORED


def _keywords(schema):
    """Every keyword in a schema (the names under properties/$defs are not keywords)."""
    if isinstance(schema, list):
        for sub in schema:
            yield from _keywords(sub)
    elif isinstance(schema, dict):
        for key, sub in schema.items():
            yield key
            yield from _keywords(list(sub.values()) if key in ("properties", "$defs") else sub)


@pytest.mark.parametrize(
    "name,doc",
    [
        (
            "host-local",
            {"ipam": {"type": "host-local", "subnet": "10.244.4.0/24", "rangeStart": "10.244.4.3", "dataDir": "/d"}},
        ),
        ("win-bridge", {"name": "cbr0", "network": {"subnet": ["10.244.4.0/24", "fd00::/64"]}}),
    ],
)
def test_the_configs_we_send_ourselves_are_decided_quickly(name, doc):
    assert is_valid(doc, SCHEMAS[name]) is True


def test_unknown_keywords_defer_to_jsonschema():
    assert is_valid({"a": 1}, {"type": "object", "propertyNames": {"pattern": "^a$"}}) is None
    assert is_valid("x", {"format": "email"}) is None


def test_json_types_are_not_python_types():
    assert is_valid(True, {"type": "integer"}) is False
    assert is_valid(1, {"enum": [True]}) is False
    assert is_valid(1.5, {"type": "integer"}) is False
