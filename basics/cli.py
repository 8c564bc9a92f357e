"""Argument parsing shared by the operator commands (``hnsctl``, ``wincni``): a usage error is
raised, not ``sys.exit``-ed, so ``main(argv, ...)`` stays callable from tests and prints one line."""

from __future__ import annotations

import argparse
from typing import NoReturn


class UsageError(Exception):
    """Bad arguments: reported on stderr (what is wrong, then the usage line), exit status 2."""


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message}\n{self.format_usage().rstrip()}")


class PathArg:
    """An option's ``type=`` saying what its path names: ``FILE``, ``DIR`` or ``FILE_OR_DIR``. The
    value stays the string given; the kind is what a reader (``basics.inputfile`` for a file) and
    a test walking every parser go by, so a new file flag is known for one without a list."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.__name__ = kind  # argparse's "invalid <name> value"

    def __call__(self, text: str) -> str:
        return text

    def __repr__(self) -> str:
        return f"PathArg({self.kind!r})"


FILE, DIR, FILE_OR_DIR = PathArg("file"), PathArg("folder"), PathArg("file or folder")
