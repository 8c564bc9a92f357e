"""Build-time: code objects that keep their line numbers but not their column ranges.

Since 3.11 every instruction's location holds a line range and a column range (the ``^^^^`` under
a traceback's line); the columns are about 30% of the bundle's compressed code, and the standard
library of the Windows embeddable CPython comes only as ``.pyc`` files compiled with them, out of
reach of ``-X no_debug_ranges``. ``lines_only`` re-encodes each location table with CPython's "no
column" entries (Objects/locations.md: one start byte ``1 code(4) length-1(3)``, code 13 a line
delta as a signed varint, code 15 no location), and ``check`` proves the line numbers unchanged:
the build refuses rather than ship a table this interpreter reads differently.
"""

import types

_NO_COLUMNS, _NO_LOCATION, _MAX_RUN = 13, 15, 8


def _varint(value: int) -> bytes:
    out = bytearray()
    while value >= 64:
        out.append(0x40 | (value & 63))
        value >>= 6
    out.append(value)
    return bytes(out)


def _signed_varint(value: int) -> bytes:
    return _varint((-value << 1) | 1 if value < 0 else value << 1)


def _table(first_line: int, lines: list) -> bytes:
    """A location table of ``lines`` (one entry per code unit, ``None`` for no location)."""
    table, previous, i = bytearray(), first_line, 0
    while i < len(lines):
        line, run = lines[i], 1
        while run < _MAX_RUN and i + run < len(lines) and lines[i + run] == line:
            run += 1
        if line is None:
            table.append(0x80 | _NO_LOCATION << 3 | run - 1)
        else:
            table.append(0x80 | _NO_COLUMNS << 3 | run - 1)
            table += _signed_varint(line - previous)
            previous = line
        i += run
    return bytes(table)


def lines_only(code: types.CodeType) -> types.CodeType:
    """``code`` and every code object among its constants, with line numbers and no columns."""
    consts = tuple(lines_only(c) if isinstance(c, types.CodeType) else c for c in code.co_consts)
    lines = [position[0] for position in code.co_positions()]
    return code.replace(co_consts=consts, co_linetable=_table(code.co_firstlineno, lines))


def _lines(code: types.CodeType) -> list:
    """The line of each code unit, as the interpreter reads the table (positions and line ranges)."""
    by_range = [line for start, end, line in code.co_lines() for _ in range(start, end, 2)]
    return [p[0] for p in code.co_positions()] + by_range


def check(original: types.CodeType, stripped: types.CodeType) -> None:
    """Raise ValueError unless ``stripped`` has ``original``'s line of every instruction."""
    if _lines(original) != _lines(stripped):
        raise ValueError(f"{original.co_filename}:{original.co_firstlineno} {original.co_qualname}: line table differs")
    for a, b in zip(original.co_consts, stripped.co_consts):
        if isinstance(a, types.CodeType):
            check(a, b)
