"""HNS failures as one exception hierarchy, with the HRESULT table that names them.

Both backends fail the same way: the ctypes backend from the HRESULT and ErrorRecord the DLL
returns, the simulator by building the same HRESULT and ErrorRecord text (``error_record``).
Callers branch on the subclass (``NotFound``, ``AlreadyExists`` …), never on numbers, because
HNS reports the same condition with several codes (0x803B0001 *and* 0x80070490 for a missing
network, depending on the call and the Windows build).
"""

from __future__ import annotations

#: HCN_E_* (winerror.h, facility 0x3B): low byte -> (name, meaning).
_HCN_CODES: dict[int, tuple[str, str]] = {
    0x01: ("HCN_E_NETWORK_NOT_FOUND", "The network was not found."),
    0x02: ("HCN_E_ENDPOINT_NOT_FOUND", "The endpoint was not found."),
    0x03: ("HCN_E_LAYER_NOT_FOUND", "The network's underlying layer was not found."),
    0x04: ("HCN_E_SWITCH_NOT_FOUND", "The virtual switch was not found."),
    0x05: ("HCN_E_SUBNET_NOT_FOUND", "The network does not have a subnet for this endpoint."),
    0x06: ("HCN_E_ADAPTER_NOT_FOUND", "The network adapter was not found."),
    0x07: ("HCN_E_PORT_NOT_FOUND", "The switch port was not found."),
    0x08: ("HCN_E_POLICY_NOT_FOUND", "An expected policy was not found."),
    0x09: ("HCN_E_VFP_PORTSETTING_NOT_FOUND", "A required VFP port setting was not found."),
    0x0A: ("HCN_E_INVALID_NETWORK", "The provided network configuration is invalid or missing parameters."),
    0x0B: ("HCN_E_INVALID_NETWORK_TYPE", "The network type is invalid."),
    0x0C: ("HCN_E_INVALID_ENDPOINT", "The provided endpoint configuration is invalid or missing parameters."),
    0x0D: ("HCN_E_INVALID_POLICY", "The provided policy configuration is invalid or missing parameters."),
    0x0E: ("HCN_E_INVALID_POLICY_TYPE", "The policy type is invalid."),
    0x0F: ("HCN_E_INVALID_REMOTE_ENDPOINT_OPERATION", "The requested operation is invalid for a remote endpoint."),
    0x10: ("HCN_E_NETWORK_ALREADY_EXISTS", "A network with this name already exists."),
    0x11: ("HCN_E_LAYER_ALREADY_EXISTS", "A layer with this name already exists."),
    0x12: ("HCN_E_POLICY_ALREADY_EXISTS", "The policy already exists on this object."),
    0x13: ("HCN_E_PORT_ALREADY_EXISTS", "The specified port already exists."),
    0x14: ("HCN_E_ENDPOINT_ALREADY_ATTACHED", "This endpoint is already attached to the switch."),
    0x15: ("HCN_E_REQUEST_UNSUPPORTED", "The specified request is unsupported."),
    0x16: ("HCN_E_MAPPING_NOT_SUPPORTED", "Port mapping is not supported on this network."),
    0x17: ("HCN_E_DEGRADED_OPERATION", "The operation was attempted on a degraded object."),
    0x18: ("HCN_E_SHARED_SWITCH_MODIFICATION", "A switch shared by several networks cannot be modified."),
    0x19: ("HCN_E_GUID_CONVERSION_FAILURE", "A parameter could not be read as a GUID."),
    0x1A: ("HCN_E_REGKEY_FAILURE", "A registry key could not be processed."),
    0x1B: ("HCN_E_INVALID_JSON", "The JSON document is invalid."),
    0x1C: ("HCN_E_INVALID_JSON_REFERENCE", "A reference in the JSON document is invalid."),
    0x1D: ("HCN_E_ENDPOINT_SHARING_DISABLED", "Endpoint sharing is disabled."),
    0x1E: ("HCN_E_INVALID_IP", "The IP address is invalid or not part of any configured subnet."),
    0x1F: ("HCN_E_SWITCH_EXTENSION_NOT_FOUND", "The specified switch extension does not exist on this switch."),
    0x20: ("HCN_E_MANAGER_STOPPED", "The operation cannot be performed while the service is stopping."),
    0x21: ("GCN_E_MODULE_NOT_FOUND", "The guest network service module was not found."),
    0x22: ("GCN_E_NO_REQUEST_HANDLERS", "No request handler is registered for the request."),
    0x23: ("GCN_E_REQUEST_UNSUPPORTED", "The guest network service does not support the request."),
    0x24: ("GCN_E_RUNTIMEKEYS_FAILED", "Adding the runtime keys failed."),
    0x25: ("GCN_E_NETADAPTER_TIMEOUT", "Timed out waiting for the network adapter."),
    0x26: ("GCN_E_NETADAPTER_NOT_FOUND", "The network adapter was not found in the guest."),
    0x27: ("GCN_E_NETCOMPARTMENT_NOT_FOUND", "The network compartment was not found."),
    0x28: ("GCN_E_NETINTERFACE_NOT_FOUND", "The network interface was not found."),
    0x29: ("GCN_E_DEFAULTNAMESPACE_EXISTS", "A default namespace already exists."),
    0x2A: (
        "HCN_E_ICS_DISABLED",
        "The Internet Connection Sharing service (SharedAccess) is disabled and cannot be started.",
    ),
    0x2B: ("HCN_E_ENDPOINT_NAMESPACE_ALREADY_EXISTS", "The endpoint is already part of a network namespace."),
    0x2C: ("HCN_E_ENTITY_HAS_REFERENCES", "The object cannot be removed while other objects still reference it."),
    0x2D: ("HCN_E_INVALID_INTERNAL_PORT", "The internal port must be given and cannot be zero."),
    0x2E: ("HCN_E_NAMESPACE_ATTACH_FAILED", "Attaching the namespace failed."),
    0x2F: ("HCN_E_ADDR_INVALID_OR_RESERVED", "An address provided is invalid or reserved."),
    0x30: ("HCN_E_INVALID_PREFIX", "The prefix provided is invalid."),
    0x31: ("HCN_E_OBJECT_USED_AFTER_UNLOAD", "An object was used after the component that owns it was unloaded."),
    0x32: ("HCN_E_INVALID_SUBNET", "The subnet provided is invalid."),
    0x33: ("HCN_E_INVALID_IP_SUBNET", "The IP subnet provided is invalid."),
    0x34: ("HCN_E_ENDPOINT_NOT_ATTACHED", "The endpoint is not attached."),
    0x35: ("HCN_E_ENDPOINT_NOT_LOCAL", "The endpoint is not local to this host."),
    0x36: ("HCN_INTERFACEPARAMETERS_ALREADY_APPLIED", "The interface parameters are already applied."),
    0x37: ("HCN_E_VFP_NOT_ALLOWED", "VFP is not allowed here."),
}

