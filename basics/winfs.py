"""``safefs`` on Windows for what the plugins write and lock in: folders made or accepted
admin-only and held pinned for the rest of the (short) process, files opened owner-checked
through no reparse point (``winhandle``), created with an admin-only DACL."""

from __future__ import annotations

import os

from basics.sddl import ADMIN_ONLY, ADMIN_ONLY_FILE
from basics.winfolder import WindowsFolder, checked, secure
from basics.winhandle import open_file, writers

#: The folders ``secure_dir`` and ``check_dir`` judged, pinned for the rest of this (short)
#: process. The folders above one are judged by their owner alone (C:\\ hands "modify" down to
#: every user), so a user could rename one and put a junction in its place between the walk and
#: the plugin's later opens by path; a pinned folder, and every folder above it, cannot be renamed
#: while the pin is held. POSIX needs none: only root can change a chain of folders the walk trusted.
HELD: list[WindowsFolder] = []


def secure_dir(path: str, mode: int = 0o755) -> None:
    """``safefs.secure_dir`` on Windows: the folder made or accepted ``ADMIN_ONLY``, then held."""
    HELD.append(secure(path, ADMIN_ONLY))


def check_dir(path: str) -> None:
    """``safefs.check_dir`` on Windows: the folder refused unless admin-only, then held."""
    HELD.append(checked(path))


def open_append(path: str) -> int:
    return open_file(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, ADMIN_ONLY_FILE)


def open_lock(path: str) -> int:
    return open_file(path, os.O_RDWR | os.O_CREAT, ADMIN_ONLY_FILE)


def open_read(path: str) -> int:
    return open_file(path, os.O_RDONLY, ADMIN_ONLY_FILE)


writable_by_others = writers
