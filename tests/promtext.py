"""A strict reader of Prometheus' text exposition format (version 0.0.4), for the tests.

Written from the format's specification ("Exposition formats", prometheus.io) rather than taken
from prometheus_client (not a dependency): every rule it states is enforced, so output that a
Prometheus server or windows_exporter's textfile collector would reject fails here too.

- lines end with ``\\n``, the last one too; empty lines are ignored;
- ``# HELP name text`` (``\\\\`` and ``\\n`` escaped) and ``# TYPE name type`` at most once per
  metric, TYPE before the metric's first sample; other ``#`` lines are comments;
- a sample is ``name{label="value",...} value [timestamp]``: names ``[a-zA-Z_:][a-zA-Z0-9_:]*``,
  label names ``[a-zA-Z_][a-zA-Z0-9_]*`` not starting ``__`` and not repeated, values in double
  quotes with ``\\\\``, ``\\"`` and ``\\n`` escaped; the value a Go float (``NaN``, ``+Inf``,
  ``-Inf`` too), the timestamp an integer;
- all of a metric's lines form one group, and no name-and-labels is given twice.
"""

from __future__ import annotations

import re

NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
LABEL = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
TYPES = ("counter", "gauge", "histogram", "summary", "untyped")
_ESCAPES = {"\\": "\\", '"': '"', "n": "\n"}


class FormatError(ValueError):
    pass


def parse(text: str) -> dict[str, dict]:
    """{metric: {"help": str, "type": str, "samples": {labels tuple: float}}}; FormatError naming
    the line for anything the format does not allow."""
    if text and not text.endswith("\n"):
        raise FormatError("the last line does not end with a line feed")
    families: dict[str, dict] = {}
    done: set[str] = set()
    current = ""
    for n, line in enumerate(text.split("\n")[:-1], 1):
        if not line:
            continue
        if line.startswith("#"):
            parts = line.split(" ", 3)
            if len(parts) >= 3 and parts[1] in ("HELP", "TYPE"):
                _meta(families, parts, n, done, current)
            continue
        name, labels, value = _sample(line, n)
        if name != current:
            if name in done:
                raise FormatError(f"line {n}: {name}'s lines are not one group")
            if current:
                done.add(current)
            current = name
        fam = families.setdefault(name, {"help": None, "type": None, "samples": {}})
        if labels in fam["samples"]:
            raise FormatError(f"line {n}: {name}{labels} given twice")
        fam["samples"][labels] = value
    return families


def _meta(families: dict, parts: list[str], n: int, done: set[str], current: str) -> None:
    kind, name = parts[1], parts[2]
    if not NAME.fullmatch(name):
        raise FormatError(f"line {n}: bad metric name {name!r}")
    if name in done or (name == current and families.get(name, {}).get("samples")):
        raise FormatError(f"line {n}: {kind} for {name} after its samples")
    fam = families.setdefault(name, {"help": None, "type": None, "samples": {}})
    key = kind.lower()
    if fam[key] is not None:
        raise FormatError(f"line {n}: a second {kind} for {name}")
    text = parts[3] if len(parts) > 3 else ""
    if kind == "TYPE":
        if text not in TYPES:
            raise FormatError(f"line {n}: unknown type {text!r}")
        fam["type"] = text
    else:
        fam["help"] = _unescape(text, n, quotes=False)


def _sample(line: str, n: int) -> tuple[str, tuple, float]:
    m = NAME.match(line)
    if not m:
        raise FormatError(f"line {n}: no metric name")
    name, rest = m.group(), line[m.end() :]
    labels: list[tuple[str, str]] = []
    if rest.startswith("{"):
        rest = rest[1:]
        while not rest.startswith("}"):
            lm = LABEL.match(rest)
            if not lm or lm.group().startswith("__") or not rest[lm.end() :].startswith('="'):
                raise FormatError(f"line {n}: bad label at {rest!r}")
            value, rest = _quoted(rest[lm.end() + 2 :], n)
            if lm.group() in dict(labels):
                raise FormatError(f"line {n}: label {lm.group()} twice")
            labels.append((lm.group(), value))
            if rest.startswith(","):
                rest = rest[1:]
            elif not rest.startswith("}"):
                raise FormatError(f"line {n}: expected , or }} at {rest!r}")
        rest = rest[1:]
    fields = rest.split(" ")
    if fields[0] != "" or len(fields) not in (2, 3):
        raise FormatError(f"line {n}: expected ' value [timestamp]', got {rest!r}")
    value = _float(fields[1], n)
    if len(fields) == 3 and not re.fullmatch(r"-?[0-9]+", fields[2]):
        raise FormatError(f"line {n}: bad timestamp {fields[2]!r}")
    return name, tuple(sorted(labels)), value


def _quoted(text: str, n: int) -> tuple[str, str]:
    out, i = [], 0
    while i < len(text):
        c = text[i]
        if c == '"':
            return "".join(out), text[i + 1 :]
        if c == "\n":
            raise FormatError(f"line {n}: a raw line feed in a label value")
        if c == "\\":
            if i + 1 >= len(text) or text[i + 1] not in _ESCAPES:
                raise FormatError(f"line {n}: bad escape in a label value")
            out.append(_ESCAPES[text[i + 1]])
            i += 2
            continue
        out.append(c)
        i += 1
    raise FormatError(f"line {n}: unterminated label value")


def _unescape(text: str, n: int, quotes: bool) -> str:
    out, i = [], 0
    while i < len(text):
        if text[i] == "\\":
            nxt = text[i + 1 : i + 2]
            if nxt not in ("\\", "n") and not (quotes and nxt == '"'):
                raise FormatError(f"line {n}: bad escape in HELP")
            out.append(_ESCAPES[nxt])
            i += 2
            continue
        out.append(text[i])
        i += 1
    return "".join(out)


def _float(text: str, n: int) -> float:
    if text in ("NaN", "+Inf", "-Inf"):
        return float(text.lstrip("+"))
    if not re.fullmatch(r"[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?", text):
        raise FormatError(f"line {n}: bad value {text!r}")
    return float(text)
