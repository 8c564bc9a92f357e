"""SDDL, the text form of Windows security descriptors, read with string methods: who an SDDL's
owner and DACL let write (``sddl_writers``), and the descriptors ``safefs`` gives what it makes.
Pure: the tests run it on any OS; the Windows side (``winhandle``) reads a handle's owner and DACL
back as SDDL and judges them here.
"""

from __future__ import annotations

#: SDDL of the folders the plugins write or lock in, and of the files they create: SYSTEM and
#: Administrators full control, nobody else, nothing inherited from above (``P``).
ADMIN_ONLY = "D:P(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)"
#: The plugin (install) folder: as ``ADMIN_ONLY`` plus read and execute for Users, so the
#: runtime's executables and their contents folder (``_wincni-<build>``) cannot be replaced by a user.
ADMIN_WRITE_USERS_READ = "D:P(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)(A;OICI;0x1200a9;;;BU)"
#: A file the plugins create: SYSTEM and Administrators only.
ADMIN_ONLY_FILE = "D:P(A;;FA;;;SY)(A;;FA;;;BA)"

# Who may write what the plugins trust: SYSTEM, Administrators, TrustedInstaller.
TRUSTED_SIDS = frozenset(
    {"SY", "BA", "S-1-5-18", "S-1-5-32-544", "S-1-5-80-956008885-3418522649-1831038044-1853292631-2271478464"}
)
_ALIASES = {"SY": "S-1-5-18", "BA": "S-1-5-32-544"}
# Rights letters of file SDDL and the access mask bits each stands for.
_RIGHTS = {
    "GA": 0x10000000,
    "GW": 0x40000000,
    "GR": 0x80000000,
    "GX": 0x20000000,
    "FA": 0x1F01FF,
    "FW": 0x120116,
    "FR": 0x120089,
    "FX": 0x1200A0,
    "SD": 0x10000,
    "WD": 0x40000,
    "WO": 0x80000,
    "RC": 0x20000,
    "CC": 0x1,
    "DC": 0x2,
    "LC": 0x4,
    "SW": 0x8,
    "RP": 0x10,
    "WP": 0x20,
    "DT": 0x40,
    "LO": 0x80,
    "CR": 0x100,
}
# Write data / add file, append / add subfolder, delete child, DELETE, WRITE_DAC, WRITE_OWNER, generic.
_WRITE = 0x2 | 0x4 | 0x40 | 0x10000 | 0x40000 | 0x80000 | 0x40000000 | 0x10000000


def rights_mask(text: str) -> int:
    """An SDDL rights field (``0x1301bf`` or letters such as ``FA``, ``GRGX``) as a mask."""
    if text.lower().startswith("0x"):
        return int(text, 16)
    return sum(_RIGHTS.get(text[i : i + 2], 0) for i in range(0, len(text), 2))


def sddl_writers(sddl: str, trusted: frozenset[str] = TRUSTED_SIDS) -> list[str]:
    """The SIDs besides ``trusted`` that an SDDL's DACL lets write (allow ACEs that apply to the
    object itself, i.e. not inherit-only); the owner when it is not trusted comes first."""
    owner = owner_of(sddl)
    out = [] if owner is None or known(owner, trusted) else [owner]
    dacl = sddl.split("D:", 1)[1] if "D:" in sddl else ""
    dacl = dacl.split("S:", 1)[0]
    if "NO_ACCESS_CONTROL" in dacl:  # a NULL DACL: everyone has full control
        out.append("WD")
    for ace in _aces(dacl):
        fields = ace.split(";", 6)
        if len(fields) < 6:
            continue
        kind, flags, rights, sid = fields[0], fields[1], fields[2], fields[5]
        if kind not in ("A", "XA") or "IO" in flags or known(sid, trusted):
            continue
        if rights_mask(rights) & _WRITE and sid not in out:
            out.append(sid)
    return out


def owner_of(sddl: str) -> str | None:
    """The ``O:`` SID: up to the next ``G:``/``D:``/``S:`` part (string methods: ``re`` would be
    one more import, and a pattern compile, on every pod command)."""
    start = sddl.find("O:")
    if start < 0:
        return None
    rest = sddl[start + 2 :]
    ends = [i for i in (rest.find("G:", 1), rest.find("D:", 1), rest.find("S:", 1)) if i > 0]
    owner = rest[: min(ends)] if ends else rest
    return owner if owner and ":" not in owner else None


def _aces(dacl: str) -> list[str]:
    """The ACEs of an SDDL DACL, ``(...)`` at the top level: a conditional ACE's own
    parenthesised expression stays inside its ACE (and the ACE is judged by its rights)."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(dacl):
        if ch == "(":
            depth += 1
            if depth == 1:
                start = i + 1
        elif ch == ")" and depth:
            depth -= 1
            if depth == 0:
                out.append(dacl[start:i])
    return out


def known(sid: str, trusted: frozenset[str]) -> bool:
    return sid in trusted or _ALIASES.get(sid, "") in trusted


def names(sids: list[str]) -> str:
    short = {
        "WD": "Everyone",
        "BU": "Users",
        "AU": "Authenticated Users",
        "IU": "Interactive users",
        "S-1-1-0": "Everyone",
        "S-1-5-32-545": "Users",
        "S-1-5-11": "Authenticated Users",
        "CO": "CREATOR OWNER",
        "OW": "OWNER RIGHTS",
    }
    return ", ".join(short.get(s, s) for s in sids)
