"""Whether a process is alive, for the ownership rule's "a live writer's temporary file".

A PID is reused once its process is gone, so "alive" can be a stranger; callers bound the answer
by age (``ownership.temporary_kept``). When the OS will not say, the answer is "alive": keeping
a file too long costs a little disk, removing a live writer's file fails its command.
"""

from __future__ import annotations

import os
import sys

if sys.platform == "win32":  # os.kill(pid, 0) would terminate the process on Windows
    import ctypes

    from basics import win32types as wintypes

    _k32 = ctypes.WinDLL("kernel32", use_last_error=True)
    _k32.OpenProcess.argtypes = [wintypes.DWORD, wintypes.BOOL, wintypes.DWORD]
    _k32.OpenProcess.restype = wintypes.HANDLE
    _k32.GetExitCodeProcess.argtypes = [wintypes.HANDLE, ctypes.POINTER(wintypes.DWORD)]
    _k32.GetExitCodeProcess.restype = wintypes.BOOL
    _k32.CloseHandle.argtypes = [wintypes.HANDLE]
    _k32.CloseHandle.restype = wintypes.BOOL
    _PROCESS_QUERY_LIMITED_INFORMATION, _STILL_ACTIVE, _ERROR_INVALID_PARAMETER = 0x1000, 259, 87

    def alive(pid: int) -> bool:
        """OpenProcess fails with ERROR_INVALID_PARAMETER for a PID no process holds; a process
        that exited but whose object someone still holds reports an exit code other than
        STILL_ACTIVE (an exit code of 259 itself reads as alive: the safe side)."""
        if pid <= 0:
            return False
        handle = _k32.OpenProcess(_PROCESS_QUERY_LIMITED_INFORMATION, False, pid)
        if not handle:
            return ctypes.get_last_error() != _ERROR_INVALID_PARAMETER  # access denied: it exists
        try:
            code = wintypes.DWORD()
            return not _k32.GetExitCodeProcess(handle, ctypes.byref(code)) or code.value == _STILL_ACTIVE
        finally:
            _k32.CloseHandle(handle)

else:

    def alive(pid: int) -> bool:
        """Signal 0 checks without signalling; EPERM means it exists under another user. (PID 0
        and negative PIDs would address process groups: never alive.)"""
        if pid <= 0:
            return False
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except OSError:
            return True
        return True
