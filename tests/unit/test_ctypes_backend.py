"""libhns.ctypes_backend through a C library with the DLLs' export names and signatures.

The fake records the bytes it received and counts CoTaskMem allocations and frees, so these tests
check what Windows would see: GUID layout, wide strings, handles, and that each returned string
is freed exactly once on success and on every error path.
"""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Iterator

import pytest

import fakedll
from libhns import errors
from libhns.ctypes_backend import GUID, CtypesBackend
from libhns.raw import KINDS, hcn_function

NET_ID = "9B219D6E-6847-43FC-8258-81DB4B63C09C"  # as libhns.guid.parse gives it
# bytes_le of NET_ID, spelled out: Data1/2/3 little-endian, Data4 as is.
NET_ID_BYTES = bytes.fromhex("6e9d219b4768fc43825881db4b63c09c")
GUID_NULL = bytes(16)
QUERY = '{"SchemaVersion":{"Major":2,"Minor":0},"Filter":"{\\"Name\\":\\"cbr0\\"}"}'
RECORD = errors.error_record(0x803B000D)


@pytest.fixture(scope="session")
def fake_path(tmp_path_factory: pytest.TempPathFactory):
    if fakedll.compiler() is None:
        pytest.skip("no C compiler (cc/gcc) on PATH to build tests/fakedll/fakehns.c")
    return fakedll.build(tmp_path_factory.mktemp("fakedll"))


@pytest.fixture
def fake(fake_path) -> Iterator[fakedll.FakeHns]:
    dll = fakedll.FakeHns(fake_path)
    dll.reset()
    yield dll
    assert dll.bad_frees == 0, "a string was freed twice or was never ours"
    assert dll.allocs == dll.frees, "a returned string was not freed"
    dll.reset()


@pytest.fixture
def backend(fake: fakedll.FakeHns) -> CtypesBackend:
    return CtypesBackend(computenetwork=fake.lib, vmcompute=fake.lib, ole32=fake.lib)


def test_guid_bytes_are_uuid_bytes_le() -> None:
    assert (
        uuid.UUID(NET_ID).bytes_le
        == NET_ID_BYTES
        == bytes(GUID.of(NET_ID))
        == bytes(GUID.of("{" + NET_ID.lower() + "}"))
    )
    assert bytes(GUID.of(None)) == bytes(16)


# --- HCN: what the DLL receives -----------------------------------------------------------------
@pytest.mark.parametrize("kind", KINDS)
def test_enumerate_passes_query_and_returns_list(backend, fake, kind: str) -> None:
    fake.set_next(0, out='["9B219D6E-6847-43FC-8258-81DB4B63C09C"]')
    assert backend.hcn_enumerate(kind, QUERY) == '["9B219D6E-6847-43FC-8258-81DB4B63C09C"]'
    assert fake.last_call == hcn_function("Enumerate", kind)
    assert fake.last_strings() == [QUERY]
    assert (fake.allocs, fake.frees) == (1, 1)


def test_enumerate_null_output_is_empty_string(backend, fake) -> None:
    fake.set_next(0)
    assert backend.hcn_enumerate("Network", "") == ""
    assert fake.allocs == 0


def test_strings_survive_non_ascii(backend, fake) -> None:
    fake.set_next(0, out='["réseau-ü-😀"]')
    assert backend.hcn_enumerate("Network", '{"Filter":"{\\"Name\\":\\"ネット\\"}"}') == '["réseau-ü-😀"]'
    assert fake.last_strings() == ['{"Filter":"{\\"Name\\":\\"ネット\\"}"}']


@pytest.mark.parametrize("kind", ["Network", "Namespace", "LoadBalancer"])
def test_create_sends_guid_and_settings_and_returns_handle(backend, fake, kind: str) -> None:
    handle = backend.hcn_create(kind, NET_ID, '{"Name":"cbr0"}')
    assert fake.last_call == f"HcnCreate{kind}"
    assert fake.last_guid() == NET_ID_BYTES
    assert fake.last_strings() == ['{"Name":"cbr0"}']
    assert handle == fake.last_handle_out != 0


def test_create_without_id_sends_guid_null(backend, fake) -> None:
    backend.hcn_create("Network", None, "{}")
    assert fake.last_guid() == GUID_NULL  # a pointer to zeros, not a NULL pointer


def test_create_endpoint_passes_network_handle_first(backend, fake) -> None:
    network = backend.hcn_open("Network", NET_ID)
    ep_id = "00112233-4455-6677-8899-AABBCCDDEEFF"
    endpoint = backend.hcn_create("Endpoint", ep_id, '{"Name":"ep"}', network=network)
    assert fake.last_call == "HcnCreateEndpoint"
    assert fake.last_handle_in == network
    assert fake.last_guid() == bytes.fromhex("33221100554477668899aabbccddeeff")
    assert fake.last_strings() == ['{"Name":"ep"}']
    assert endpoint == fake.last_handle_out and endpoint != network


