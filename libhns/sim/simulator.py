"""``Simulator``: the RawHns surface over the JSON store — HCN calls, HNSCall paths, HCS calls.

Each call loads the state (a snapshot for reads, a locked transaction for changes), looks the
object up in ``state.HnsState`` and lets its kind's record class (``kinds.KINDS``) apply HNS's
rules, then answers as HNS would: documents as JSON strings, failures as ``HnsError`` built from
the real HRESULT and ErrorRecord (V2, HCS) or as a ``Success:false`` envelope (HNSCall). Nothing
here depends on the kind: a new kind is a record class in ``kinds.py``. Handles are in-process
objects that remember only the kind and the ID, so a query always sees the latest state,
including other processes' changes.
"""

from __future__ import annotations

import time

from basics import jsontext
from basics.jsonci import get_ci
from libhns import errors
from libhns.errors import E_HANDLE, E_INVALIDARG, ERROR_MOD_NOT_FOUND, ERROR_NOT_FOUND, HCN_E_REQUEST_UNSUPPORTED
from libhns.guid import is_guid
from libhns.raw import hcn_function
from libhns.sim.adapters import parse_adapters
from libhns.sim.container import ComputeSystem
from libhns.sim.endpoint import Endpoint
from libhns.sim.faults import Fault, parse_faults
from libhns.sim.kinds import KINDS, V1_COLLECTIONS
from libhns.sim.namespace import Namespace
from libhns.sim.state import HnsState
from libhns.sim.store import Store, default_state_dir
from libhns.sim.validate import Reject, parse_document
from libhns.sim.versions import DEFAULT_VERSION, V2_MIN_VERSION

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any, Callable, Mapping

    from libhns.sim.adapters import Adapters

_COMPACT = (",", ":")  # HNS answers compact JSON


class SimHandle:
    """An open HCN object (or, with kind "ComputeSystem", an HCS container)."""

    __slots__ = ("kind", "id", "serial", "closed")

    def __init__(self, kind: str, id: str, serial: int = 0, closed: bool = False) -> None:
        self.kind, self.id, self.serial, self.closed = kind, id, serial, closed

    def __repr__(self) -> str:
        return f"SimHandle({self.kind!r}, {self.id!r}, serial={self.serial}, closed={self.closed})"


def parse_delay(text: str) -> float:
    """'2.5' -> 2.5 seconds; empty -> 0."""
    try:
        delay = float(text or 0)
    except ValueError:
        delay = -1.0
    if not delay >= 0:
        raise errors.EnvError(f"LIBHNS_SIM_MGMT_DELAY must be a number of seconds, not {text!r}")
    return delay


def parse_version(text: str) -> tuple[int, int]:
    """'13.2' -> (13, 2)."""
    major, dot, minor = (text or "").strip().partition(".")
    if not (dot and major.isascii() and major.isdigit() and minor.isascii() and minor.isdigit()):
        raise errors.EnvError(f"LIBHNS_SIM_VERSION must look like 13.2, not {text!r}")
    return int(major), int(minor)


