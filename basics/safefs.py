"""Files and folders a SYSTEM/root process may trust on a node it shares with local users.

The plugins run as SYSTEM (root on Linux) with paths an unprivileged user may reach first: a lock
folder, a debug log, an HNS journal. The rules, kept here once for every writer:

- a folder we write or lock in is admin-only: created so (mode 0755 owned by us on POSIX; a
  protected DACL, SYSTEM and Administrators only, on Windows) and, when it already exists,
  accepted only if it is a real folder (not a symlink or reparse point) owned by root/SYSTEM/
  Administrators or by us; write access left to others on a folder we own is taken back. The
  same holds for every folder on the way: a path is opened component by component from the
  root without following links, so a link a user planted higher up is refused, not followed;
- a file is opened without following a final link (``O_NOFOLLOW``;
  ``FILE_FLAG_OPEN_REPARSE_POINT``), then refused when it is not a regular file, has other hard
  links, or is owned by someone else; a file we create is owner-only (0600; a protected DACL);
  a file we write in full is created new (``open_new``: exclusive, no-follow) and renamed.

Each check is a few system calls on the already-open handle. Refusals raise ``UnsafePath`` (a
``PermissionError`` naming the path, what is wrong and the fix); callers turn it into their own
error. ``claim_dir`` and ``survey_dir`` are the operator side (``wincni install``): a folder a user
may have prepared is moved aside and made anew, never reused; an administrator's that others may
write is closed; both answer a ``Folder``, the judged folder held open, through which every later
step (list, read, create, rename, delete) is taken relative to that descriptor or pinned handle,
never by a path looked up again (a folder swapped for a link after the check is never reached).
Standard library and ctypes only (no pywin32), and nothing heavy on a plugin's start-up path.

This module is the one face of it and picks the platform once, below: ``posixfs`` (what the
plugins write and lock in) and ``posixfolder`` (``wincni install``'s folder) on POSIX; ``winfs``
and ``winfolder`` on Windows, over ``winwalk``, ``winhandle`` and the Win32 declarations in
``win32sec`` (SDDL itself is read by ``sddl``, on any OS). Each pair offers the same names, which
are bound here as they are (a plugin's lock calls the platform's own function, no step between).
"""

from __future__ import annotations

import sys

from basics.errors import UnsafePath
from basics.sddl import ADMIN_ONLY, ADMIN_WRITE_USERS_READ

if sys.platform == "win32":  # the one place the platform is picked
    from basics import winfolder as _folders
    from basics import winfs as _fs
else:
    from basics import posixfolder as _folders
    from basics import posixfs as _fs
    from basics.posixfs import trusted_uid  # noqa: F401 - POSIX's owner rule, for the readers of flag files

__all__ = [
    "ADMIN_ONLY",
    "ADMIN_WRITE_USERS_READ",
    "Folder",
    "UnsafePath",
    "check_dir",
    "claim_dir",
    "open_append",
    "open_lock",
    "open_read",
    "secure_dir",
    "secure_folder",
    "survey_dir",
    "writable_by_others",
]

secure_dir = _fs.secure_dir
check_dir = _fs.check_dir
open_append = _fs.open_append
open_lock = _fs.open_lock
open_read = _fs.open_read
writable_by_others = _fs.writable_by_others
secure_folder = _folders.secure_folder
#: The folder ``claim_dir``, ``survey_dir`` and ``secure_folder`` hand out: ``posixfolder.PosixFolder``
#: or ``winfolder.WindowsFolder``.
Folder = _folders.Folder


def claim_dir(path: str, sddl: str = ADMIN_WRITE_USERS_READ) -> tuple[Folder, list, list[tuple[str, str]]]:
    """Make the folder ``path`` install's, for ``wincni install``: missing components are created
    admin-only; one another user owns is moved aside and made anew (a home folder, or any folder
    a user's home lies in, is refused instead); an administrator's others may write loses that
    write access (``sddl`` on Windows). A link on the way is refused, never followed. Returns the
    folder held open (the caller closes it), what had to be done on the way (``takeover.Takeover``s)
    and what in the folder an administrator did not lay (``Folder.entries``), whose write access
    for others is taken back (on Windows: they inherit only the folder's DACL)."""
    folder, done = _folders.claim(path, sddl)
    try:
        return folder, done, folder.entries(bool(done), repair=True)
    except BaseException:
        folder.close()
        raise


def survey_dir(path: str) -> tuple[Folder | None, list, list[tuple[str, str]]]:
    """What ``claim_dir`` would do, changing nothing (``wincni install --dry-run``): the same walk,
    so a link on the way is refused as the real run refuses it, never followed to list what lies
    behind it. The folder is None (and nothing listed) when a component does not exist yet or
    would be moved aside (the real run lays into a fresh, empty one)."""
    try:
        folder, done = _folders.survey(path)
    except FileNotFoundError:
        return None, [], []
    if folder is None:
        return None, done, []
    try:
        return folder, done, folder.entries(bool(done), repair=False)
    except BaseException:
        folder.close()
        raise
