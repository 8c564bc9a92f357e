"""Frozen-executable entry for host-local (PyInstaller builds from a script file)."""
from plugins.ipam_host_local.__main__ import entry

entry()
