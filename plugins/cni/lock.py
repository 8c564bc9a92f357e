"""The store lock: the same file and primitive as the Go plugin (go-filemutex), so the two
exclude each other on a shared node: flock(LOCK_EX) on POSIX, LockFileEx on the first byte
on Windows. Both block until granted, like the reference.
"""
from __future__ import annotations

import os
import sys
from types import TracebackType

LOCK_NAME = "lock"


class FileLock:
    """An exclusive lock on ``path`` (or on ``<path>/lock`` when ``path`` is a directory)."""

    def __init__(self, path: str) -> None:
        if os.path.isdir(path):
            path = os.path.join(path, LOCK_NAME)
        self.path = path
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_BINARY", 0), 0o600)

    def lock(self) -> None:
        _lock(self._fd)

    def unlock(self) -> None:
        _unlock(self._fd)

    def close(self) -> None:
        """Closing the descriptor also drops the lock (both OSes)."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> "FileLock":
        self.lock()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


if sys.platform == "win32":  # pragma: no cover - exercised on Windows CI
    import ctypes
    import msvcrt
    from ctypes import wintypes

    class _Overlapped(ctypes.Structure):
        _fields_ = [("Internal", ctypes.c_void_p), ("InternalHigh", ctypes.c_void_p),
                    ("Offset", wintypes.DWORD), ("OffsetHigh", wintypes.DWORD), ("hEvent", wintypes.HANDLE)]

    _k32 = ctypes.WinDLL("kernel32", use_last_error=True)
    _k32.LockFileEx.argtypes = [wintypes.HANDLE, wintypes.DWORD, wintypes.DWORD, wintypes.DWORD,
                                wintypes.DWORD, ctypes.POINTER(_Overlapped)]
    _k32.LockFileEx.restype = wintypes.BOOL
    _k32.UnlockFileEx.argtypes = [wintypes.HANDLE, wintypes.DWORD, wintypes.DWORD, wintypes.DWORD,
                                  ctypes.POINTER(_Overlapped)]
    _k32.UnlockFileEx.restype = wintypes.BOOL
    _LOCKFILE_EXCLUSIVE_LOCK = 2

    def _lock(fd: int) -> None:
        # Byte 0, length 1: go-filemutex's range, so the two plugins contend for the same lock.
        if not _k32.LockFileEx(msvcrt.get_osfhandle(fd), _LOCKFILE_EXCLUSIVE_LOCK, 0, 1, 0,
                               ctypes.byref(_Overlapped())):
            raise ctypes.WinError(ctypes.get_last_error())

    def _unlock(fd: int) -> None:
        if not _k32.UnlockFileEx(msvcrt.get_osfhandle(fd), 0, 1, 0, ctypes.byref(_Overlapped())):
            raise ctypes.WinError(ctypes.get_last_error())
else:
    import fcntl

    def _lock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_EX)

    def _unlock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)