#: HRESULT -> (name, meaning) for every code this package names.
HRESULTS: dict[int, tuple[str, str]] = {0x803B0000 | low: v for low, v in _HCN_CODES.items()}
HRESULTS.update(
    {
        0x00000000: ("S_OK", "The operation completed successfully."),
        0x80004001: ("E_NOTIMPL", "Not implemented."),
        0x80004005: ("E_FAIL", "Unspecified error."),
        0x80070005: ("E_ACCESSDENIED", "Access is denied."),
        0x8007000E: ("E_OUTOFMEMORY", "Not enough memory resources are available to complete this operation."),
        0x80070057: ("E_INVALIDARG", "The parameter is incorrect."),
        0x800700B7: ("ERROR_ALREADY_EXISTS", "Cannot create a file when that file already exists."),
        0x80070490: ("ERROR_NOT_FOUND", "Element not found."),
        0x80071392: ("ERROR_OBJECT_ALREADY_EXISTS", "The object already exists."),
        0x800706BA: ("RPC_S_SERVER_UNAVAILABLE", "The RPC server is unavailable."),
        0x800706BB: ("RPC_S_SERVER_TOO_BUSY", "The RPC server is too busy to complete this operation."),
        0x800706BE: ("RPC_S_CALL_FAILED", "The remote procedure call failed."),
        0x800706BF: ("RPC_S_CALL_FAILED_DNE", "The remote procedure call failed and did not execute."),
        0x800706D9: ("EPT_S_NOT_REGISTERED", "There are no more endpoints available from the endpoint mapper."),
        0xC037010E: (
            "HCS_E_SYSTEM_NOT_FOUND",
            "A virtual machine or container with the specified identifier does not exist.",
        ),
        0xC037010F: (
            "HCS_E_SYSTEM_ALREADY_EXISTS",
            "A virtual machine or container with the specified identifier already exists.",
        ),
    }
)

