"""The reservation index: (container ID, ifname) -> addresses, so DEL need not read every file.

File ``<dir>/.wincni-index``: a header line ``wincni-host-local-index 1 <dir mtime ns> <crc32>``
then one line per reservation file, ``<ip> <id> <ifname>`` (``<ip> <id>`` for a legacy id-only
file, ``<ip> ?`` for content nobody can match). The Go plugin ignores it: its name is not an IP
and its content never equals ``id\\r\\nifname``.

Trust rules, all O(1) besides reading the file itself:
- the header's directory mtime must equal the directory's now. Creating or deleting a
  reservation (ours, the Go plugin's, an operator's) changes it; rewriting the index in place
  does not, which is why the index is rewritten in place (``store.save_index``, through a
  descriptor judged a regular file of ours) and never renamed over;
- the crc must match, so a write torn by a crash is noticed.
A directory change in the same clock tick as the recorded mtime would be invisible (file-system
timestamps are coarse: 1-4 ms on Linux, up to 15.6 ms on NTFS), so the save dates the directory
just before the mtime it saw and records that: any later change stamps the directory with the
clock, which is never below what it already showed, so the stamp always differs from the
record. (Waiting for the clock to pass cost every ADD and DEL half a tick under the lock.) A
file system that cannot store that date (FAT keeps 2 s) gets the index saved as stale, i.e.
every call rebuilds, which is slow but never wrong.
Anything else means "rebuild from the files": a file that is not a regular one, or over
``MAX_INDEX``, is never read (``store.load_index``). Lookups are byte searches, not a parse: at
10,000 reservations the file is ~0.8 MB and a lookup costs well under a millisecond.
"""

from __future__ import annotations

import zlib

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Iterable

from .allocator import Owner

INDEX_NAME = ".wincni-index"
#: 400,000 reservations' lines; a larger file is no index of ours (rebuilt from the files).
MAX_INDEX = 32 << 20
_MAGIC = b"wincni-host-local-index 1"
_UNKNOWN = b"?"


class Index:
    def __init__(self, body: bytes = b"") -> None:
        # A leading newline means every line, the first included, starts after b"\n".
        self._body = b"\n" + body

    @classmethod
    def of(cls, items: Iterable[tuple[str, Owner | None]]) -> "Index":
        return cls(b"".join(_line(ip, owner) for ip, owner in items))

    def add(self, ip: str, owner: Owner | None) -> None:
        self.remove(ip)  # a stale line for a file someone else deleted
        self._body += _line(ip, owner)

    def remove(self, ip: str) -> None:
        pos = self._body.find(b"\n" + ip.encode() + b" ")
        if pos >= 0:
            end = self._body.find(b"\n", pos + 1)
            self._body = self._body[:pos] + self._body[end:]

    def owned_by(self, owner: Owner) -> list[str]:
        """Addresses whose line names exactly this owner (legacy: id-only lines)."""
        needle = b" " + _owner_bytes(owner) + b"\n"
        found, pos = [], self._body.find(needle)
        while pos >= 0:
            start = self._body.rfind(b"\n", 0, pos) + 1
            ip = self._body[start:pos]
            if b" " not in ip:  # the match began right after the address field
                found.append(ip.decode())
            pos = self._body.find(needle, pos + 1)
        return found

    def items(self) -> list[tuple[str, Owner | None]]:
        """Every line; an owner that is not printable text (an index written before owners were
        checked) is None, as a malformed reservation's."""
        out = []
        for line in self._body[1:].splitlines():
            ip, _, rest = line.partition(b" ")
            if ip.isascii():  # an address: anything else is no line of ours
                out.append((ip.decode(), _parse_owner(rest)))
        return out

    def __len__(self) -> int:
        return self._body.count(b"\n") - 1

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Index) and sorted(self.items(), key=_key) == sorted(other.items(), key=_key)

    def encode(self, dir_mtime_ns: int) -> bytes:
        body = self._body[1:]
        return b"%s %d %08x\n%s" % (_MAGIC, dir_mtime_ns, zlib.crc32(body), body)


def decode(data: bytes, dir_mtime_ns: int) -> Index | None:
    """The index in ``data`` if it is whole and current for that directory mtime, else None."""
    header, sep, body = data.partition(b"\n")
    parts = header.split(b" ")
    if not sep or len(parts) != 4 or b" ".join(parts[:2]) != _MAGIC:
        return None
    try:
        mtime, crc = int(parts[2]), int(parts[3], 16)
    except ValueError:
        return None
    if mtime != dir_mtime_ns or crc != zlib.crc32(body):
        return None
    return Index(body)


def _owner_bytes(owner: Owner) -> bytes:
    cid = owner.container_id.strip().encode()
    return cid if owner.legacy else cid + b" " + owner.ifname.encode()


def _line(ip: str, owner: Owner | None) -> bytes:
    return ip.encode() + b" " + (_owner_bytes(owner) if owner else _UNKNOWN) + b"\n"


def _parse_owner(rest: bytes) -> Owner | None:
    if rest == _UNKNOWN:
        return None
    try:
        cid, _, ifname = rest.decode().partition(" ")
    except UnicodeDecodeError:
        return None
    return Owner(cid, ifname) if cid.isprintable() and ifname.isprintable() else None


def _key(item: tuple[str, Owner | None]) -> tuple:
    ip, owner = item
    return (ip, owner.container_id, owner.ifname) if owner else (ip, "", "")
