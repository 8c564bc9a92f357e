"""The one raw HNS surface every backend implements.

One method per DLL export (computenetwork.dll ``Hcn*``, vmcompute.dll ``HNSCall`` and the
``Hcs*ComputeSystem`` calls V1 hot attach needs), with Python types in and out and JSON kept
as *strings*: the backend neither parses nor builds documents. Two implementations exist —
``libhns.ctypes_backend`` (Windows, or a substitute library in tests) and ``libhns.sim``
(everywhere else) — and ``libhns.journal`` wraps either one. Like httpx's transports, the
client above never knows which one it talks to.

Failures raise ``libhns.errors.HnsError`` (built with ``errors.from_hresult``), carrying the
function name, the unsigned HRESULT and the ErrorRecord text.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Protocol
else:
    Protocol = object  # RawHns is a Protocol for type checkers, a plain class at run time

#: The HCN object kinds; ``Hcn<Op><Kind>`` names the export (``HcnEnumerate<Kind>s`` is plural).
KINDS = ("Network", "Endpoint", "Namespace", "LoadBalancer")

#: An opaque handle returned by ``hcn_open``/``hcn_create``/``hcs_open_compute_system``.
Handle = object


def hcn_function(op: str, kind: str) -> str:
    """The DLL export name for an operation on a kind, e.g. ('Enumerate','Network') -> HcnEnumerateNetworks."""
    if kind not in KINDS:
        raise ValueError(f"unknown HCN kind {kind!r}")
    if op == "Enumerate":
        return f"HcnEnumerate{kind}s"
    if op == "Query":
        return f"HcnQuery{kind}Properties"
    return f"Hcn{op}{kind}"


class RawHns(Protocol):
    # --- computenetwork.dll (HCN, "V2") ---
    def hcn_enumerate(self, kind: str, query: str) -> str:
        """HcnEnumerate<Kind>s(query) -> the JSON array of GUID strings HNS returns (may be '' or 'null')."""

    def hcn_create(self, kind: str, id: str | None, settings: str, network: Handle | None = None) -> Handle:
        """HcnCreate<Kind>; ``id`` None means GUID_NULL (HNS assigns). Endpoints need ``network`` (an open network handle).

        IDs are GUID strings as ``libhns.guid.parse`` gives them (no ``uuid`` objects: that module
        costs a plugin's start more than it saves)."""

    def hcn_open(self, kind: str, id: str) -> Handle:
        """HcnOpen<Kind>(id)."""

    def hcn_modify(self, kind: str, handle: Handle, settings: str) -> None:
        """HcnModify<Kind>(handle, settings)."""

    def hcn_query(self, kind: str, handle: Handle, query: str) -> str:
        """HcnQuery<Kind>Properties(handle, query) -> properties JSON string."""

    def hcn_delete(self, kind: str, id: str) -> None:
        """HcnDelete<Kind>(id)."""

    def hcn_close(self, kind: str, handle: Handle) -> None:
        """HcnClose<Kind>(handle); never raises for an already-closed handle."""

    # --- vmcompute.dll (HNS "V1" and HCS) ---
    def hns_call(self, method: str, path: str, request: str) -> str:
        """HNSCall(method, path, request) -> the raw response envelope ``{"Success","Error","Output"}``.

        Raises HnsError only when the HRESULT itself fails; ``Success: false`` is the caller's to read.
        """

    def hcs_open_compute_system(self, id: str) -> Handle:
        """HcsOpenComputeSystem(id) (0xC037010E when the container does not exist)."""

    def hcs_modify_compute_system(self, handle: Handle, configuration: str) -> None:
        """HcsModifyComputeSystem(handle, configuration), the legacy synchronous form."""

    def hcs_close_compute_system(self, handle: Handle) -> None:
        """HcsCloseComputeSystem(handle)."""
