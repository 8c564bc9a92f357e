"""flanneld's ``net-conf.json``: which HNS network flanneld builds, checked against what Windows accepts.

The reference plugin never reads it, so a node whose CNI config names ``cbr0`` while flanneld made
``vxlan0``, or whose VXLAN settings Windows refuses, fails far away in HNS. Reading it here turns
those into one config error naming the fix, and lets the delegate type follow the backend.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from libhns.jsonci import get_ci
from plugins.cni.errors import INVALID_CONFIG, IO_FAILURE, CniError

VXLAN_PORT = 4789  # the only UDP port the Windows VXLAN stack uses
MIN_VNI = 4096  # Windows reserves lower VSIDs; also flanneld's Windows default
DELEGATES = {"vxlan": "win-overlay", "host-gw": "win-bridge"}
_HNS_TYPES = {"vxlan": "Overlay", "host-gw": "L2Bridge"}


@dataclass(frozen=True)
class Backend:
    path: str
    type: str  # Backend.Type, lower-case ("" when absent)
    name: str  # Backend.Name as written ("" when absent)
    vni: int = MIN_VNI
    port: int = 0  # 0: flanneld's default, which is VXLAN_PORT on Windows

    @property
    def network_name(self) -> str:
        """The HNS network flanneld creates: Backend.Name, else its per-backend default."""
        if self.name:
            return self.name
        return f"flannel.{self.vni}" if self.type == "vxlan" else "cbr0"

    def delegate_type(self) -> str:
        """The plugin for this backend; only vxlan and host-gw exist on Windows."""
        if self.type not in DELEGATES:
            raise _invalid(self.path, f"Backend.Type {json.dumps(self.type or None)} has no Windows plugin",
                           'flanneld on Windows supports "vxlan" (win-overlay) and "host-gw" (win-bridge); '
                           'fix net-conf.json or set "delegate": {"type": ...}')
        return DELEGATES[self.type]


def load(path: str) -> Backend | None:
    """None when the file is absent: a node may run without it (the reference never needs it)."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise CniError(IO_FAILURE, f"cannot read flanneld's net-conf.json {path}: {exc.strerror or exc}",
                       'fix its permissions, or set "netConf" to the file flanneld reads') from exc
    return parse(raw, path)


def parse(raw: bytes, path: str) -> Backend:
    try:
        doc = json.loads(raw.decode("utf-8-sig"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise _invalid(path, f"not JSON: {exc}", "flanneld cannot read it either: fix the file") from exc
    backend = get_ci(doc, "Backend", {}) if isinstance(doc, dict) else None
    if not isinstance(backend, dict):
        raise _invalid(path, "Backend must be an object", 'e.g. "Backend": {"name": "vxlan0", "type": "vxlan"}')
    kind, name = get_ci(backend, "Type", ""), get_ci(backend, "Name", "")
    if not isinstance(kind, str) or not isinstance(name, str):
        raise _invalid(path, "Backend.Type and Backend.Name must be strings", json.dumps(backend)[:200])
    return Backend(path=path, type=kind.lower(), name=name,
                   vni=_int(backend, "VNI", MIN_VNI, path), port=_int(backend, "Port", 0, path))


def check(backend: Backend, conf_name: str) -> None:
    """Reject what flanneld + HNS on Windows would fail on later, in terms an operator can act on."""
    if backend.type not in DELEGATES:
        return
    if backend.type == "vxlan":
        if backend.vni < MIN_VNI:
            raise _invalid(backend.path, f"Backend.VNI {backend.vni} is not allowed on Windows",
                           f"Windows VXLAN needs a VNI of at least {MIN_VNI} (flanneld's Windows default); "
                           f"set Backend.VNI to {MIN_VNI} or more")
        if backend.port not in (0, VXLAN_PORT):
            raise _invalid(backend.path, f"Backend.Port {backend.port} is not allowed on Windows",
                           f"the Windows VXLAN stack only uses UDP port {VXLAN_PORT}; "
                           f"remove Backend.Port or set it to {VXLAN_PORT}")
    if backend.network_name != conf_name:
        raise CniError(INVALID_CONFIG,
                       f"the HNS network is called {backend.network_name} but this config is named {conf_name}",
                       f'flanneld names its {_HNS_TYPES[backend.type]} network after Backend.Name in {backend.path}; '
                       f'set "name": "{backend.network_name}" in the CNI config (or Backend.Name to "{conf_name}")')


def _int(doc: dict, key: str, default: int, path: str) -> int:
    value: Any = get_ci(doc, key, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise _invalid(path, f"Backend.{key} must be an integer", f"got {json.dumps(value)[:80]}")
    return value


def _invalid(path: str, what: str, fix: str) -> CniError:
    return CniError(INVALID_CONFIG, f"flanneld's net-conf.json {path}: {what}", fix)