# The codes code raises or compares by name: ours, and the simulator's answers (libhns.sim), which
# must be HNS's own. tests/unit/test_errors.py checks each against its name in HRESULTS.
S_OK = 0x00000000
E_FAIL = 0x80004005
E_INVALIDARG = 0x80070057
E_ACCESSDENIED = 0x80070005
E_HANDLE = 0x80070006
ERROR_MOD_NOT_FOUND = 0x8007007E
#: Named for the simulator's answers, but not in ``HRESULTS``: their error text stays the bare code it always was.
UNLISTED = frozenset({E_HANDLE, ERROR_MOD_NOT_FOUND})
E_NOTIMPL = 0x80004001
ERROR_NOT_FOUND = 0x80070490
ERROR_ALREADY_EXISTS = 0x800700B7
ERROR_OBJECT_ALREADY_EXISTS = 0x80071392
HCS_E_SYSTEM_NOT_FOUND = 0xC037010E
HCS_E_SYSTEM_ALREADY_EXISTS = 0xC037010F
HCN_E_NETWORK_NOT_FOUND = 0x803B0001
HCN_E_ENDPOINT_NOT_FOUND = 0x803B0002
HCN_E_ADAPTER_NOT_FOUND = 0x803B0006
HCN_E_POLICY_NOT_FOUND = 0x803B0008
HCN_E_INVALID_NETWORK = 0x803B000A
HCN_E_INVALID_NETWORK_TYPE = 0x803B000B
HCN_E_INVALID_ENDPOINT = 0x803B000C
HCN_E_INVALID_POLICY = 0x803B000D
HCN_E_INVALID_POLICY_TYPE = 0x803B000E
HCN_E_NETWORK_ALREADY_EXISTS = 0x803B0010
HCN_E_POLICY_ALREADY_EXISTS = 0x803B0012
HCN_E_PORT_ALREADY_EXISTS = 0x803B0013
HCN_E_ENDPOINT_ALREADY_ATTACHED = 0x803B0014
HCN_E_REQUEST_UNSUPPORTED = 0x803B0015
HCN_E_INVALID_JSON = 0x803B001B
HCN_E_INVALID_JSON_REFERENCE = 0x803B001C
HCN_E_INVALID_IP = 0x803B001E
GCN_E_DEFAULTNAMESPACE_EXISTS = 0x803B0029
HCN_E_ENTITY_HAS_REFERENCES = 0x803B002C
HCN_E_ADDR_INVALID_OR_RESERVED = 0x803B002F
HCN_E_INVALID_PREFIX = 0x803B0030
HCN_E_ENDPOINT_NOT_ATTACHED = 0x803B0034


#: "Try again": HRESULT -> how many seconds of retrying it is worth, inside the command's
#: deadline. While HNS (vmcompute, the RPC endpoint behind computenetwork.dll) restarts, calls
#: fail with the RPC codes until the service listens again, then with HCN_E_MANAGER_STOPPED
#: while it winds down or up; none of these ran the call, so sending it again is safe. Access
#: denied also shows up for a moment during a restart, but it is what a non-elevated caller
#: always gets, so it is retried briefly, never for the whole deadline. Every other HRESULT
#: fails at once.
RETRY_SECONDS: dict[int, float] = {
    0x800706BA: float("inf"),  # RPC_S_SERVER_UNAVAILABLE: the service is not (yet) listening
    0x800706BB: float("inf"),  # RPC_S_SERVER_TOO_BUSY
    0x800706BF: float("inf"),  # RPC_S_CALL_FAILED_DNE: failed and did not execute
    0x800706D9: float("inf"),  # EPT_S_NOT_REGISTERED: the RPC interface is not registered yet
    0x803B0020: float("inf"),  # HCN_E_MANAGER_STOPPED: the service is stopping or starting
    0x80070005: 2.0,  # E_ACCESSDENIED: briefly, while HNS restarts
}


class EnvError(ValueError):
    """A ``LIBHNS_*`` environment variable that cannot be used; the message names it and the
    form it takes. Raised only while the backend is chosen, before any HNS call."""


