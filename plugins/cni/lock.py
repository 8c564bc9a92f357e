"""The store and network locks: the same file and primitive as the Go plugin (go-filemutex), so
the two exclude each other on a shared node: flock(LOCK_EX) on POSIX, LockFileEx on the first
byte on Windows.

Unlike the reference, a lock is never trusted blindly: it lives in an admin-only folder
(``secure_dir``), the file is opened without following links and refused when someone else owns
it (``basics.safefs``), and the wait has a deadline: a process that holds the lock for longer
makes the command fail with code 11 naming the lock and its holder, instead of blocking every
pod on the node for as long as it likes.
"""

from __future__ import annotations

import os
import sys
import time

from .errors import IO_FAILURE, TRY_AGAIN_LATER, CniError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import TracebackType

LOCK_NAME = "lock"
#: How long a command waits for a lock. Holders keep it for milliseconds, a standalone network
#: creation for up to its 30 s management-IP wait: twice that is the most anyone honest needs.
LOCK_TIMEOUT = 60.0
_MAX_POLL = 0.016


def secure_dir(path: str, mode: int = 0o755) -> str:
    """Create ``path`` admin-only, or accept it when we can trust it; else code 5 saying why
    (other OS errors are the caller's to word)."""
    from basics.safefs import UnsafePath
    from basics.safefs import secure_dir as make

    try:
        make(path, mode)
    except UnsafePath as exc:
        raise CniError(IO_FAILURE, f"refusing to use {path}: {exc.problem}", exc.fix) from exc
    return path


class FileLock:
    """An exclusive lock on ``path`` (or on ``<path>/lock`` when ``path`` is a directory);
    ``fd``: the lock file as the caller opened and judged it (``safefs.open_lock``), at ``path``."""

    def __init__(self, path: str, timeout: float = LOCK_TIMEOUT, fd: int | None = None) -> None:
        from basics.safefs import UnsafePath, open_lock

        self.timeout = timeout
        if fd is not None:
            self.path, self._fd = path, fd
            return
        if os.path.isdir(path):
            path = os.path.join(path, LOCK_NAME)
        self.path = path
        try:
            self._fd = open_lock(path)
        except UnsafePath as exc:
            raise CniError(IO_FAILURE, f"refusing the lock file {path}: {exc.problem}", exc.fix) from exc

    def lock(self) -> None:
        """Take the lock, polling until ``timeout`` (uncontended: one system call)."""
        deadline = time.monotonic() + self.timeout
        delay = 0.001
        while not _try_lock(self._fd):
            left = deadline - time.monotonic()
            if left <= 0:
                raise CniError(
                    TRY_AGAIN_LATER,
                    f"timed out after {self.timeout:g}s waiting for the lock {self.path}",
                    _holder(self.path, self._fd),
                )
            time.sleep(min(delay, left))
            delay = min(delay * 2, _MAX_POLL)

    def unlock(self) -> None:
        _unlock(self._fd)

    def close(self) -> None:
        """Closing the descriptor also drops the lock (both OSes)."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> "FileLock":
        try:
            self.lock()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def _holder(path: str, fd: int) -> str:
    """Who to look at when the wait expires: the holding process where the OS says (Linux's
    /proc/locks), else how to find it."""
    generic = (
        f"another process holds {path}; the plugins hold it for seconds at most, so find the holder "
        + ("(Sysinternals: handle.exe " + path + ")" if sys.platform == "win32" else f"(fuser -v {path})")
        + " and stop it, then retry"
    )
    if sys.platform == "win32":
        return generic
    try:
        st = os.fstat(fd)
        with open("/proc/locks", encoding="ascii", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return generic
    for line in lines:
        parts = line.split()
        if len(parts) > 5 and parts[5].endswith(f":{st.st_ino}") and parts[4].isdigit():
            pid = parts[4]
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    cmd = f.read().replace(b"\0", b" ").decode(errors="replace").strip()[:200]
                uid = os.stat(f"/proc/{pid}").st_uid
            except OSError:
                cmd, uid = "?", "?"
            return f"process {pid} (uid {uid}: {cmd}) holds {path}: stop it, then retry"
    return generic


if sys.platform == "win32":  # pragma: no cover - exercised in the Windows lane
    import ctypes
    import msvcrt

    from basics import win32types as wintypes

    class _Overlapped(ctypes.Structure):
        _fields_ = [
            ("Internal", ctypes.c_void_p),
            ("InternalHigh", ctypes.c_void_p),
            ("Offset", wintypes.DWORD),
            ("OffsetHigh", wintypes.DWORD),
            ("hEvent", wintypes.HANDLE),
        ]

    _k32 = ctypes.WinDLL("kernel32", use_last_error=True)
    _k32.LockFileEx.argtypes = [
        wintypes.HANDLE,
        wintypes.DWORD,
        wintypes.DWORD,
        wintypes.DWORD,
        wintypes.DWORD,
        ctypes.POINTER(_Overlapped),
    ]
    _k32.LockFileEx.restype = wintypes.BOOL
    _k32.UnlockFileEx.argtypes = [
        wintypes.HANDLE,
        wintypes.DWORD,
        wintypes.DWORD,
        wintypes.DWORD,
        ctypes.POINTER(_Overlapped),
    ]
    _k32.UnlockFileEx.restype = wintypes.BOOL
    _LOCKFILE_FAIL_IMMEDIATELY, _LOCKFILE_EXCLUSIVE_LOCK = 1, 2
    _ERROR_LOCK_VIOLATION, _ERROR_IO_PENDING = 33, 997

    def _try_lock(fd: int) -> bool:
        # Byte 0, length 1: go-filemutex's range, so the two plugins contend for the same lock.
        if _k32.LockFileEx(
            msvcrt.get_osfhandle(fd),
            _LOCKFILE_EXCLUSIVE_LOCK | _LOCKFILE_FAIL_IMMEDIATELY,
            0,
            1,
            0,
            ctypes.byref(_Overlapped()),
        ):
            return True
        err = ctypes.get_last_error()
        if err in (_ERROR_LOCK_VIOLATION, _ERROR_IO_PENDING):
            return False
        raise ctypes.WinError(err)

    def _unlock(fd: int) -> None:
        if not _k32.UnlockFileEx(msvcrt.get_osfhandle(fd), 0, 1, 0, ctypes.byref(_Overlapped())):
            raise ctypes.WinError(ctypes.get_last_error())
else:
    import fcntl

    def _try_lock(fd: int) -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    def _unlock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)
