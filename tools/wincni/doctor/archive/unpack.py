"""A bundle's bytes to its members, every size checked before anything is read.

The gzip stream is inflated no further than a bundle can reach; the tar's 512-byte headers are
read here, not by ``tarfile``, which reads a PAX or GNU long-name header's whole claimed size
before any cap applies. Only what ``archive`` writes is taken: regular files, folders (skipped),
and PAX headers of at most ``PAX_CAP`` bytes of which only ``path`` is read; every other kind
(a link, a device, a GNU long name, a PAX global header) is refused by name, as is a member name
that is absolute, climbs (``..``) or comes twice. Pure: a reader of the inflated tar in (``Inflating``
over a reader of the bundle's file, or a test's), members or ``ReplayError`` out; neither the bundle
nor its tar is ever held whole.
"""

from __future__ import annotations

import zlib
from typing import Callable

from tools.wincni.doctor.archive.members import MAX_MEMBERS, MEMBER_CAP, PAX_CAP, TOTAL_CAP, ReplayError

BLOCK = 512
FILE, FOLDER, PAX = b"0", b"5", b"x"
NOT_A_BUNDLE = "not a wincni bundle (a .tar.gz from wincni bundle)"
#: Every member, a PAX header for each and as many folders: the most headers a bundle holds.
HEADERS = 3 * MAX_MEMBERS
#: The kinds a bundle never holds, by what they are.
REFUSED = {
    b"1": "a hard link",
    b"2": "a symbolic link",
    b"3": "a character device",
    b"4": "a block device",
    b"6": "a FIFO",
    b"g": "a PAX global header",
    b"L": "a GNU long name",
    b"K": "a GNU long link name",
}


class Inflating:
    """The gzip stream that ``source(n)`` (at most n bytes, none at its end) gives, inflated as
    it is read: ``read(n)`` inflates at most ``n`` more bytes, from at most ``CHUNK`` bytes of
    input at a time, and no more than ``cap`` bytes of input in all."""

    CHUNK = 1 << 16

    def __init__(self, source: Callable[[int], bytes], cap: int) -> None:
        self.source, self.left, self.tail = source, cap, b""
        self.z = zlib.decompressobj(wbits=31)

    def read(self, n: int) -> bytes:
        parts: list[bytes] = []
        while n > 0 and not self.z.eof:
            if not self.tail:
                self.tail = self.source(min(self.CHUNK, self.left + 1))
                self.left -= len(self.tail)
                if not self.tail:
                    raise ReplayError(f"{NOT_A_BUNDLE}: the gzip stream ends early")
                if self.left < 0:
                    raise ReplayError("larger than a bundle's cap")
            try:
                got = self.z.decompress(self.tail, n)
            except zlib.error as exc:
                raise ReplayError(f"{NOT_A_BUNDLE}: {exc}") from None
            self.tail = self.z.unconsumed_tail
            parts.append(got)
            n -= len(got)
        return b"".join(parts)


def members(
    read: Callable[[int], bytes],
    wanted: Callable[[str], bool] = lambda name: True,
    member_cap: int = MEMBER_CAP,
    total_cap: int = TOTAL_CAP,
) -> dict[str, bytes]:
    """Each regular file of the tar that ``read(n)`` (at most n bytes, fewer only at its end)
    gives, by name and in order; those not ``wanted`` are read past, never kept."""
    found: dict[str, bytes] = {}
    seen: set[str] = set()
    total, path = 0, ""
    for _ in range(HEADERS):
        head = _exactly(read, BLOCK, "the tar ends early (no end-of-archive blocks)")
        if not any(head):
            return found
        name, kind, size = header(head)
        cap = PAX_CAP if kind == PAX else member_cap
        if size > cap or (kind == FILE and total + size > total_cap):
            raise ReplayError(f"{path or name}: {size} bytes, over a bundle's caps")
        body = _exactly(read, size, f"{path or name}: the tar ends inside it")
        _exactly(read, -size % BLOCK, f"{path or name}: the tar ends inside it")
        if kind == PAX:
            path = pax_path(body, name) or path
            continue
        name, path = path or name, ""
        if kind == FOLDER:
            continue
        total += size
        if len(seen) >= MAX_MEMBERS or not safe_name(name) or name in seen:
            raise ReplayError(f"{name!r}: a member name a bundle never holds (absolute, '..', twice, or too many)")
        seen.add(name)
        if wanted(name):
            found[name] = body
    raise ReplayError(f"more than {HEADERS} tar headers, more than a bundle holds")


def _exactly(read: Callable[[int], bytes], n: int, short: str) -> bytes:
    got = read(n)
    if len(got) < n:
        raise ReplayError(short)
    return got


def header(head: bytes) -> tuple[str, bytes, int]:
    """(name, kind, size) of one 512-byte header, its checksum checked, only the kinds a bundle holds."""
    try:
        name = _text(head[0:100])
        prefix = _text(head[345:500]) if head[257:262] == b"ustar" else ""
        stored, size = _octal(head[148:156]), _octal(head[124:136])
    except (UnicodeDecodeError, ValueError):
        raise ReplayError("a tar header that is not one (its name, size or checksum unreadable)") from None
    if stored != sum(head[:148]) + 8 * ord(" ") + sum(head[156:]):
        raise ReplayError(f"{name}: its tar header's checksum is wrong")
    kind = head[156:157].replace(b"\0", FILE)
    if kind not in (FILE, FOLDER, PAX):
        raise ReplayError(f"{name}: {REFUSED.get(kind, f'tar member type {kind!r}')}, which a bundle never holds")
    return (f"{prefix}/{name}" if prefix else name), kind, size


def pax_path(body: bytes, name: str) -> str:
    """The ``path`` record of a PAX header (``<length> <key>=<value>\\n`` records), else ""."""
    at, path = 0, ""
    while at < len(body):
        length, _, rest = body[at : at + 20].partition(b" ")
        record = body[at : at + int(length)] if length.isdigit() and rest else b""
        key, eq, value = record[len(length) + 1 : -1].partition(b"=")
        if not record.endswith(b"\n") or not eq:
            raise ReplayError(f"{name}: a PAX header that is not '<length> <key>=<value>' records")
        if key == b"path":
            try:
                path = value.decode()
            except UnicodeDecodeError:
                raise ReplayError(f"{name}: a PAX path that is not UTF-8") from None
        at += len(record)
    return path


def safe_name(name: str) -> bool:
    """Relative, every part a name: nothing a reader could take for a place outside the bundle."""
    parts = name.split("/")
    return not name.startswith("/") and "\\" not in name and "\0" not in name and "" not in parts and ".." not in parts


def _octal(field: bytes) -> int:
    """A header's number: octal digits only (no sign, no base-256, nothing ``int`` would also take)."""
    digits = _text(field).strip(" ")
    if not digits or digits.strip("01234567"):
        raise ValueError(digits)
    return int(digits, 8)


def _text(field: bytes) -> str:
    return field.split(b"\0", 1)[0].decode()