class HnsError(Exception):
    """A failed HNS/HCS call: which call, its HRESULT (None for a V1 envelope error), and why."""

    codes: frozenset[int] = frozenset()

    def __init__(
        self,
        call: str,
        hresult: int | None,
        name: str | None,
        message: str,
        record: str | None = None,
        detail: str | None = None,
    ) -> None:
        self.call = call
        self.hresult = hresult
        self.name = name
        self.message = message
        self.record = record
        self.detail = detail
        super().__init__(self._text())

    def _text(self) -> str:
        if self.hresult is None:
            code = self.name
        elif self.name:
            code = f"{self.name} (0x{self.hresult:08X})"
        else:
            code = f"0x{self.hresult:08X}"
        text = f"{self.call}: {code}: {self.message}" if code else f"{self.call}: {self.message}"
        return f"{text} [{self.detail}]" if self.detail else text

    def __str__(self) -> str:
        return self._text()

    def __reduce__(self) -> tuple[object, ...]:
        return (_rebuild, (type(self), self.call, self.hresult, self.name, self.message, self.record, self.detail))

    @property
    def win32(self) -> int | None:
        """The Win32 error code when the HRESULT wraps one (facility 7), as Go's syscall would see it."""
        return None if self.hresult is None else win32_code(self.hresult)


def _rebuild(cls: type[HnsError], *args: object) -> HnsError:
    return cls(*args)  # type: ignore[arg-type]


class Timeout(HnsError):
    """HNS did not answer within the deadline; the call may still complete after we gave up."""

    def __init__(self, call: str, waited: float, limit: str) -> None:
        self.waited = waited
        self.limit = limit
        super().__init__(
            call,
            None,
            "TIMEOUT",
            f"no answer from HNS after {waited:.1f} s ({limit}); the call may still complete in HNS",
        )

    def __reduce__(self) -> tuple[object, ...]:
        return (Timeout, (self.call, self.waited, self.limit))


def retry_seconds(err: BaseException) -> float:
    """How long an error is worth retrying (0: fail at once), from ``RETRY_SECONDS``."""
    hresult = getattr(err, "hresult", None)
    return RETRY_SECONDS.get(hresult, 0.0) if isinstance(err, HnsError) else 0.0


def try_later(err: BaseException) -> bool:
    """True for failures the runtime should retry (CNI code 11): a deadline passed, or HNS kept
    answering "try again" until the retries ran out."""
    return isinstance(err, Timeout) or retry_seconds(err) > 0


class NotFound(HnsError):
    """The object (network, endpoint, namespace, container …) does not exist."""

    codes = frozenset(
        {0x803B0001, 0x803B0002, 0x803B0005, 0x803B0007, 0x803B0008, ERROR_NOT_FOUND, HCS_E_SYSTEM_NOT_FOUND}
    )


class AlreadyExists(HnsError):
    """The object, port or attachment already exists."""

    codes = frozenset({0x803B0010, 0x803B0012, 0x803B0013, 0x803B0014, 0x803B002B, 0x80071392, 0x800700B7, 0xC037010F})


class InvalidPolicy(HnsError):
    """A policy is malformed, of an unknown type, or of the other schema's shape."""

    codes = frozenset({0x803B000D, 0x803B000E})


class InvalidArgument(HnsError):
    """HNS rejected a parameter or document (E_INVALIDARG, bad JSON)."""

    codes = frozenset({E_INVALIDARG, 0x803B001B, 0x803B001C})


class AccessDenied(HnsError):
    """The caller lacks the rights HNS needs (typically: not elevated)."""

    codes = frozenset({E_ACCESSDENIED})


class Unsupported(HnsError):
    """This HNS does not implement the request."""

    codes = frozenset({E_NOTIMPL, 0x803B0015, 0x803B0016, 0x803B0023})


class InvalidAddress(HnsError):
    """An IP address, prefix or subnet is invalid, reserved, outside the network or already in use."""

    codes = frozenset({0x803B001E, 0x803B002F, 0x803B0030, 0x803B0032, 0x803B0033})


class InUse(HnsError):
    """The object still has references (e.g. a network with endpoints) and cannot be removed."""

    codes = frozenset({0x803B002C})


