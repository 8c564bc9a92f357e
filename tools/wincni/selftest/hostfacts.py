"""The node's own facts a self-test reports and decides by: its OS build and patch level, the
adapter carrying its own connection, and whether a container runtime is there for the traffic
checks. ``LiveHost`` reads them; tests hand ``Context`` a fake with the same three methods.
"""

from __future__ import annotations

import platform
import shutil
import sys
from typing import Any, Mapping

#: The Windows registry key that holds the build and its patch level (UBR: update build revision).
_VERSION_KEY = r"SOFTWARE\Microsoft\Windows NT\CurrentVersion"
_VERSION_VALUES = ("ProductName", "DisplayVersion", "CurrentBuild", "UBR", "EditionID", "InstallationType")
#: The runtimes whose client the traffic checks would drive, by the program's name on PATH.
RUNTIMES = ("containerd", "dockerd", "docker", "ctr", "crictl")


class LiveHost:
    """The node this process runs on."""

    def __init__(self, env: Mapping[str, str], platform_name: str = sys.platform) -> None:
        self.env, self.platform = env, platform_name

    def os(self) -> dict[str, Any]:
        """The OS as the report shows it; on Windows its build and patch level from the registry."""
        facts: dict[str, Any] = {
            "system": platform.system(),
            "release": platform.release(),
            "version": platform.version(),
        }
        if self.platform == "win32":
            facts.update(_registry_version())
        return facts

    def connection_adapter(self) -> str | None:
        """The alias of the adapter the machine's default route leaves by (None when it cannot
        tell, or off Windows)."""
        if self.platform != "win32":
            return None
        return _best_interface_alias()

    def runtimes(self) -> list[str]:
        """The container runtimes' programs found on PATH."""
        path = self.env.get("PATH", self.env.get("Path", ""))  # the run's PATH, never this process's
        return [name for name in RUNTIMES if path and shutil.which(name, path=path)]


def _registry_version() -> dict[str, Any]:
    import winreg  # Windows only

    out: dict[str, Any] = {}
    try:
        with winreg.OpenKey(winreg.HKEY_LOCAL_MACHINE, _VERSION_KEY) as key:
            for name in _VERSION_VALUES:
                try:
                    out[name] = winreg.QueryValueEx(key, name)[0]
                except OSError:
                    continue
    except OSError as e:
        out["registryError"] = str(e)
    return out


def _best_interface_alias() -> str | None:
    """iphlpapi: the interface Windows would send to a public address through
    (``GetBestInterface``), by its alias (``ConvertInterfaceIndexToLuid``, ``…LuidToAlias``)."""
    import ctypes
    import socket
    import struct

    try:
        iphlpapi = ctypes.WinDLL("iphlpapi.dll")  # type: ignore[attr-defined]
        index = ctypes.c_ulong()
        destination = struct.unpack("<I", socket.inet_aton("192.0.2.1"))[0]  # any address off-link
        if iphlpapi.GetBestInterface(ctypes.c_ulong(destination), ctypes.byref(index)):
            return None
        luid = ctypes.c_uint64()
        if iphlpapi.ConvertInterfaceIndexToLuid(index, ctypes.byref(luid)):
            return None
        alias = ctypes.create_unicode_buffer(257)
        if iphlpapi.ConvertInterfaceLuidToAlias(ctypes.byref(luid), alias, len(alias)):
            return None
        return alias.value or None
    except OSError:
        return None
