"""Where the Windows side of ``safefs`` used to live, kept so that what imports a name from here
still finds it: the SDDL reading (``sddl``, on any OS) directly, and each Win32 name (``winhandle``,
``winwalk``, ``winfolder``, ``winfs``) on first use, so importing this module loads no DLL. New
code imports from those modules.
"""

from __future__ import annotations

from basics.sddl import TRUSTED_SIDS, names, rights_mask, sddl_writers

__all__ = ["TRUSTED_SIDS", "names", "rights_mask", "sddl_writers"]

#: The module of each Windows name this module used to hold.
_WINDOWS = {
    **dict.fromkeys(("open_plain", "open_file", "create_new", "pin", "writers"), "basics.winhandle"),
    **dict.fromkeys(("walk",), "basics.winwalk"),
    **dict.fromkeys(
        ("entry_problem", "seize_tree", "claim", "survey", "secure", "checked", "Folder"), "basics.winfolder"
    ),
}


def __getattr__(name: str) -> object:
    module = _WINDOWS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    try:
        return getattr(importlib.import_module(module), name)
    except ImportError as exc:  # ctypes has no WinDLL: not Windows
        raise AttributeError(f"{__name__}.{name} exists on Windows only ({exc})") from None