def test_create_endpoint_requires_a_network_and_others_refuse_one(backend, fake) -> None:
    with pytest.raises(ValueError):
        backend.hcn_create("Endpoint", None, "{}")
    with pytest.raises(ValueError):
        backend.hcn_create("Network", None, "{}", network=0x1234)
    assert fake.calls == 0


@pytest.mark.parametrize("kind", KINDS)
def test_open_query_modify_close_use_the_handle(backend, fake, kind: str) -> None:
    handle = backend.hcn_open(kind, NET_ID)
    assert (fake.last_call, fake.last_guid()) == (f"HcnOpen{kind}", NET_ID_BYTES)

    fake.set_next(0, out='{"ID":"9B219D6E-6847-43FC-8258-81DB4B63C09C"}')
    assert backend.hcn_query(kind, handle, QUERY) == '{"ID":"9B219D6E-6847-43FC-8258-81DB4B63C09C"}'
    assert (fake.last_call, fake.last_handle_in) == (f"HcnQuery{kind}Properties", handle)
    assert fake.last_strings() == [QUERY]

    backend.hcn_modify(kind, handle, '{"ResourceType":"Policy"}')
    assert (fake.last_call, fake.last_handle_in) == (f"HcnModify{kind}", handle)
    assert fake.last_strings() == ['{"ResourceType":"Policy"}']

    backend.hcn_close(kind, handle)
    assert (fake.last_call, fake.last_handle_in, fake.closes) == (f"HcnClose{kind}", handle, 1)


@pytest.mark.parametrize("kind", KINDS)
def test_delete_sends_guid(backend, fake, kind: str) -> None:
    backend.hcn_delete(kind, NET_ID)
    assert (fake.last_call, fake.last_guid()) == (f"HcnDelete{kind}", NET_ID_BYTES)


def test_close_ignores_failure_and_skips_null_handle(backend, fake) -> None:
    fake.set_next(0x80070006)
    backend.hcn_close("Network", 0x1001)
    assert fake.closes == 1
    backend.hcn_close("Network", None)
    assert fake.closes == 1


# --- HCN: errors ----------------------------------------------------------------------------------
def test_failed_hresult_raises_the_subclass_with_record(backend, fake) -> None:
    fake.set_next(0x803B000D, record=RECORD)
    with pytest.raises(errors.InvalidPolicy) as caught:
        backend.hcn_create("Network", None, "{}")
    e = caught.value
    assert (e.call, e.hresult, e.name, e.record) == ("HcnCreateNetwork", 0x803B000D, "HCN_E_INVALID_POLICY", RECORD)
    assert str(e) == (
        "HcnCreateNetwork: HCN_E_INVALID_POLICY (0x803B000D): "
        "The provided policy configuration is invalid or missing parameters."
    )
    assert (fake.allocs, fake.frees) == (1, 1)


def test_failed_hresult_frees_output_and_record(backend, fake) -> None:
    fake.set_next(0x80070490, out="[]", record=errors.error_record(0x80070490))
    with pytest.raises(errors.NotFound):
        backend.hcn_enumerate("Endpoint", "")
    assert (fake.allocs, fake.frees) == (2, 2)


def test_failed_hresult_without_record(backend, fake) -> None:
    fake.set_next(0x803B0001)
    with pytest.raises(errors.NotFound) as caught:
        backend.hcn_open("Network", NET_ID)
    assert caught.value.record is None and caught.value.hresult == 0x803B0001


def test_error_record_with_s_ok_is_an_error(backend, fake) -> None:
    fake.set_next(0, out='{"ID":"x"}', record=errors.error_record(0x803B002F))
    with pytest.raises(errors.InvalidAddress) as caught:
        backend.hcn_query("Endpoint", 0x1001, "")
    assert caught.value.hresult == 0x803B002F
    assert caught.value.call == "HcnQueryEndpointProperties"
    assert (fake.allocs, fake.frees) == (2, 2)


def test_blank_error_record_with_s_ok_is_success(backend, fake) -> None:
    fake.set_next(0, out="{}", record="")
    assert backend.hcn_query("Network", 0x1001, "") == "{}"
    assert (fake.allocs, fake.frees) == (2, 2)


def test_success_hresult_with_positive_code_is_not_failure(backend, fake) -> None:
    fake.set_next(0x00000001, out="{}")  # S_FALSE: bit 31 clear
    assert backend.hcn_query("Network", 0x1001, "") == "{}"


# --- vmcompute.dll --------------------------------------------------------------------------------
def test_hns_call_passes_strings_and_returns_envelope(backend, fake) -> None:
    envelope = '{"Success":true,"Output":{"Major":13,"Minor":2}}'
    fake.set_next(0, out=envelope)
    assert backend.hns_call("GET", "/globals/version", "") == envelope
    assert fake.last_call == "HNSCall"
    assert fake.last_strings() == ["GET", "/globals/version", ""]  # "" and not NULL
    assert (fake.allocs, fake.frees) == (1, 1)


