"""Frozen-executable entry for wincni (PyInstaller builds from a script file)."""
from plugins.wincni.__main__ import entry

entry()
