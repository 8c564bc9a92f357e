"""Stands in for PyInstaller's first bootstrap script of the same name (see specs/wincni.spec).

PyInstaller's own, after installing its importer, lists the contents folder and stats every entry
in it (to put unzipped ``.egg`` folders on ``sys.path``), probes for three pywin32 folders and
imports ``pyimod03_ctypes`` and ``pyimod04_pywin32``: some twenty file system calls at every start,
each a round trip to the Wine server in the Windows lane. A wincni bundle has no eggs, no
pywin32 and nothing for the ctypes hook to do (specs/bootstrap/pyimod03_ctypes.py), so this one
keeps only what a command relies on: PyInstaller's importer and ``sys.frozen``.
"""

import sys

import pyimod02_importers

pyimod02_importers.install()
sys.frozen = True
