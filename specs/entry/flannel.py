"""Frozen-executable entry for flannel (PyInstaller builds from a script file)."""
from plugins.flannel.__main__ import entry

entry()
