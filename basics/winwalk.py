"""The Windows walk of ``safefs``: a folder path judged component by component from the drive's
root on handles that follow no reparse point; another user's folder moved aside by the handle it
was judged on and made anew (``claim``), or said so and left (``survey``)."""

from __future__ import annotations

import ctypes
import os

from basics import win32sec as w32
from basics.errors import UnsafePath
from basics.sddl import names, sddl_writers
from basics.winhandle import (
    SecurityDescriptor,
    apply_sddl,
    file_info,
    handle_sddl,
    identity,
    open_found,
    open_handle,
    owner_problem,
    rename_handle,
    trusted,
)


def walk(path: str, sddl: str | None, create: bool, last: str) -> tuple[list, bool]:
    """``posixfs.walk`` on Windows: each component from the drive's root opened itself
    (``FILE_FLAG_OPEN_REPARSE_POINT``), a junction or symbolic link refused, one another
    user owns refused or (``last == "claim"``) moved aside by its own handle and made anew
    with ``sddl`` (a folder a user lives in is refused instead); the final folder others may
    write repaired ("repair", "claim") or refused. Folders on the way are judged by their
    owner alone (an administrator's folder under C:\\ inherits "modify" for Authenticated
    Users), except that "claim" closes one others may write too ("survey": says what would be
    done, changing nothing); the drive's root, where every user may add folders, is never
    judged. Returns what was done on the way (``takeover.Takeover``s), and which file the final
    folder is as judged or made (``identity``; None for a survey past a folder it would make
    anew), for ``pin`` to prove."""
    from basics.takeover import Takeover, refuse_home

    drive, rest = os.path.splitdrive(os.path.abspath(path))
    parts = [p for p in rest.replace("/", "\\").split("\\") if p]
    here, done, seen = drive + "\\", [], None
    for i, part in enumerate(parts):
        here = os.path.join(here, part)
        final = i == len(parts) - 1
        try:  # the common case first: it exists (a failed CreateDirectoryW per component is dear)
            why, seen = _component_problem(here, final or last in ("claim", "survey"))
        except FileNotFoundError:
            if not create:
                raise
            if _make_dir(here, sddl):
                seen = _component_problem(here, True)[1] if final else None
                continue
            why, seen = _component_problem(here, final or last in ("claim", "survey"))  # made meanwhile
        if why is None:
            continue
        owner = not why.startswith("is writable")
        if last in ("claim", "survey") and owner:
            refuse_home(here, why, homes())
            done.append(Takeover(here, why, _make_anew(here, seen, sddl, last == "survey")))
            if last == "survey":
                return done, None
            seen = _component_problem(here, True)[1]  # the folder made in its place
        elif last == "claim":
            apply_sddl(here, "O:BA" + sddl, w32.OWNER_INFO | w32.DACL_INFO | w32.PROTECTED_DACL, seen)
            done.append(Takeover(here, why))
        elif last == "survey":
            done.append(Takeover(here, why))
        elif final and last == "repair" and not owner:
            apply_sddl(here, sddl, w32.DACL_INFO | w32.PROTECTED_DACL, seen)
        elif not owner:
            raise UnsafePath(
                here,
                why,
                "what is in it cannot be trusted: give it an admin-only ACL "
                f"(icacls {here} /inheritance:r /grant:r SYSTEM:(OI)(CI)F Administrators:(OI)(CI)F)",
            )
        else:
            raise UnsafePath(here, why)
    return done, seen


def _component_problem(path: str, final: bool) -> tuple[str | None, tuple[int, int, int]]:
    """Why the folder ``path`` cannot be trusted (or None), and which file it is (``identity``)."""
    handle = open_found(path, w32.READ_CONTROL, w32.OPEN_EXISTING, w32.FLAG_BACKUP_SEMANTICS, None)
    try:
        info = file_info(handle)
        if info.dwFileAttributes & w32.ATTR_REPARSE_POINT:
            raise UnsafePath(path, "is a reparse point (a junction or symbolic link)", UnsafePath.LINK_FIX)
        if not info.dwFileAttributes & w32.ATTR_DIRECTORY:
            raise UnsafePath(path, "is not a folder")
        found, seen = handle_sddl(handle), identity(info)
    finally:
        w32.CloseHandle(handle)
    why = owner_problem(found)
    if why:
        return why, seen
    others = sddl_writers(found, trusted()) if final else []
    return (f"is writable by {names(others)}" if others else None), seen


def _make_dir(path: str, sddl: str) -> bool:
    """Create ``path`` with ``sddl``; False when it exists already."""
    desc = SecurityDescriptor(sddl)
    try:
        sa = desc.attributes()
        created = w32.CreateDirectoryW(path, ctypes.byref(sa))
        err = ctypes.get_last_error()  # before LocalFree, another call through kernel32, may touch it
    finally:
        desc.close()
    if not created and err != w32.ERROR_ALREADY_EXISTS:
        raise OSError(0, f"CreateDirectory {path}: {ctypes.FormatError(err)}", path, err)
    return bool(created)


def _make_anew(path: str, seen: tuple[int, int, int] | None, sddl: str, survey: bool) -> str:
    """Another user's folder ``path`` renamed aside by a handle proven to be the one judged
    (``seen``), then a new one made with ``sddl``; where the old one went. Whatever was made
    again in its place before ours is moved aside as it stands (a junction itself, never
    followed). A survey only names it. A handle someone holds on the folder without
    share-delete makes this fail, closed."""
    from basics.takeover import ASIDE_TRIES, QUARANTINED, fresh, remade

    for _ in range(ASIDE_TRIES):
        aside = fresh(path + QUARANTINED, os.path.lexists)
        if survey:
            return aside
        try:
            handle = open_handle(
                path, w32.DELETE | w32.READ_CONTROL, w32.OPEN_EXISTING, w32.FLAG_BACKUP_SEMANTICS, None
            )
        except OSError as exc:
            if exc.winerror != w32.SHARING_VIOLATION:
                raise
            raise UnsafePath(
                path,
                "is another user's and held open by a process that will not let it be moved aside",
                f"nothing was laid there; find what holds it (handle.exe {path}), end it, and run install again",
            ) from None
        try:
            if seen is not None and identity(file_info(handle)) != seen:
                raise UnsafePath(
                    path,
                    "was replaced while it was being checked (a junction or another folder put in its place)",
                    "nothing was done through it: check who can write its parent",
                )
            rename_handle(handle, aside)
        finally:
            w32.CloseHandle(handle)
        if _make_dir(path, sddl):
            return aside
        seen = None
    raise remade(path)


def homes() -> list[tuple[str, str]]:
    """(profile, folder) of every user profile the system knows, and the profiles folder."""
    import winreg

    out = []
    key = r"SOFTWARE\Microsoft\Windows NT\CurrentVersion\ProfileList"
    try:
        with winreg.OpenKey(winreg.HKEY_LOCAL_MACHINE, key) as top:
            for i in range(winreg.QueryInfoKey(top)[0]):
                sid = winreg.EnumKey(top, i)
                with winreg.OpenKey(top, sid) as sub:
                    try:
                        out.append((sid, os.path.expandvars(winreg.QueryValueEx(sub, "ProfileImagePath")[0])))
                    except OSError:
                        continue
            try:
                users = winreg.QueryValueEx(top, "ProfilesDirectory")[0]
                out.append(("every user", os.path.expandvars(users)))
            except OSError:
                pass
    except OSError:
        pass
    return out
