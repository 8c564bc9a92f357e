"""GUIDs as HNS writes and reads them: ``8-4-4-4-12`` hex digits, any case, braces optional.

The one parser for libhns and the plugins (CNI_NETNS, V1 paths, object IDs, hnsctl references).
String methods only: no ``uuid`` or ``re`` import on a plugin's start-up path.
"""

from __future__ import annotations

_HEX = frozenset("0123456789abcdefABCDEF")
_GROUPS = (8, 4, 4, 4, 12)


def parse(text: object) -> str | None:
    """The GUID in ``text`` (whitespace and one pair of braces around it allowed) as uppercase
    and brace-less, or None when it is not one."""
    if not isinstance(text, str):
        return None
    s = text.strip()
    if s[:1] == "{" and s[-1:] == "}":
        s = s[1:-1]
    parts = s.split("-")
    if tuple(map(len, parts)) != _GROUPS or not all(_HEX.issuperset(p) for p in parts):
        return None
    return s.upper()


def normalize(text: str) -> str:
    """The form HNS answers with (uppercase, no braces), for comparing IDs; text that is not a
    GUID is only trimmed and uppercased, so it still compares unequal to every GUID. That is
    ``parse(text)`` whenever it is a GUID (whose digits hold no brace or space), so it needs no
    parse: the doctor compares tens of thousands of IDs on a big node."""
    return text.strip().strip("{}").upper()


def is_guid(text: object) -> bool:
    return parse(text) is not None


def search(text: str) -> str | None:
    """The first GUID among ``text``'s ``/``-separated parts (a V1 path like
    ``/endpoints/<id>/attach``), canonical, or None."""
    for part in text.split("?")[0].split("/"):
        found = parse(part)
        if found is not None:
            return found
    return None
