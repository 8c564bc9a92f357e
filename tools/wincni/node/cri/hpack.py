"""HPACK (RFC 7541), as a client that only reads one answer needs it.

What we send is literal, never indexed, never Huffman-coded (``encode``): simple, and a few bytes
more per call do not matter. What we read must be decoded whole, because every header block
changes the dynamic table the next one refers to (``Decoder``); Huffman-coded strings are the
norm from gRPC servers. Every length and index is checked against what is there: bad input is
``Malformed``, never an exception of another kind. The peer decides how much work a block is, so
a decoder serves one call: ``MAX_FIELDS`` representations in all its blocks, and the call's
``Deadline`` asked as it goes (every byte a Huffman string holds, every representation).
"""

from __future__ import annotations

from tools.wincni.node.cri.deadline import Deadline, unbounded
from tools.wincni.node.cri.errors import Malformed

#: The static table (RFC 7541, Appendix A): names, and the values of the entries that have one.
STATIC = (
    (":authority", ""), (":method", "GET"), (":method", "POST"), (":path", "/"), (":path", "/index.html"),
    (":scheme", "http"), (":scheme", "https"), (":status", "200"), (":status", "204"), (":status", "206"),
    (":status", "304"), (":status", "400"), (":status", "404"), (":status", "500"), ("accept-charset", ""),
    ("accept-encoding", "gzip, deflate"), ("accept-language", ""), ("accept-ranges", ""), ("accept", ""),
    ("access-control-allow-origin", ""), ("age", ""), ("allow", ""), ("authorization", ""),
    ("cache-control", ""), ("content-disposition", ""), ("content-encoding", ""), ("content-language", ""),
    ("content-length", ""), ("content-location", ""), ("content-range", ""), ("content-type", ""),
    ("cookie", ""), ("date", ""), ("etag", ""), ("expect", ""), ("expires", ""), ("from", ""), ("host", ""),
    ("if-match", ""), ("if-modified-since", ""), ("if-none-match", ""), ("if-range", ""),
    ("if-unmodified-since", ""), ("last-modified", ""), ("link", ""), ("location", ""), ("max-forwards", ""),
    ("proxy-authenticate", ""), ("proxy-authorization", ""), ("range", ""), ("referer", ""), ("refresh", ""),
    ("retry-after", ""), ("server", ""), ("set-cookie", ""), ("strict-transport-security", ""),
    ("transfer-encoding", ""), ("user-agent", ""), ("vary", ""), ("via", ""), ("www-authenticate", ""),
)  # fmt: skip
#: SETTINGS_HEADER_TABLE_SIZE's default, which we never change: the most the peer may use.
TABLE_SIZE = 4096
_ENTRY_OVERHEAD = 32
_MAX_INT = 1 << 24  # no length or index we accept comes near it
#: Header representations in one call, every block's: a gRPC answer has about six, and an
#: indexed one is a byte that can stand for a 4 KiB table entry.
MAX_FIELDS = 256


def encode(headers: list[tuple[str, str]]) -> bytes:
    """A header block of literal fields without indexing, new names, raw strings."""
    out = bytearray()
    for name, value in headers:
        out.append(0x00)
        for text in (name, value):
            raw = text.encode("ascii")
            out += integer(len(raw), 7, 0x00)
            out += raw
    return bytes(out)


def integer(value: int, prefix: int, flags: int) -> bytes:
    """``value`` as an HPACK integer (RFC 7541 5.1) of a ``prefix``-bit prefix after ``flags``."""
    limit = (1 << prefix) - 1
    if value < limit:
        return bytes([flags | value])
    out = bytearray([flags | limit])
    value -= limit
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


_HUFFMAN: dict[tuple[int, int], int] = {}


def _huffman_table() -> dict[tuple[int, int], int]:
    if not _HUFFMAN:
        from tools.wincni.node.cri.huffman import CODES

        _HUFFMAN.update({(bits, code): byte for byte, (code, bits) in enumerate(CODES)})
    return _HUFFMAN


