"""Stands in for PyInstaller's bootstrap module of the same name (see specs/wincni.spec).

PyInstaller's own imports ctypes at every start (on Windows also ctypes.util, and with it
subprocess and shutil) only to make ctypes look for DLLs in the contents folder first. wincni loads
system DLLs by name (computenetwork, vmcompute, kernel32, advapi32), never one of its own, so the
start-up cost bought nothing: ``install`` leaves ctypes alone and it is imported when a command
first needs it.
"""


def install():
    """Called by PyInstaller's bootstrap; there is nothing to install."""
