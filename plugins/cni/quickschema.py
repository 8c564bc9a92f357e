"""A small JSON Schema checker for the happy path, so a valid config never imports jsonschema.

jsonschema costs 60-80 ms of start-up, and every pod ADD runs two or three of our processes.
This checker understands only the keywords our schemas use; on anything else it answers
"don't know" (None) and the caller falls back to jsonschema, which also produces the precise
error message whenever a config is invalid. It is therefore never the last word on a rejection.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_IGNORED = {"$schema", "$id", "title", "description", "$defs", "definitions", "default", "examples", "$comment"}
_TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "null": lambda v: v is None,
}


class _Unknown(Exception):
    """A keyword, format or reference this checker does not handle."""


def is_valid(instance: Any, schema: dict) -> bool | None:
    """True/False when sure, None when the schema uses something beyond this checker."""
    try:
        return _check(instance, schema, schema)
    except _Unknown:
        return None


def _check(value: Any, schema: Any, root: dict) -> bool:
    if schema is True:
        return True
    if schema is False:
        return False
    if not isinstance(schema, dict):
        raise _Unknown(schema)
    for key, arg in schema.items():
        if key in _IGNORED:
            continue
        check = _KEYWORDS.get(key)
        if check is None:
            raise _Unknown(key)
        if not check(value, arg, root, schema):
            return False
    return True


def _type(value: Any, arg: Any, root: dict, schema: dict) -> bool:
    names = arg if isinstance(arg, list) else [arg]
    if any(n not in _TYPES for n in names):
        raise _Unknown(arg)
    return any(_TYPES[n](value) for n in names)


def _properties(value: Any, arg: dict, root: dict, schema: dict) -> bool:
    if not isinstance(value, dict):
        return True
    return all(_check(value[k], sub, root) for k, sub in arg.items() if k in value)


def _additional(value: Any, arg: Any, root: dict, schema: dict) -> bool:
    if not isinstance(value, dict):
        return True
    if "patternProperties" in schema:
        raise _Unknown("patternProperties")
    known = schema.get("properties", {})
    return all(_check(v, arg, root) for k, v in value.items() if k not in known)


def _required(value: Any, arg: list, root: dict, schema: dict) -> bool:
    return not isinstance(value, dict) or all(k in value for k in arg)


def _items(value: Any, arg: Any, root: dict, schema: dict) -> bool:
    if not isinstance(value, list):
        return True
    if not isinstance(arg, (dict, bool)):
        raise _Unknown("items")
    return all(_check(v, arg, root) for v in value)


def _enum(value: Any, arg: list, root: dict, schema: dict) -> bool:
    # JSON equality: 1 == true in Python, not in JSON Schema.
    return any(type(value) is type(a) and value == a for a in arg)


def _minimum(value: Any, arg: Any, root: dict, schema: dict) -> bool:
    return not _TYPES["number"](value) or value >= arg


def _maximum(value: Any, arg: Any, root: dict, schema: dict) -> bool:
    return not _TYPES["number"](value) or value <= arg


def _min_length(value: Any, arg: int, root: dict, schema: dict) -> bool:
    return not isinstance(value, str) or len(value) >= arg


def _max_length(value: Any, arg: int, root: dict, schema: dict) -> bool:
    return not isinstance(value, str) or len(value) <= arg


def _min_items(value: Any, arg: int, root: dict, schema: dict) -> bool:
    return not isinstance(value, list) or len(value) >= arg


def _max_items(value: Any, arg: int, root: dict, schema: dict) -> bool:
    return not isinstance(value, list) or len(value) <= arg


def _pattern(value: Any, arg: str, root: dict, schema: dict) -> bool:
    import re  # only a schema with "pattern" pays for it

    return not isinstance(value, str) or re.search(arg, value) is not None


def _format(value: Any, arg: str, root: dict, schema: dict) -> bool:
    if not isinstance(value, str):
        return True
    from basics import ipaddr

    try:
        if arg == "ip":
            ipaddr.ip_address(value)
        elif arg == "cidr":
            if "/" not in value:
                return False
            ipaddr.ip_interface(value)
        else:
            raise _Unknown(arg)
    except ValueError:
        return False
    return True


def _ref(value: Any, arg: str, root: dict, schema: dict) -> bool:
    if not arg.startswith("#/"):
        raise _Unknown(arg)
    target: Any = root
    for part in arg[2:].split("/"):
        if not isinstance(target, dict) or part not in target:
            raise _Unknown(arg)
        target = target[part]
    return _check(value, target, root)


def _any_of(value: Any, arg: list, root: dict, schema: dict) -> bool:
    return any(_check(value, sub, root) for sub in arg)


def _one_of(value: Any, arg: list, root: dict, schema: dict) -> bool:
    return sum(1 for sub in arg if _check(value, sub, root)) == 1


def _all_of(value: Any, arg: list, root: dict, schema: dict) -> bool:
    return all(_check(value, sub, root) for sub in arg)


_KEYWORDS = {
    "type": _type,
    "properties": _properties,
    "additionalProperties": _additional,
    "required": _required,
    "items": _items,
    "enum": _enum,
    "minimum": _minimum,
    "maximum": _maximum,
    "minLength": _min_length,
    "maxLength": _max_length,
    "minItems": _min_items,
    "maxItems": _max_items,
    "pattern": _pattern,
    "format": _format,
    "$ref": _ref,
    "anyOf": _any_of,
    "oneOf": _one_of,
    "allOf": _all_of,
}
