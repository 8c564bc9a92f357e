"""Frozen-executable entry for hnsctl (PyInstaller builds from a script file)."""
from libhns.hnsctl import entry

entry()
