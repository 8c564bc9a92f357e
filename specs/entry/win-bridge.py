"""Frozen-executable entry for win-bridge (PyInstaller builds from a script file)."""
from plugins.win_bridge.__main__ import entry

entry()
