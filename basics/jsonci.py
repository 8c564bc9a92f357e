"""Reading JSON keys the way Go's encoding/json and HNS do: exact key first, else case-insensitive.

It lives in the lowest layer because both sides need it: libhns reads HNS documents and policies,
the plugins read Go-style CNI configs (``Name``/``name``), and libhns may not import the plugins.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Mapping


def get_ci(doc: Mapping[str, Any], key: str, default: Any = None) -> Any:
    """``doc[key]``, else the first key equal to ``key`` under case folding, else ``default``."""
    if key in doc:
        return doc[key]
    folded = key.casefold()
    for k, v in doc.items():
        if isinstance(k, str) and k.casefold() == folded:
            return v
    return default