class Simulator:
    """HNS on disk: implements ``libhns.raw.RawHns`` plus a few simulator-only helpers."""

    def __init__(
        self,
        directory: Path | str,
        *,
        version: tuple[int, int] = DEFAULT_VERSION,
        faults: str | tuple[Fault, ...] = (),
        adapters: Adapters = (),
        mgmt_delay: float = 0.0,
    ) -> None:
        self.store = Store(directory)
        self.mgmt_delay = mgmt_delay
        self.version = version
        self.faults = parse_faults(faults) if isinstance(faults, str) else tuple(faults)
        self.adapters = adapters
        self._open: set[int] = set()
        self._serial = 0

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> "Simulator":
        """From ``LIBHNS_SIM_DIR`` (default: per-user state dir), ``LIBHNS_SIM_VERSION``,
        ``LIBHNS_SIM_FAULTS``, ``LIBHNS_SIM_MGMT_DELAY``, ``LIBHNS_SIM_ADAPTERS``."""
        directory = env.get("LIBHNS_SIM_DIR") or default_state_dir(env)
        version = parse_version(env["LIBHNS_SIM_VERSION"]) if env.get("LIBHNS_SIM_VERSION") else DEFAULT_VERSION
        return cls(
            directory,
            version=version,
            faults=env.get("LIBHNS_SIM_FAULTS", ""),
            adapters=parse_adapters(env.get("LIBHNS_SIM_ADAPTERS", "")),
            mgmt_delay=parse_delay(env.get("LIBHNS_SIM_MGMT_DELAY", "")),
        )

    @property
    def directory(self) -> Path:
        from pathlib import Path  # tests and hnsctl only

        return Path(self.store.directory)

    @property
    def open_handles(self) -> int:
        """How many handles this instance returned and nobody closed yet (tests check for leaks)."""
        return len(self._open)

    # --- plumbing --------------------------------------------------------------------------------
    def _fault(self, function: str, method: str | None = None, path: str | None = None) -> Fault | None:
        """The first configured fault that picks this call, if any (counts ``#N`` calls)."""
        hit: Fault | None = None
        counted: dict[str, int] = {}
        for f in self.faults:
            if not f.matches(function, method, path):
                continue
            if f.nth is not None:
                if f.target not in counted:
                    counted[f.target] = self.store.bump_counter(f.target)
                if not f.picks(counted[f.target]):
                    continue
            hit = hit or f
        return hit

    @staticmethod
    def _before(fault: Fault, plant: Callable[[bool], Any] | None) -> None:
        """A fault that is not a failure: block for its time, or plant its endpoint."""
        if fault.hang:
            time.sleep(fault.hang)
        if fault.plant and plant is not None:
            plant(fault.plant == "live-ip")

    def _error(self, call: str, hresult: int, message: str | None = None) -> errors.HnsError:
        return errors.from_hresult(call, hresult, errors.error_record(hresult, message))

    def _run(
        self, call: str, fn: Callable[[], Any], *, v2: bool = True, plant: Callable[[bool], Any] | None = None
    ) -> Any:
        """Faults, the V2 availability check, and Reject -> HnsError for one HCN/HCS call."""
        fault = self._fault(call)
        if fault is not None and fault.hresult is not None:
            raise self._error(call, fault.hresult)
        if fault is not None:
            self._before(fault, plant)
        if v2 and self.version < V2_MIN_VERSION:
            raise self._error(call, ERROR_MOD_NOT_FOUND, "computenetwork.dll is not available before HNS 9.2.")
        try:
            return fn()
        except Reject as r:
            raise self._error(call, r.hresult, r.message) from None

    def _read(self) -> HnsState:
        return HnsState(self.store.snapshot(), KINDS, self.adapters, self.mgmt_delay, self.version)

    def _write(self, change: Callable[[HnsState], Any]) -> Any:
        """Run ``change`` on the state under the store's lock; written back unless it raises."""
        with self.store.transaction() as data:
            st = HnsState(data, KINDS, self.adapters, self.mgmt_delay, self.version)
            out = change(st)
            st.dump()
            return out

    def _handle(self, kind: str, id_: str) -> SimHandle:
        self._serial += 1
        h = SimHandle(kind, id_, self._serial)
        self._open.add(h.serial)
        return h

    def _live(self, handle: Any, kind: str) -> SimHandle:
        if not isinstance(handle, SimHandle) or handle.closed or handle.kind != kind:
            raise Reject(E_HANDLE, "The handle is invalid.")
        return handle

    # --- HCN -------------------------------------------------------------------------------------
    def hcn_enumerate(self, kind: str, query: str) -> str:
        def run() -> str:
            doc = parse_document(query, allow_empty=True)
            filt = P_get(doc, "Filter")
            if isinstance(filt, str) and filt.strip():
                filt = parse_document(filt)
            elif not isinstance(filt, dict):
                filt = {}
            return jsontext.dumps(self._read().enumerate(kind, filt), separators=_COMPACT)

        return self._run(hcn_function("Enumerate", kind), run)

    def hcn_create(self, kind: str, id: str | None, settings: str, network: Any | None = None) -> SimHandle:
        cls = KINDS[kind]
        fixed = None if id is None or not id.strip("{}0-") else str(id).upper()  # GUID_NULL: HNS assigns

        def run() -> SimHandle:
            doc = parse_document(settings)
            parent = self._live(network, cls.PARENT).id if cls.PARENT else None
            rec = self._write(lambda st: cls.hcn_create(st, doc, fixed, parent))
            return self._handle(kind, rec.id)

        def plant(live: bool) -> None:  # a fault's stale endpoint, where this create will look
            if cls is Endpoint and isinstance(network, SimHandle):
                self.plant_endpoint(network.id, _requested_ip(settings, "IpConfigurations"), live)

        return self._run(hcn_function("Create", kind), run, plant=plant)

    def hcn_open(self, kind: str, id: str) -> SimHandle:
        def run() -> SimHandle:
            return self._handle(kind, self._read().get(kind, str(id), ERROR_NOT_FOUND).id)

        return self._run(hcn_function("Open", kind), run)

    def hcn_modify(self, kind: str, handle: Any, settings: str) -> None:
        def run() -> None:
            h = self._live(handle, kind)
            doc = parse_document(settings)
            self._write(lambda st: st.get(kind, h.id).modify(st, doc))

        return self._run(hcn_function("Modify", kind), run)

    def hcn_query(self, kind: str, handle: Any, query: str) -> str:
        def run() -> str:
            h = self._live(handle, kind)
            q = parse_document(query, allow_empty=True)
            st = self._read()
            rec = st.get(kind, h.id)
            sv = P_get(q, "SchemaVersion")
            v1 = isinstance(sv, dict) and int(P_get(sv, "Major") or 2) == 1
            return jsontext.dumps(rec.v1(st) if v1 else rec.v2(st), separators=_COMPACT)

        return self._run(hcn_function("Query", kind), run)

    def hcn_delete(self, kind: str, id: str) -> None:
        return self._run(hcn_function("Delete", kind), lambda: self._write(lambda st: st.delete(kind, str(id))))

    def hcn_close(self, kind: str, handle: Any) -> None:
        if isinstance(handle, SimHandle) and not handle.closed:
            handle.closed = True
            self._open.discard(handle.serial)

    # --- HCS -------------------------------------------------------------------------------------
    def _hcs_error(self, call: str, hresult: int, message: str | None = None) -> errors.HnsError:
        text = message or errors.hresult_message(hresult) or "Unknown error."
        signed = hresult - (1 << 32) if hresult & 0x80000000 else hresult
        record = jsontext.dumps({"Error": signed, "ErrorMessage": text}, separators=_COMPACT)
        return errors.from_hresult(call, hresult, record)

    def _run_hcs(self, call: str, fn: Callable[[], Any]) -> Any:
        fault = self._fault(call)
        if fault is not None and fault.hresult is not None:
            raise self._hcs_error(call, fault.hresult)
        if fault is not None:
            self._before(fault, None)
        try:
            return fn()
        except Reject as r:
            raise self._hcs_error(call, r.hresult, r.message) from None

    def hcs_open_compute_system(self, id: str) -> SimHandle:
        def run() -> SimHandle:
            return self._handle("ComputeSystem", self._read().get("ComputeSystem", id).id)

        return self._run_hcs("HcsOpenComputeSystem", run)

    def hcs_modify_compute_system(self, handle: Any, configuration: str) -> None:
        def run() -> None:
            h = self._live(handle, "ComputeSystem")
            doc = parse_document(configuration, code=E_INVALIDARG)
            if str(P_get(doc, "ResourceType") or "").casefold() != "network":
                raise Reject(E_INVALIDARG, "Only ResourceType Network is simulated.")
            action = str(P_get(doc, "RequestType") or "").casefold()
            if action not in ("add", "remove"):
                raise Reject(E_INVALIDARG, f"Unsupported RequestType {P_get(doc, 'RequestType')!r}.")

            def change(st: HnsState) -> None:
                st.get("ComputeSystem", h.id)
                ep = st.get("Endpoint", str(P_get(doc, "Settings") or ""))
                if action == "add":
                    ep.container_attach(st, h.id)
                else:
                    ep.container_detach(st, h.id)

            self._write(change)

        return self._run_hcs("HcsModifyComputeSystem", run)

    def hcs_get_compute_system_properties(self, handle: Any, query: str) -> str:
        """The container's properties, whatever ``query`` asks (hcsshim asks for the defaults)."""

        def run() -> str:
            h = self._live(handle, "ComputeSystem")
            parse_document(query, allow_empty=True, code=E_INVALIDARG)
            return jsontext.dumps(self._read().get("ComputeSystem", h.id).properties(), separators=_COMPACT)

        return self._run_hcs("HcsGetComputeSystemProperties", run)

    def hcs_close_compute_system(self, handle: Any) -> None:
        self.hcn_close("ComputeSystem", handle)

    # --- HNSCall (V1) ----------------------------------------------------------------------------
    def hns_call(self, method: str, path: str, request: str) -> str:
        fault = self._fault("HNSCall", method, path)
        if fault is not None and fault.hresult is not None:
            return _envelope_error(fault.hresult)
        if fault is not None:
            self._before(fault, lambda live: self._plant_v1(method, path, request, live))
        try:
            output = self._v1_dispatch(method.upper(), path, request)
        except Reject as r:
            return _envelope_error(r.hresult, r.message)
        body: dict[str, Any] = {"Success": True}
        if output is not None:
            body["Output"] = output
        return jsontext.dumps(body, separators=_COMPACT)

    def _v1_dispatch(self, method: str, path: str, request: str) -> Any:
        """``/globals/version``, and ``/<collection>/[<id>[/<action>]]`` for each kind V1 serves:
        GET lists or shows, DELETE deletes, POST creates, updates or runs the kind's action."""
        parts = [p for p in path.split("?")[0].split("/") if p]
        if not parts:
            raise Reject(HCN_E_REQUEST_UNSUPPORTED)
        coll, rest = parts[0].casefold(), parts[1:]
        if rest and not is_guid(rest[0]) and coll != "globals":
            raise Reject(ERROR_NOT_FOUND)
        if coll == "globals" and rest == ["version"] and method == "GET":
            return {"Major": self.version[0], "Minor": self.version[1]}
        cls = V1_COLLECTIONS.get(coll)
        if cls is None:
            raise Reject(HCN_E_REQUEST_UNSUPPORTED)
        kind = cls.KIND
        if method == "GET" and not rest:
            st = self._read()
            return [rec.v1(st) for rec in st.table(kind).values()]
        if method == "GET" and len(rest) == 1:
            st = self._read()
            return st.get(kind, rest[0], ERROR_NOT_FOUND).v1(st)
        if method == "DELETE" and len(rest) == 1:
            return self._write(lambda st: st.delete(kind, rest[0]).v1(st))
        if method != "POST" or len(rest) > 2 or (len(rest) == 2 and rest[1].casefold() not in cls.V1_ACTIONS):
            raise Reject(HCN_E_REQUEST_UNSUPPORTED)
        doc = parse_document(request, allow_empty=not rest and cls.V1_CREATE_MAY_BE_EMPTY, code=E_INVALIDARG)
        if not rest:
            return self._write(lambda st: cls.v1_create(st, doc).v1(st))
        if len(rest) == 1:

            def update(st: HnsState) -> Any:
                rec = st.get(kind, rest[0], ERROR_NOT_FOUND)
                rec.v1_update(st, doc)
                return rec.v1(st)

            return self._write(update)
        return self._write(lambda st: st.get(kind, rest[0], ERROR_NOT_FOUND).v1_action(st, rest[1].casefold(), doc))

    # --- simulator-only helpers (tests, hnsctl) -------------------------------------------------
    def register_container(self, container_id: str) -> None:
        """Make ``container_id`` a running compute system, so HcsOpenComputeSystem finds it."""
        self._run_hcs("RegisterContainer", lambda: self._write(lambda st: ComputeSystem.register(st, container_id)))

    def remove_container(self, container_id: str) -> None:
        """Stop a compute system: its endpoints lose it from SharedContainers."""
        self._run_hcs("RemoveContainer", lambda: self._write(lambda st: st.delete("ComputeSystem", container_id)))

    def _plant_v1(self, method: str, path: str, request: str, live: bool) -> None:
        if method.upper() != "POST" or path.split("?")[0].strip("/").casefold() != "endpoints":
            return
        try:
            doc = jsontext.loads(request)
        except ValueError:
            return
        network = P_get(doc, "VirtualNetwork") or P_get(doc, "VirtualNetworkName")
        if isinstance(network, str) and network:
            self.plant_endpoint(network, _requested_ip(request, "IPAddress"), live)

    def plant_endpoint(self, network: str, ip: str | None, live: bool = False) -> str | None:
        """What a gone sandbox leaves behind: an endpoint ``previous-<n>_<network name>`` on
        ``ip`` in the network (ID or name), attached to nothing, or with ``live`` to a new
        namespace. Its ID; None when the network or the address is not there to take."""

        def change(st: HnsState) -> str | None:
            net = st.find("Network", network)
            if net is None:
                ids = st.enumerate("Network", {"Name": network})
                if not ids:
                    return None
                net = st.get("Network", ids[0])
            doc: dict[str, Any] = {"Name": f"previous-{len(st.table('Endpoint')) + 1}_{net.name}"}
            if ip:
                doc["IpConfigurations"] = [{"IpAddress": ip}]
            try:
                ep = Endpoint.create(st, net.id, doc)
            except Reject:
                return None
            if live:
                Namespace.create(st, {}).add_endpoint(ep)
            return ep.id

        return self._write(change)

    def containers(self) -> list[dict[str, Any]]:
        st = self._read()
        return [c.v1(st) for c in st.table("ComputeSystem").values()]

    def restart(self) -> list[str]:
        """Simulate ``Restart-Service hns``: non-persistent networks and their endpoints are
        dropped (the names of the dropped networks); open handles stay usable objects."""
        return self._write(lambda st: st.restart())

    def probe(
        self, src: tuple[str, int], dst: tuple[str, int], protocol: int, now: float | None = None
    ) -> tuple[list[Any], bool, dict | None]:
        """Whether a packet from ``src`` to ``dst`` (address, port) passes this node's endpoint
        ACLs (``aclwalk.walk``): the steps, the verdict and the deciding rule. Stateful: what
        passed is remembered as a flow (``aclwalk.FLOW_TTL``), so its replies pass. Raises
        ``libhns.errors.SimulatorLimit`` where HNS's answer is unknown."""
        from libhns.sim import aclwalk

        when = time.time() if now is None else now

        def run(st: HnsState) -> tuple[list[Any], bool, dict | None]:
            local = [(ep.id, ep.ips(), ep.doc) for ep in st.table("Endpoint").values() if not ep.is_remote()]
            steps, flows = aclwalk.walk(local, st.data.get("flows", []), src, dst, protocol, when)
            st.data["flows"] = flows
            return (steps, *aclwalk.verdict(steps))

        return self._write(run)

    def reset_fault_counters(self) -> None:
        self.store.reset_counters()


def P_get(doc: Any, key: str) -> Any:
    return get_ci(doc, key) if isinstance(doc, dict) else None


def _requested_ip(document: str, key: str) -> str | None:
    """The first address an endpoint request asks for: V2 ``IpConfigurations[0].IpAddress``,
    V1 ``IPAddress``."""
    try:
        doc = jsontext.loads(document)
    except ValueError:
        return None
    value = P_get(doc, key)
    if isinstance(value, list):
        value = P_get(value[0], "IpAddress") if value else None
    return value if isinstance(value, str) and value else None


def _envelope_error(hresult: int, message: str | None = None) -> str:
    """V1 reports the condition's sentence ("Element not found."); details stay out, as in HNS."""
    text = errors.hresult_message(hresult) or message or f"HRESULT 0x{hresult:08X}"
    return jsontext.dumps({"Success": False, "Error": text, "ErrorCode": hresult & 0xFFFFFFFF}, separators=_COMPACT)
