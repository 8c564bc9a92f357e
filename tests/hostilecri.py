"""A hostile CRI runtime: what it writes (``ATTACKS``, bytes built from the attack's description)
and a unix-socket server that writes it (``HostileServer``). The container runtime's socket is a
side we do not trust: each attack makes the client work or wait, and the client must hold its
deadline and caps against every one (tests/e2e/test_cri_hostile.py).

The byte builders use the client's own framing and HPACK encoder, which are plain enough to be
trusted as a writer (each is tested against what a real gRPC server sends).
"""

from __future__ import annotations

import socket
import threading
import time
from dataclasses import dataclass

from tools.wincni.node.cri import h2, hpack

_CHUNK = 16384


def _raw(text: bytes) -> bytes:
    return hpack.integer(len(text), 7, 0) + text


def header_block(block: bytes, end_stream: bool = False) -> bytes:
    """``block`` as one HEADERS frame and as many CONTINUATIONs as its size needs."""
    pieces = [block[i : i + _CHUNK] for i in range(0, len(block), _CHUNK)] or [b""]
    flags = h2.END_STREAM if end_stream else 0
    out = []
    for i, piece in enumerate(pieces):
        last = h2.END_HEADERS if i == len(pieces) - 1 else 0
        out.append(h2.frame(h2.HEADERS if i == 0 else h2.CONTINUATION, (flags if i == 0 else 0) | last, 1, piece))
    return b"".join(out)


HEAD = header_block(hpack.encode([(":status", "200"), ("content-type", "application/grpc")]))
TRAILERS = header_block(hpack.encode([("grpc-status", "0")]), end_stream=True)


def grpc_answer(message: bytes) -> bytes:
    """A whole successful answer carrying ``message``, in DATA frames of the largest size."""
    body = b"\x00" + len(message).to_bytes(4, "big") + message
    data = b"".join(h2.frame(h2.DATA, 0, 1, body[i : i + _CHUNK]) for i in range(0, len(body), _CHUNK))
    return HEAD + data + TRAILERS


def settings_flood(count: int = 455) -> bytes:
    return h2.frame(h2.SETTINGS, 0, 0) * count


def ping_flood(count: int = 240) -> bytes:
    return b"".join(h2.frame(h2.PING, 0, 0, i.to_bytes(8, "big")) for i in range(count))


def empty_items(count: int = 8_300_000) -> bytes:
    """ListPodSandboxResponse.items (field 1), each an empty PodSandbox: two bytes a sandbox."""
    return grpc_answer(b"\x0a\x00" * count)


def unknown_fields(count: int = 8_000_000) -> bytes:
    """A response of nothing but field 15 (varint 0), which no version of CRI has."""
    return grpc_answer(b"\x78\x00" * count)


def huffman_header(size: int = 16_000_000) -> bytes:
    """One header whose value is ``size`` bytes of Huffman code ('0' is 00000: all zero bits,
    ``size`` a multiple of 5 so the string ends on a whole symbol): 8/5 characters a byte."""
    value = hpack.integer(size, 7, 0x80) + bytes(size)
    return header_block(b"\x00" + _raw(b"x") + value)


def hpack_literals(count: int = 4_000_000) -> bytes:
    """One header block of ``count`` literal fields ``x: ``, four bytes each."""
    return header_block(b"\x00\x01x\x00" * count)


ATTACKS = {
    "settings": settings_flood,
    "ping": ping_flood,
    "items": empty_items,
    "huffman": huffman_header,
    "protobuf": unknown_fields,
    "hpack": hpack_literals,
}
#: The bytes a slow reader takes each second of a flood: one acknowledgement of it.
ACK_SIZES = {"settings": 9, "ping": 17}


@dataclass
class Served:
    """What one connection saw: when it started and ended, and how many bytes the client wrote."""

    started: float
    ended: float = 0.0
    read: int = 0


class HostileServer:
    """Accepts on ``path`` until closed; each connection reads the client's request, writes the
    attack in one write, then reads ``ACK_SIZES`` bytes a second (floods) or waits for the client
    to hang up, ``hold`` seconds at most (the server's own cap: the bound on today's client)."""

    def __init__(self, path: str, attack: bytes, ack_size: int = 0, hold: float = 90.0) -> None:
        self.path, self.attack, self.ack_size, self.hold = path, attack, ack_size, hold
        self.served: list[Served] = []
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(path)
        self.sock.listen(4)
        self.sock.settimeout(0.1)  # accept wakes to see ``closed``: closing does not wake it
        self.closed = threading.Event()
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    @property
    def endpoint(self) -> str:
        return f"unix://{self.path}"

    def _accept(self) -> None:
        while not self.closed.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with conn:
                self._serve(conn)

    def _serve(self, conn: socket.socket) -> None:
        seen = Served(time.monotonic())
        self.served.append(seen)
        conn.settimeout(self.hold)
        try:
            seen.read += len(_read_request(conn))
            conn.sendall(self.attack)
            while time.monotonic() - seen.started < self.hold and not self.closed.is_set():
                if self.ack_size:
                    time.sleep(1.0)
                got = conn.recv(self.ack_size or 65536)
                if not got:
                    break
                seen.read += len(got)
        except OSError:
            pass
        seen.ended = time.monotonic()

    def close(self) -> None:
        self.closed.set()
        self.thread.join(self.hold + 5)
        self.sock.close()


def _read_request(conn: socket.socket) -> bytes:
    """The client's preface and frames up to the DATA frame that ends its stream."""
    got = bytearray()
    while True:
        chunk = conn.recv(65536)
        if not chunk:
            return bytes(got)
        got += chunk
        pos = len(h2.PREFACE)
        while pos + 9 <= len(got):
            size = int.from_bytes(got[pos : pos + 3], "big")
            if got[pos + 3] == h2.DATA and got[pos + 4] & h2.END_STREAM:
                return bytes(got)
            pos += 9 + size
