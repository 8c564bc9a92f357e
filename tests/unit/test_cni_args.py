"""CNI_ARGS: the K=V;K=V convention and IgnoreUnknown, as libcni's LoadArgs reads them."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from plugins.cni.cniargs import check_known, ignore_unknown, parse_cni_args
from plugins.cni.errors import INVALID_ENV, CniError

KUBELET = "IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-0;K8S_POD_INFRA_CONTAINER_ID=abc"


def test_kubelet_args_parse_into_a_dict():
    assert parse_cni_args(KUBELET) == {
        "IgnoreUnknown": "1",
        "K8S_POD_NAMESPACE": "default",
        "K8S_POD_NAME": "web-0",
        "K8S_POD_INFRA_CONTAINER_ID": "abc",
    }


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("", {}),
        (";;", {}),
        ("A=1;A=2", {"A": "2"}),
        ("IP=10.0.0.5/24;", {"IP": "10.0.0.5/24"}),
        ("A=", {"A": ""}),
        ("A=b=c", {"A": "b=c"}),
    ],
)
def test_edge_cases(raw, expected):
    assert parse_cni_args(raw) == expected


@pytest.mark.parametrize("raw", ["A", "A=1;B", "=1", "A=1;=2"])
def test_pair_without_key_or_equals_is_code_4(raw):
    with pytest.raises(CniError) as info:
        parse_cni_args(raw)
    assert info.value.code == INVALID_ENV and "invalid pair" in info.value.msg


@pytest.mark.parametrize(
    "value, expected", [("1", True), ("true", True), ("True", True), ("0", False), ("false", False), ("", False)]
)
def test_ignore_unknown_values(value, expected):
    assert ignore_unknown({"IgnoreUnknown": value}) is expected


def test_unknown_keys_are_rejected_unless_ignore_unknown():
    pairs = {"K8S_POD_NAME": "p", "FOO": "x"}
    with pytest.raises(CniError) as info:
        check_known(pairs, ["K8S_POD_NAME"])
    assert info.value.code == INVALID_ENV and "FOO" in info.value.msg
    check_known(dict(pairs, IgnoreUnknown="1"), ["K8S_POD_NAME"])
    check_known(pairs, ["K8S_POD_NAME", "FOO"])


@given(st.text())
def test_arbitrary_text_parses_or_is_code_4(raw):
    try:
        pairs = parse_cni_args(raw)
    except CniError as err:
        assert err.code == INVALID_ENV
    else:
        assert all(k and ";" not in k and "=" not in k for k in pairs)


_KEY = st.text(st.characters(blacklist_characters=";=", blacklist_categories=("Cs",)), min_size=1)
_VALUE = st.text(st.characters(blacklist_characters=";", blacklist_categories=("Cs",)))


@given(st.dictionaries(_KEY, _VALUE))
def test_joined_pairs_round_trip(pairs):
    assert parse_cni_args(";".join(f"{k}={v}" for k, v in pairs.items())) == pairs
