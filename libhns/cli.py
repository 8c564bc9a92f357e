"""Argument parsing shared by the operator commands (``hnsctl``, ``wincni``): a usage error is
raised, not ``sys.exit``-ed, so ``main(argv, ...)`` stays callable from tests and prints one line."""
from __future__ import annotations

import argparse
from typing import NoReturn


class UsageError(Exception):
    """Bad arguments: reported as one line on stderr, exit status 2."""


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message}")
