"""libhns.errors: the HRESULT table, classification, and the exact message format."""

from __future__ import annotations

import json
import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

from libhns import errors
from libhns.errors import (
    AccessDenied,
    AlreadyExists,
    HnsError,
    InvalidArgument,
    InvalidPolicy,
    NotFound,
    from_hresult,
    from_v1_error,
)


def test_every_hcn_code_is_named_and_explained() -> None:
    for low in range(0x01, 0x38):
        hr = 0x803B0000 | low
        name, message = errors.hresult_name(hr), errors.hresult_message(hr)
        assert name and name.startswith(("HCN_E_", "GCN_E_", "HCN_INTERFACE")), hex(hr)
        assert message and message[0].isupper() and message.endswith("."), hex(hr)
    names = [errors.hresult_name(0x803B0000 | low) for low in range(0x01, 0x38)]
    assert len(set(names)) == len(names)


def test_each_named_constant_is_the_code_of_that_name() -> None:
    """The constants the simulator answers with and the client compares with are HNS's codes."""
    constants = {
        name: value
        for name, value in vars(errors).items()
        if name.isupper() and name.startswith(("S_", "E_", "ERROR_", "HCN_E_", "GCN_E_", "HCS_E_"))
    }
    assert len(constants) > 20
    for name, value in constants.items():
        assert errors.hresult_name(value) == (None if value in errors.UNLISTED else name), (name, hex(value))


@pytest.mark.parametrize(
    "hr, name",
    [
        (0x803B0001, "HCN_E_NETWORK_NOT_FOUND"),
        (0x803B0002, "HCN_E_ENDPOINT_NOT_FOUND"),
        (0x803B000D, "HCN_E_INVALID_POLICY"),
        (0x803B000E, "HCN_E_INVALID_POLICY_TYPE"),
        (0x803B0013, "HCN_E_PORT_ALREADY_EXISTS"),
        (0x803B0014, "HCN_E_ENDPOINT_ALREADY_ATTACHED"),
        (0x803B0021, "GCN_E_MODULE_NOT_FOUND"),
        (0x803B002F, "HCN_E_ADDR_INVALID_OR_RESERVED"),
        (0x803B0036, "HCN_INTERFACEPARAMETERS_ALREADY_APPLIED"),
        (0x803B0037, "HCN_E_VFP_NOT_ALLOWED"),
        (0x80070490, "ERROR_NOT_FOUND"),
        (0x80070057, "E_INVALIDARG"),
        (0x80071392, "ERROR_OBJECT_ALREADY_EXISTS"),
        (0x800700B7, "ERROR_ALREADY_EXISTS"),
        (0x80070005, "E_ACCESSDENIED"),
        (0x80004001, "E_NOTIMPL"),
        (0xC037010E, "HCS_E_SYSTEM_NOT_FOUND"),
    ],
)
def test_names(hr: int, name: str) -> None:
    assert errors.hresult_name(hr) == name
    assert errors.hresult_name(hr - (1 << 32)) == name  # a signed c_long reads the same


def test_unknown_code_has_no_name() -> None:
    assert errors.hresult_name(0x803B0038) is None and errors.hresult_message(0x803B0038) is None


@pytest.mark.parametrize(
    "hr, cls",
    [
        *[
            (hr, NotFound)
            for hr in (0x803B0001, 0x803B0002, 0x803B0005, 0x803B0007, 0x803B0008, 0x80070490, 0xC037010E)
        ],
        *[
            (hr, AlreadyExists)
            for hr in (0x803B0010, 0x803B0012, 0x803B0013, 0x803B0014, 0x803B002B, 0x80071392, 0x800700B7)
        ],
        (0x803B000D, InvalidPolicy),
        (0x803B000E, InvalidPolicy),
        (0x80070057, InvalidArgument),
        (0x80070005, AccessDenied),
        (0x803B002F, errors.InvalidAddress),
        (0x803B002C, errors.InUse),
        (0x80004001, errors.Unsupported),
        (0x803B0003, HnsError),
        (0x80004005, HnsError),
        (0x8BADF00D, HnsError),
    ],
)
def test_classification(hr: int, cls: type) -> None:
    e = from_hresult("HcnOpenNetwork", hr)
    assert type(e) is cls and e.hresult == hr


def test_message_format_exact() -> None:
    e = from_hresult("HcnCreateEndpoint", 0x803B000D)
    assert str(e) == (
        "HcnCreateEndpoint: HCN_E_INVALID_POLICY (0x803B000D): "
        "The provided policy configuration is invalid or missing parameters."
    )
    assert (e.call, e.name, e.record) == ("HcnCreateEndpoint", "HCN_E_INVALID_POLICY", None)
    assert e.message == "The provided policy configuration is invalid or missing parameters."


