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
