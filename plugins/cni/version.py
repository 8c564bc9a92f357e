"""CNI versions this suite speaks, and their ordering."""

from __future__ import annotations

SUPPORTED = ("0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0")
LATEST = SUPPORTED[-1]
#: What a config without ``cniVersion`` means (the CNI specification: absent is 0.1.0).
IMPLICIT = "0.1.0"


def parse(version: str) -> tuple[int, int, int]:
    """'0.3.1' -> (0, 3, 1); raises ValueError for anything else."""
    parts = version.split(".")
    if len(parts) != 3 or not all(p.isdigit() for p in parts):
        raise ValueError(f"invalid version {version!r}")
    major, minor, patch = (int(p) for p in parts)
    return major, minor, patch


def at_least(version: str, minimum: str) -> bool:
    return parse(version) >= parse(minimum)


def supported_list() -> str:
    """The Go library's rendering, used in error details: ["0.1.0" "0.2.0" ...]."""
    return "[" + " ".join(f'"{v}"' for v in SUPPORTED) + "]"
