"""CNI_ARGS: ``K=V;K=V`` pairs, with the ``IgnoreUnknown`` convention."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Iterable

from .errors import INVALID_ENV, CniError


def parse_cni_args(raw: str) -> dict[str, str]:
    """Split CNI_ARGS into a dict (later keys win); a pair without '=' is an error, like libcni."""
    pairs: dict[str, str] = {}
    if not raw:
        return pairs
    for item in raw.split(";"):
        if not item:
            continue
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise CniError(INVALID_ENV, f'ARGS: invalid pair "{item}"', "CNI_ARGS must be K=V pairs separated by ';'")
        pairs[key] = value
    return pairs


def ignore_unknown(pairs: dict[str, str]) -> bool:
    return pairs.get("IgnoreUnknown", "").lower() in ("1", "true")


def check_known(pairs: dict[str, str], known: Iterable[str]) -> None:
    """Reject keys a plugin does not understand unless IgnoreUnknown is set (libcni LoadArgs)."""
    allowed = set(known) | {"IgnoreUnknown"}
    unknown = [k for k in pairs if k not in allowed]
    if unknown and not ignore_unknown(pairs):
        raise CniError(INVALID_ENV, f"ARGS: unknown args {unknown}", "set IgnoreUnknown=1 in CNI_ARGS to allow them")
