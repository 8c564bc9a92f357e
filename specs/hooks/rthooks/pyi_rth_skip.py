"""Stands in for PyInstaller's run-time hooks of inspect, pkgutil and multiprocessing (see specs/wincni.spec)."""