class SimulatorLimit(HnsError):
    """A question the simulator does not answer because real HNS's answer is not known (no
    HRESULT: HNS never says this; the simulator does, instead of guessing)."""


_CLASS_BY_CODE: dict[int, type[HnsError]] = {
    code: cls
    for cls in (
        NotFound,
        AlreadyExists,
        InvalidPolicy,
        InvalidArgument,
        AccessDenied,
        Unsupported,
        InvalidAddress,
        InUse,
    )
    for code in cls.codes
}


def _u32(hr: int) -> int:
    return hr & 0xFFFFFFFF


def hresult_name(hr: int) -> str | None:
    """The symbolic name of an HRESULT (``HCN_E_INVALID_POLICY``), None when unknown."""
    entry = HRESULTS.get(_u32(hr))
    return entry[0] if entry else None


def hresult_message(hr: int) -> str | None:
    """The meaning of an HRESULT as one sentence, None when unknown."""
    entry = HRESULTS.get(_u32(hr))
    return entry[1] if entry else None


def win32_code(hr: int) -> int | None:
    """The Win32 error inside a facility-7 HRESULT (0x80070490 -> 1168), else None."""
    hr = _u32(hr)
    return hr & 0xFFFF if (hr & 0x1FFF0000) == 0x00070000 else None


def error_record(hresult: int, message: str | None = None) -> str:
    """The ErrorRecord text HCN returns for a failure, byte for byte in HNS's compact form."""
    from basics import jsontext

    hr = _u32(hresult)
    text = message if message is not None else (hresult_message(hr) or "")
    return jsontext.dumps({"Success": False, "Error": text + " ", "ErrorCode": hr}, separators=(",", ":"))


def parse_record(record: str | None) -> tuple[int | None, str | None]:
    """(code, text) of an HCN ErrorRecord or HCS result document; text that is not JSON is all message."""
    if not record or not record.strip():
        return None, None
    from basics import jsontext

    try:
        doc = jsontext.loads(record)
    except ValueError:
        return None, record.strip()
    if not isinstance(doc, dict):
        return None, record.strip()
    # HCN ErrorRecord: {"Error": text, "ErrorCode": hr}; HCS result: {"Error": hr, "ErrorMessage": text}.
    code = doc.get("ErrorCode", doc.get("Error"))
    text = doc.get("ErrorMessage", doc.get("Error"))
    return (
        _u32(code) if isinstance(code, int) and not isinstance(code, bool) else None,
        text.strip() if isinstance(text, str) and text.strip() else None,
    )


def _same(a: str, b: str) -> bool:
    return a.strip().rstrip(".").casefold() == b.strip().rstrip(".").casefold()


def from_hresult(call: str, hresult: int, record: str | None = None) -> HnsError:
    """The exception for a failed call; with S_OK, the ErrorRecord's ErrorCode is the HRESULT."""
    hr = _u32(hresult)
    code, text = parse_record(record)
    if hr == S_OK and code:
        hr = code
    name = hresult_name(hr) if hr != S_OK else None
    meaning = hresult_message(hr)
    if meaning is None or hr == S_OK:
        message, detail = (text or meaning or "Unknown error."), None
    else:
        message, detail = meaning, (text if text and not _same(text, meaning) else None)
    cls = _CLASS_BY_CODE.get(hr, HnsError)
    return cls(call, hr, name, message, record if record and record.strip() else None, detail)


def _code_for_text(text: str) -> int | None:
    """The HRESULT whose meaning is this V1 error text (HNS often reports the table's sentence)."""
    for hr, (_name, meaning) in HRESULTS.items():
        if hr != S_OK and _same(text, meaning):
            return hr
    return None


def from_v1_error(call: str, text: str) -> HnsError:
    """The exception for a V1 envelope with ``Success: false``; V1 gives text only, so classify by text."""
    message = (text or "").strip() or "Unknown error."
    hr = _code_for_text(message)
    if hr is not None:
        cls: type[HnsError] = _CLASS_BY_CODE.get(hr, HnsError)
        return cls(call, None, hresult_name(hr), message, text)
    low = message.casefold()
    if "not found" in low or "does not exist" in low:
        cls = NotFound
    elif "already exists" in low or "already attached" in low:
        cls = AlreadyExists
    else:
        cls = HnsError
    return cls(call, None, None, message, text)