def test_hns_call_success_false_is_passed_through(backend, fake) -> None:
    envelope = '{"Success":false,"Error":"Element not found."}'
    fake.set_next(0, out=envelope)
    assert backend.hns_call("POST", "/endpoints/", '{"Name":"x"}') == envelope
    assert fake.last_strings() == ["POST", "/endpoints/", '{"Name":"x"}']


def test_hns_call_failed_hresult_names_method_and_path(backend, fake) -> None:
    fake.set_next(0x80070005, out="denied")
    with pytest.raises(errors.AccessDenied) as caught:
        backend.hns_call("DELETE", "/networks/abc", "")
    assert caught.value.call == "HNSCall DELETE /networks/abc"
    assert (fake.allocs, fake.frees) == (1, 1)


def test_hcs_open_modify_close(backend, fake) -> None:
    handle = backend.hcs_open_compute_system("c0ffee")
    assert (fake.last_call, fake.last_strings()) == ("HcsOpenComputeSystem", ["c0ffee"])
    assert handle == fake.last_handle_out != 0

    backend.hcs_modify_compute_system(handle, '{"ResourcePath":"VirtualMachine/Devices/NetworkAdapters/x"}')
    assert fake.last_call == "HcsModifyComputeSystem" and fake.last_handle_in == handle
    assert fake.last_strings() == ['{"ResourcePath":"VirtualMachine/Devices/NetworkAdapters/x"}']

    backend.hcs_close_compute_system(handle)
    assert (fake.last_call, fake.last_handle_in, fake.closes) == ("HcsCloseComputeSystem", handle, 1)


def test_hcs_open_missing_system_is_not_found_with_result_text(backend, fake) -> None:
    result = '{"Error":-1070137074,"ErrorMessage":"A virtual machine or container with the specified identifier does not exist."}'
    fake.set_next(0xC037010E, out=result)
    with pytest.raises(errors.NotFound) as caught:
        backend.hcs_open_compute_system("nope")
    assert (caught.value.hresult, caught.value.record) == (0xC037010E, result)
    assert caught.value.name == "HCS_E_SYSTEM_NOT_FOUND"
    assert (fake.allocs, fake.frees) == (1, 1)


def test_hcs_success_result_document_is_freed_not_an_error(backend, fake) -> None:
    fake.set_next(0, out='{"Events":[]}')
    backend.hcs_modify_compute_system(0x1001, "{}")
    assert (fake.allocs, fake.frees) == (1, 1)


# --- loading --------------------------------------------------------------------------------------
def test_import_loads_nothing_and_defaults_fail_clearly_off_windows() -> None:
    code = (
        "import sys, libhns; before = set(sys.modules);"
        "import libhns.ctypes_backend as c; b = c.CtypesBackend();"
        "new = set(sys.modules) - before;"
        "assert not {'libhns.errors', 'json'} & new, new;"
        "import ctypes; assert not hasattr(ctypes, 'WinDLL') or sys.platform == 'win32';"
        "\ntry:\n b.hns_call('GET', '/globals/version', '')\nexcept OSError as e:\n print(e)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    if sys.platform != "win32":
        assert "vmcompute.dll" in out.stdout and "LIBHNS_BACKEND=sim" in out.stdout


def test_a_stand_in_dll_names_itself_when_asked(backend: CtypesBackend) -> None:
    assert backend.stand_in() == "wincni fake HNS (tests/fakedll/fakehns.c): scripted answers"


def test_a_dll_without_the_marker_is_not_a_stand_in(fake: fakedll.FakeHns) -> None:
    class Real:  # what ctypes gives for computenetwork.dll: no WincniFakeHns export
        def __getattr__(self, name: str):
            raise AttributeError(name)

    assert CtypesBackend(computenetwork=Real(), vmcompute=fake.lib, ole32=fake.lib).stand_in() is None


def test_the_selftest_refuses_to_call_a_stand_in_real_hns(backend: CtypesBackend, tmp_path) -> None:
    """On Windows with the Wine lane's fake DLLs, ``hcn`` is refused by the marker they answer;
    ``fake`` (the dry run) opens them."""
    import io

    from tools.wincni.cli.context import Context
    from tools.wincni.selftest import SelftestOptions, run
    from tools.wincni.selftest.backends import open_backend
    from tools.wincni.selftest.options import REFUSED

    ctx = Context(io.StringIO(), io.StringIO(), {}, "win32", str(tmp_path))
    outcome = run(SelftestOptions(backend="hcn"), ctx, raw=lambda: backend, scratch=str(tmp_path))
    assert outcome.status == REFUSED
    assert outcome.text == (
        "wincni selftest: computenetwork.dll here is not HNS but a stand-in (wincni fake HNS "
        "(tests/fakedll/fakehns.c): scripted answers); refusing to call it real HNS (the fake backend is its dry run)\n"
    )
    assert open_backend("fake", ctx, str(tmp_path), lambda: backend) is backend
