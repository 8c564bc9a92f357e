"""``Record``: value classes for the start-up path, without ``dataclasses``.

Generating a dataclass runs ``exec`` and pulls in ``inspect``: on every plugin start that cost
more than the whole ADD's HNS work on the simulator. A subclass declares its fields as
``__slots__`` and writes a plain ``__init__``; equality and ``repr`` come from the slots here.
"""

from __future__ import annotations


class Record:
    __slots__ = ()

    def _values(self) -> tuple:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and self._values() == other._values()  # type: ignore[attr-defined]

    __hash__ = None  # type: ignore[assignment]  # mutable by default; a frozen-style record sets its own

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{n}={getattr(self, n)!r}' for n in self.__slots__)})"


class FrozenRecord(Record):
    """A record that is never changed after ``__init__``, so it may be a set member or dict key."""

    __slots__ = ()

    def __hash__(self) -> int:
        return hash(self._values())