def huffman_decode(data: bytes, deadline: Deadline | None = None) -> bytes:
    table = _huffman_table()
    deadline = deadline or unbounded()
    out = bytearray()
    code = bits = 0
    for byte in data:
        deadline.step("decoding a Huffman-coded header")
        for shift in range(7, -1, -1):
            code = code << 1 | (byte >> shift) & 1
            bits += 1
            sym = table.get((bits, code))
            if sym is not None:
                out.append(sym)
                code = bits = 0
            elif bits >= 30:
                raise Malformed("HPACK: a Huffman code that is no symbol (or the end-of-string one)")
    if bits > 7 or code != (1 << bits) - 1:
        raise Malformed("HPACK: Huffman padding that is not the end-of-string code's first bits")
    return bytes(out)


class Decoder:
    """One connection's decoding state: the dynamic table the peer's header blocks build."""

    def __init__(self, deadline: Deadline | None = None) -> None:
        self.table: list[tuple[str, str]] = []  # newest first
        self.size = 0
        self.limit = TABLE_SIZE
        self.deadline = deadline or unbounded()
        self.fields = 0

    def decode(self, block: bytes) -> list[tuple[str, str]]:
        out = []
        pos = 0
        while pos < len(block):
            self.fields += 1
            if self.fields > MAX_FIELDS:
                raise Malformed(f"HPACK: more than {MAX_FIELDS} header fields in one answer")
            self.deadline.step("decoding the answer's headers")
            first = block[pos]
            if first & 0x80:  # indexed field
                index, pos = self._int(block, pos, 7)
                out.append(self._entry(index))
            elif first & 0xC0 == 0x40:  # literal with incremental indexing
                name, value, pos = self._literal(block, pos, 6)
                self._add(name, value)
                out.append((name, value))
            elif first & 0xE0 == 0x20:  # dynamic table size update
                size, pos = self._int(block, pos, 5)
                if size > TABLE_SIZE:
                    raise Malformed(f"HPACK: table size {size} above the {TABLE_SIZE} we allow")
                self.limit = size
                self._evict()
            else:  # literal without indexing (0000) or never indexed (0001)
                name, value, pos = self._literal(block, pos, 4)
                out.append((name, value))
        return out

    def _int(self, data: bytes, pos: int, prefix: int) -> tuple[int, int]:
        limit = (1 << prefix) - 1
        value = data[pos] & limit
        pos += 1
        if value < limit:
            return value, pos
        shift = 0
        while True:
            if pos >= len(data):
                raise Malformed("HPACK: an integer runs past the end of the header block")
            byte = data[pos]
            pos += 1
            value += (byte & 0x7F) << shift
            if value > _MAX_INT:
                raise Malformed("HPACK: an integer too large to be a length or an index")
            if not byte & 0x80:
                return value, pos
            shift += 7

    def _string(self, data: bytes, pos: int) -> tuple[str, int]:
        if pos >= len(data):
            raise Malformed("HPACK: a string is missing at the end of the header block")
        huffman = data[pos] & 0x80
        size, pos = self._int(data, pos, 7)
        if pos + size > len(data):
            raise Malformed(f"HPACK: a string of {size} bytes, {len(data) - pos} are left")
        raw = data[pos : pos + size]
        return (huffman_decode(raw, self.deadline) if huffman else raw).decode("latin-1"), pos + size

    def _literal(self, data: bytes, pos: int, prefix: int) -> tuple[str, str, int]:
        index, pos = self._int(data, pos, prefix)
        if index:
            name = self._entry(index)[0]
        else:
            name, pos = self._string(data, pos)
        value, pos = self._string(data, pos)
        return name, value, pos

    def _entry(self, index: int) -> tuple[str, str]:
        if 1 <= index <= len(STATIC):
            return STATIC[index - 1]
        dynamic = index - len(STATIC) - 1
        if index == 0 or dynamic >= len(self.table):
            raise Malformed(f"HPACK: index {index} names no table entry")
        return self.table[dynamic]

    def _add(self, name: str, value: str) -> None:
        self.table.insert(0, (name, value))
        self.size += len(name) + len(value) + _ENTRY_OVERHEAD
        self._evict()

    def _evict(self) -> None:
        while self.size > self.limit and self.table:
            name, value = self.table.pop()
            self.size -= len(name) + len(value) + _ENTRY_OVERHEAD
