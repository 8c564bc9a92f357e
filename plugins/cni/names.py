"""Names that become file names on the node: network names, container and sandbox IDs, plugin types.

One rule for all of them: the CNI specification's pattern (a letter or digit, then letters, digits and
``_.-``), checked with string methods (no ``re`` compile on a plugin's start), plus what makes a
name unsafe as a file name on Windows: over a length limit, a device name (``NUL.lock`` is
``NUL``), or a trailing dot or space (Windows drops it, so ``cbr0.`` and ``cbr0`` are one file).
"""

from __future__ import annotations

#: How the reference words the pattern in its errors.
PATTERN = r"^[a-zA-Z0-9][a-zA-Z0-9_.\-]*$"
_FIRST = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
#: Every character a name may hold.
CHARS = _FIRST | frozenset("_.-")
_DEVICES = frozenset({"CON", "PRN", "AUX", "NUL", *(f"{d}{i}" for d in ("COM", "LPT") for i in range(10))})


def is_name(text: object) -> bool:
    """Whether ``text`` matches ``PATTERN`` (a trailing newline does not)."""
    return isinstance(text, str) and text[:1] in _FIRST and CHARS.issuperset(text)


def file_name_problem(name: str, limit: int) -> str | None:
    """Why ``name`` (of the pattern's characters) cannot safely become a file name, or None."""
    if len(name) > limit:
        return f"is {len(name)} characters long, over the limit of {limit}"
    if name.split(".", 1)[0].upper() in _DEVICES:
        return "is a Windows reserved device name (CON, PRN, AUX, NUL, COM0-9, LPT0-9)"
    if name.endswith((".", " ")):
        return "ends with a dot or space, which Windows drops from file names"
    return None
