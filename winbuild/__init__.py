"""Cross-build of the Windows package on Linux: a Windows CPython and PyInstaller run under Wine."""
