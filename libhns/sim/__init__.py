"""The HNS simulator: the default backend off Windows (``LIBHNS_BACKEND=sim``).

It implements ``libhns.raw.RawHns`` over one JSON store and answers like HNS — the same
documents, the same HRESULTs — so the plugins can be developed, tested and demoed on Linux.

Environment (``Simulator.from_env``):

- ``LIBHNS_SIM_DIR``: the state directory (``state.json``, ``state.lock``,
  ``fault-counters.json``). Default: ``%LOCALAPPDATA%\\wincni\\hns-sim`` on Windows, else
  ``$XDG_STATE_HOME/wincni/hns-sim`` or ``~/.local/state/wincni/hns-sim``.
- ``LIBHNS_SIM_VERSION``: the HNS version ``GET /globals/version`` reports, e.g. ``13.2``
  (default, a Windows Server 2022 node; such nodes report 13.3, with the same features). Below
  9.2 the HCN (V2) calls fail with 0x8007007E, as when computenetwork.dll is missing; below 15.4
  ``HcnModifyLoadBalancer`` fails E_NOTIMPL (``libhns.sim.versions``).
- ``LIBHNS_SIM_ADAPTERS``: the node's host adapters, ``NAME=ADDRESS[,...]``, the first the
  default; a network bound to one reports its address (``libhns.sim.adapters``). Unset: every
  adapter is ``10.127.130.36``.
- ``LIBHNS_SIM_FAULTS``: comma-separated ``TARGET=HRESULT`` (every matching call fails) or
  ``TARGET#N=HRESULT`` (only the N-th matching call, counted across processes in the state
  directory). TARGET is an export name — ``HcnCreateEndpoint``, ``HcnModifyNamespace``,
  ``HcsOpenComputeSystem``, ``HcsModifyComputeSystem``, ``HNSCall`` — or
  ``HNSCall:METHOD PATH`` with PATH an fnmatch pattern, e.g.
  ``HNSCall:POST /endpoints/*/attach#1=0x803B0014``. A faulted HCN/HCS call raises
  ``HnsError`` with that HRESULT and its ErrorRecord; a faulted HNSCall returns
  ``{"Success":false,"Error":<meaning>,"ErrorCode":<hr>}``. A faulted call changes nothing.
  ``#N-M`` picks the N-th to M-th calls; instead of an HRESULT, ``hang:S`` blocks the call S
  seconds before it answers, and ``stale-ip`` / ``live-ip`` plant a previous sandbox's endpoint
  on the address an endpoint create asks for (``libhns.sim.faults``).

Simulator-only (no HNS equivalent): ``register_container`` / ``remove_container`` make a
running compute system for V1 hot attach (HCS), ``containers()``, ``reset_fault_counters()``,
``restart()`` (an HNS service restart: networks flagged EnableNonPersistent vanish with
their endpoints; load balancers stay) and ``open_handles`` for leak checks. A network on a host adapter gets that
adapter's address as its management IP unless the request carries a ProviderAddress policy or V1
``ManagementIP``; Overlay networks also get an assigned DrMacAddress.
"""

from __future__ import annotations

from libhns.sim.simulator import DEFAULT_VERSION, SimHandle, Simulator, parse_version
from libhns.sim.store import default_state_dir

__all__ = ["DEFAULT_VERSION", "SimHandle", "Simulator", "default_state_dir", "parse_version"]
