"""Cross-build of the Windows release on Linux: a Windows CPython and PyInstaller run under Wine."""
