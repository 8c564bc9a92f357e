"""JSON text to Python values and back, through the interpreter's C accelerator (``_json``).

Importing the ``json`` package compiles regular expressions the C scanner and encoder never use,
and with them imports ``re``, ``enum``, ``functools`` and ``collections``: about 4 ms of every
plugin start on Linux, and on Windows a dozen more files to open. ``loads`` and ``dumps`` take the
C path and behave as ``json.loads`` / ``json.dumps`` with the same arguments (a hypothesis test
holds them equal); text the C scanner refuses is handed to ``json`` itself, so every error is
json's own exception with json's message, and only a command that fails pays for the import.
"""

import _json

_WHITESPACE = " \t\n\r"
_CONSTANTS = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}


class _Decoding:
    """The attributes ``_json.make_scanner`` reads (those of a ``json.JSONDecoder``)."""

    __slots__ = ("strict", "object_hook", "object_pairs_hook", "parse_float", "parse_int", "parse_constant")

    def __init__(self, parse_constant) -> None:
        self.strict, self.object_hook, self.object_pairs_hook = True, None, None
        self.parse_float, self.parse_int, self.parse_constant = float, int, parse_constant


_scan = _json.make_scanner(_Decoding(_CONSTANTS.__getitem__))


def loads(text, *, parse_constant=None):
    """``json.loads(text)`` for ``str`` or UTF-8 ``bytes``; ``parse_constant`` as in json."""
    try:
        doc = text if isinstance(text, str) else text.decode("utf-8")
        scan = _scan if parse_constant is None else _json.make_scanner(_Decoding(parse_constant))
        value, end = scan(doc, len(doc) - len(doc.lstrip(_WHITESPACE)))
        if end == len(doc.rstrip(_WHITESPACE)):
            return value
    except Exception:  # noqa: BLE001 - whatever the C path refused (its errors need json.decoder loaded)
        pass
    # Not JSON, or JSON the C path does not read (a BOM, UTF-16): json decides, and explains.
    import json

    try:
        return json.loads(text, parse_constant=parse_constant)
    except RecursionError as exc:  # nested deeper than the stack: bad input like any other, for every caller
        raise ValueError(str(exc)) from None


def _unserializable(value):
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def dumps(value, *, indent=None, separators=None, sort_keys=False, ensure_ascii=True, default=None):
    """``json.dumps`` with these keyword arguments (their meaning and defaults are json's)."""
    item_sep, key_sep = separators or ((",", ": ") if indent is not None else (", ", ": "))
    string = _json.encode_basestring_ascii if ensure_ascii else _json.encode_basestring
    default = default or _unserializable
    encode = _json.make_encoder({}, default, string, None, key_sep, item_sep, sort_keys, False, True)
    if indent is None:
        return "".join(encode(value, 0))
    pad = " " * indent if isinstance(indent, int) else indent

    def nested(value, margin: str) -> str:
        # The C encoder has no indentation: containers are laid out here, scalars are its.
        if isinstance(value, dict):
            if not value:
                return "{}"
            inner = margin + pad
            items = sorted(value.items()) if sort_keys else value.items()
            return (
                "{"
                + item_sep.join(inner + _key(k, encode) + key_sep + nested(v, inner) for k, v in items)
                + margin
                + "}"
            )
        if isinstance(value, (list, tuple)):
            if not value:
                return "[]"
            inner = margin + pad
            return "[" + item_sep.join(inner + nested(v, inner) for v in value) + margin + "]"
        if value is None or isinstance(value, (str, int, float)):
            return "".join(encode(value, 0))
        return nested(default(value), margin)

    return nested(value, "\n")


def _key(key, encode) -> str:
    """A dict key as json writes it: strings as they are, numbers, booleans and null as text."""
    if isinstance(key, str):
        return "".join(encode(key, 0))
    if key is None or isinstance(key, (int, float)):
        return '"' + "".join(encode(key, 0)) + '"'
    raise TypeError(f"keys must be str, int, float, bool or None, not {type(key).__name__}")


def loads_bounded(data: bytes, max_depth: int, max_values: int):
    """``loads`` for text from anywhere: refused (``ValueError``) before parsing when it may hold
    more than ``max_values`` values (each costs tens of bytes parsed, far more than its text), and
    after when nested deeper than ``max_depth`` (so no reader of the value recurses without bound).
    The count is ``most_values``."""
    most = most_values(data)
    if most > max_values:
        raise ValueError(f"may hold {most} values, over the cap of {max_values}")
    value = loads(data)
    level = [(value, 1)]
    while level:
        item, depth = level.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        if depth > max_depth:
            raise ValueError(f"nested deeper than {max_depth}")
        level.extend((v, depth + 1) for v in children)
    return value


def most_values(data: bytes) -> int:
    """How many values JSON text may hold at most, counted from the bytes that can begin one
    (a comma, a bracket or brace, strings included): an upper bound, at C speed, before parsing."""
    return data.count(b",") + data.count(b"[") + data.count(b"{") + 1
