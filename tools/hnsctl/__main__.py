"""``python -m tools.hnsctl``."""

from tools.hnsctl.cli import entry

entry()