def test_record_that_repeats_the_meaning_adds_nothing() -> None:
    record = errors.error_record(0x803B002F)
    e = from_hresult("HcnCreateEndpoint", 0x803B002F, record)
    assert str(e) == (
        "HcnCreateEndpoint: HCN_E_ADDR_INVALID_OR_RESERVED (0x803B002F): An address provided is invalid or reserved."
    )
    assert e.record == record


def test_record_with_more_information_is_appended() -> None:
    record = '{"Success":false,"Error":"Invalid JSON document string. {{Policies[0].Foo}} ","ErrorCode":2147942487}'
    e = from_hresult("HcnCreateNetwork", 0x80070057, record)
    assert str(e) == (
        "HcnCreateNetwork: E_INVALIDARG (0x80070057): The parameter is incorrect. "
        "[Invalid JSON document string. {{Policies[0].Foo}}]"
    )


def test_s_ok_with_record_takes_the_record_code() -> None:
    e = from_hresult("HcnCreateEndpoint", 0, errors.error_record(0x803B002F))
    assert type(e) is errors.InvalidAddress and e.hresult == 0x803B002F


def test_s_ok_with_text_record_is_still_an_error() -> None:
    e = from_hresult("HcnModifyNamespace", 0, "something broke")
    assert type(e) is HnsError
    assert str(e) == "HcnModifyNamespace: 0x00000000: something broke"


def test_unknown_code_uses_record_text() -> None:
    e = from_hresult("HcnOpenNetwork", 0x8BADF00D, '{"Success":false,"Error":"Weird failure ","ErrorCode":2343432205}')
    assert str(e) == "HcnOpenNetwork: 0x8BADF00D: Weird failure"


def test_hcs_result_document_is_understood() -> None:
    result = '{"Error":-1070137074,"ErrorMessage":"No such container (abc)"}'
    e = from_hresult("HcsOpenComputeSystem", 0xC037010E, result)
    assert type(e) is NotFound
    assert str(e).endswith("does not exist. [No such container (abc)]")


def test_signed_hresult_is_masked() -> None:
    e = from_hresult("HcnOpenNetwork", 0x80070490 - (1 << 32))
    assert e.hresult == 0x80070490 and type(e) is NotFound


def test_win32_code() -> None:
    assert errors.win32_code(0x80070490) == 1168
    assert errors.win32_code(0x800700B7) == 183
    assert errors.win32_code(0x803B0013) is None
    assert errors.win32_code(0xC037010E) is None
    assert from_hresult("x", 0x80070490).win32 == 1168


def test_error_record_shape() -> None:
    record = errors.error_record(0x803B002F)
    assert record == ('{"Success":false,"Error":"An address provided is invalid or reserved. ","ErrorCode":2151350319}')
    assert json.loads(errors.error_record(0x80070490, "gone"))["Error"] == "gone "


@pytest.mark.parametrize(
    "text, cls, name",
    [
        ("Element not found.", NotFound, "ERROR_NOT_FOUND"),
        ("The endpoint was not found.", NotFound, "HCN_E_ENDPOINT_NOT_FOUND"),
        ("Network 'cbr0' not found", NotFound, None),
        ("This endpoint is already attached to the switch.", AlreadyExists, "HCN_E_ENDPOINT_ALREADY_ATTACHED"),
        ("A network named cbr0 already exists", AlreadyExists, None),
        ("The parameter is incorrect.", InvalidArgument, "E_INVALIDARG"),
        ("Something else", HnsError, None),
    ],
)
def test_v1_errors_classified_by_text(text: str, cls: type, name: str | None) -> None:
    e = from_v1_error("HNSCall POST /endpoints/", text)
    assert type(e) is cls and e.hresult is None and e.name == name and e.record == text
    assert str(e) == (f"HNSCall POST /endpoints/: {name}: {text}" if name else f"HNSCall POST /endpoints/: {text}")


def test_errors_pickle() -> None:
    e = from_hresult("HcnCreateNetwork", 0x80070057, '{"Error":"extra","ErrorCode":2147942487}')
    back = pickle.loads(pickle.dumps(e))
    assert type(back) is InvalidArgument and str(back) == str(e) and back.record == e.record


@given(st.integers(min_value=0x80000000, max_value=0xFFFFFFFF), st.text(max_size=40))
def test_any_failure_builds_a_sane_error(hr: int, text: str) -> None:
    e = from_hresult("HcnOpenEndpoint", hr, errors.error_record(hr, text))
    assert e.hresult == hr and isinstance(e, HnsError)
    assert str(e).startswith("HcnOpenEndpoint: ") and f"0x{hr:08X}" in str(e)
