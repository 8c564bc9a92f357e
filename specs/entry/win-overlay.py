"""Frozen-executable entry for win-overlay (PyInstaller builds from a script file)."""
from plugins.win_overlay.__main__ import entry

entry()
