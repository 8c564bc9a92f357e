"""basics.jsontext is json.loads / json.dumps without the json package's import cost: held equal
to json on any value, any text, every option the plugins use."""

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from basics import jsontext

SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=25,
)
OPTIONS = st.fixed_dictionaries(
    {},
    optional={
        "indent": st.sampled_from([None, 0, 2, 4]),
        "sort_keys": st.booleans(),
        "ensure_ascii": st.booleans(),
        "separators": st.sampled_from([(",", ":"), (", ", ": ")]),
    },
)


@given(VALUES, OPTIONS)
def test_dumps_writes_what_json_writes(value, options):
    assert jsontext.dumps(value, **options) == json.dumps(value, **options)


@given(VALUES, OPTIONS, st.sampled_from(["", " ", "\n\t ", "\r\n"]))
def test_loads_reads_what_json_reads(value, options, space):
    text = space + json.dumps(value, **options) + space
    assert _without_json(jsontext.loads, text) == json.loads(text)
    assert _without_json(jsontext.loads, text.encode()) == json.loads(text.encode())


def _without_json(function, *args):
    """Valid text never reaches the json fallback: with json unimportable it still reads."""
    saved = sys.modules.get("json")
    sys.modules["json"] = None
    try:
        return function(*args)
    finally:
        sys.modules["json"] = saved


@settings(max_examples=300)
@given(st.text(alphabet='{}[]":,. \n-+eE0123456789aeflnrstux\\\x00\u00e9', max_size=24))
def test_any_text_is_accepted_or_refused_exactly_as_json_does(text):
    try:
        expected = json.loads(text)
    except (ValueError, RecursionError) as exc:
        with pytest.raises(ValueError) as got:  # too deep is bad input like any other
            jsontext.loads(text)
        assert str(got.value) == str(exc)  # json's own message, position included
    else:
        got = jsontext.loads(text)
        assert got == expected or (isinstance(got, float) and math.isnan(got) and math.isnan(expected))


def test_json_nested_deeper_than_the_stack_is_a_value_error_with_jsons_message():
    """Every caller catches ValueError for bad JSON; absurd nesting is one more kind of it."""
    text = "[" * 100_000 + "]" * 100_000
    with pytest.raises(RecursionError) as expected:
        json.loads(text)
    with pytest.raises(ValueError) as got:
        jsontext.loads(text)
    assert str(got.value) == str(expected.value)


@pytest.mark.parametrize("raw", [b'\xef\xbb\xbf{"a": 1}', '{"a": 1}'.encode("utf-16"), "[1]".encode("utf-32-le")])
def test_bytes_json_reads_beyond_utf8_still_read(raw):
    """A BOM or UTF-16/32 is json's business: the C path refuses it and json reads it."""
    assert jsontext.loads(raw) == json.loads(raw)


def test_parse_constant_is_honoured_on_the_fast_path():
    def refuse(token):
        raise ValueError(f"invalid JSON token {token}")

    with pytest.raises(ValueError, match="invalid JSON token NaN"):
        jsontext.loads('{"a": NaN}', parse_constant=refuse)
    assert math.isinf(jsontext.loads("[-Infinity]")[0])


def test_default_and_unserializable_values():
    class Odd:
        def __str__(self):
            return "odd"

    assert jsontext.dumps({"a": Odd()}, default=str) == json.dumps({"a": Odd()}, default=str)
    assert jsontext.dumps([Odd()], default=lambda o: {"x": [1]}, indent=4) == json.dumps(
        [Odd()], default=lambda o: {"x": [1]}, indent=4
    )
    for kwargs in ({}, {"indent": 4}):
        with pytest.raises(TypeError, match="Object of type Odd is not JSON serializable"):
            jsontext.dumps({"a": Odd()}, **kwargs)
    assert jsontext.dumps({1: 2, None: 3, False: 4, 1.5: 5}, indent=2) == json.dumps(
        {1: 2, None: 3, False: 4, 1.5: 5}, indent=2
    )


def test_importing_it_and_reading_valid_json_imports_no_json_package():
    probe = (
        "import sys; sys.path.insert(0, sys.argv[1]); from basics import jsontext; "
        "jsontext.dumps(jsontext.loads('{\"a\": [1, 2.5, null]}'), indent=4); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('json', 're', 'enum')))"
    )
    proc = subprocess.run(
        [sys.executable, "-I", "-S", "-c", probe, str(Path(__file__).resolve().parents[2])],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def _depth(value) -> int:
    """How many containers deep ``value`` nests (a scalar: 0)."""
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(_depth, value), default=0)
    return 0


@settings(max_examples=300, deadline=None)
@given(VALUES, st.integers(1, 6), st.integers(1, 60))
def test_loads_bounded_reads_what_loads_reads_within_its_caps_and_refuses_the_rest(value, depth, values):
    """Within both caps it is ``loads``; past the depth after parsing, past the count before."""
    text = jsontext.dumps(value).encode()
    if jsontext.most_values(text) > values:
        with pytest.raises(ValueError, match=f"over the cap of {values}"):
            jsontext.loads_bounded(text, depth, values)
    elif _depth(value) > depth:
        with pytest.raises(ValueError, match=f"nested deeper than {depth}"):
            jsontext.loads_bounded(text, depth, values)
    else:
        assert jsontext.loads_bounded(text, depth, values) == jsontext.loads(text)


def _count(value) -> int:
    if isinstance(value, dict):
        return 1 + sum(map(_count, value.values()))
    if isinstance(value, list):
        return 1 + sum(map(_count, value))
    return 1


@settings(max_examples=300, deadline=None)
@given(VALUES, OPTIONS)
def test_most_values_is_never_fewer_than_the_values_parsed(value, options):
    """The count taken before parsing bounds what parsing makes, however the text is laid out."""
    assert jsontext.most_values(jsontext.dumps(value, **options).encode()) >= _count(value)
