"""One gRPC unary call over HTTP/2 with prior knowledge (no TLS, no upgrade: how kubelet and
crictl talk to the runtime's socket), on one fresh connection that carries only stream 1.

We announce a flow-control window as large as the answer we accept, so the peer never waits for
a WINDOW_UPDATE, and stop reading once it sends more than that (``Malformed``). Frames we need
not act on are read and dropped; SETTINGS and PING are acknowledged, as the peer waits for that,
but only ``MAX_CONTROL`` of them a call: each acknowledgement is a write the peer may refuse to
read, and every write and read waits at most until the call's ``Deadline``. Header blocks are
capped (``MAX_HEADER_BYTES``) before they are decoded.
"""

from __future__ import annotations

from typing import Protocol

from tools.wincni.node.cri import hpack
from tools.wincni.node.cri.deadline import Deadline
from tools.wincni.node.cri.errors import CallFailed, Malformed, Unreachable

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, PRIORITY, RST_STREAM, SETTINGS, PUSH_PROMISE, PING, GOAWAY, WINDOW_UPDATE, CONTINUATION = range(10)
END_STREAM, ACK, END_HEADERS, PADDED, PRIORITY_FLAG = 0x1, 0x1, 0x4, 0x8, 0x20
#: SETTINGS_MAX_FRAME_SIZE's default, which we never raise.
MAX_FRAME = 16384
#: SETTINGS and PING frames acknowledged in one call; a peer that sends more is flooding us.
MAX_CONTROL = 32
#: Header block bytes in one call, every stream's, before decoding; announced as
#: SETTINGS_MAX_HEADER_LIST_SIZE. A gRPC answer's headers and trailers take a few hundred.
MAX_HEADER_BYTES = 64 << 10
ENHANCE_YOUR_CALM = 0xB
#: How long the GOAWAY that ends a flood may wait for the peer to take it.
GRACE = 0.1
_DEFAULT_WINDOW = 65535
_STREAM = 1


class Transport(Protocol):
    """A connected byte stream to the runtime (``transport.py``: a unix socket, a named pipe)."""

    def send(self, data: bytes, deadline: float) -> None:
        """All of ``data``; ``Unreachable`` if the peer has not taken it by ``deadline``."""
        ...

    def recv(self, size: int, deadline: float) -> bytes:
        """Up to ``size`` bytes, b"" at the end of the stream; ``Unreachable`` past ``deadline``
        (``time.monotonic``)."""
        ...

    def close(self) -> None: ...


def frame(kind: int, flags: int, stream: int, payload: bytes = b"") -> bytes:
    return len(payload).to_bytes(3, "big") + bytes([kind, flags]) + stream.to_bytes(4, "big") + payload


def request(path: str, message: bytes, timeout: float, window: int) -> bytes:
    """Everything the client sends, in one write: preface, SETTINGS (no push, our window), the
    connection's window raised to match, the request's headers and its one DATA frame."""
    settings = b"".join(
        key.to_bytes(2, "big") + value.to_bytes(4, "big") for key, value in ((2, 0), (4, window), (6, MAX_HEADER_BYTES))
    )
    headers = hpack.encode(
        [
            (":method", "POST"),
            (":scheme", "http"),
            (":path", path),
            (":authority", "localhost"),
            ("content-type", "application/grpc"),
            ("te", "trailers"),
            ("grpc-timeout", f"{max(1, int(timeout * 1000))}m"),
        ]
    )
    body = b"\x00" + len(message).to_bytes(4, "big") + message
    return b"".join(
        (
            PREFACE,
            frame(SETTINGS, 0, 0, settings),
            frame(WINDOW_UPDATE, 0, 0, (window - _DEFAULT_WINDOW).to_bytes(4, "big"))
            if window > _DEFAULT_WINDOW
            else b"",
            frame(HEADERS, END_HEADERS, _STREAM, headers),
            frame(DATA, END_STREAM, _STREAM, body),
        )
    )


class _Reader:
    """Frames off the transport, counting every byte against the cap."""

    def __init__(self, transport: Transport, deadline: Deadline, cap: int) -> None:
        self.transport, self.deadline, self.cap = transport, deadline, cap
        self.buffer = bytearray()
        self.seen = 0

    def exactly(self, size: int) -> bytes:
        while len(self.buffer) < size:
            chunk = self.transport.recv(max(size - len(self.buffer), 4096), self.deadline.at)
            if not chunk:
                raise Unreachable("the runtime closed the connection before it answered")
            self.seen += len(chunk)
            if self.seen > self.cap:
                raise Malformed(f"the runtime's answer is larger than the {self.cap} bytes we accept")
            self.buffer += chunk
        out = bytes(self.buffer[:size])
        del self.buffer[:size]
        return out

    def frame(self) -> tuple[int, int, int, bytes]:
        self.deadline.step("reading the answer's frames")
        head = self.exactly(9)
        size = int.from_bytes(head[:3], "big")
        if size > MAX_FRAME:
            raise Malformed(f"HTTP/2: a frame of {size} bytes, above SETTINGS_MAX_FRAME_SIZE {MAX_FRAME}")
        stream = int.from_bytes(head[5:9], "big") & 0x7FFFFFFF
        return head[3], head[4], stream, self.exactly(size)


def _unpad(flags: int, payload: bytes, priority: bool) -> bytes:
    if flags & PADDED:
        if not payload or payload[0] >= len(payload):
            raise Malformed("HTTP/2: padding longer than its frame")
        payload = payload[1 : len(payload) - payload[0]]
    if priority and flags & PRIORITY_FLAG:
        if len(payload) < 5:
            raise Malformed("HTTP/2: a HEADERS frame too short for its priority fields")
        payload = payload[5:]
    return payload


def unary(transport: Transport, path: str, message: bytes, deadline: Deadline, cap: int) -> bytes:
    """The answer's one protobuf message; ``CriError`` subclasses for everything that goes wrong."""
    transport.send(request(path, message, deadline.timeout, min(cap, 0x7FFFFFFF)), deadline.at)
    reader, decoder = _Reader(transport, deadline, cap), hpack.Decoder(deadline)
    headers: list[tuple[str, str]] = []
    body = bytearray()
    block, in_block, ends_stream, block_stream = bytearray(), False, False, _STREAM
    answered = header_bytes = 0
    while True:
        kind, flags, stream, payload = reader.frame()
        if in_block != (kind == CONTINUATION):
            raise Malformed("HTTP/2: a header block interrupted, or a CONTINUATION outside one")
        if kind in (SETTINGS, PING) and not flags & ACK:
            answered += 1
            transport.send(_acknowledge(kind, payload, answered, transport, deadline), deadline.at)
        elif kind == GOAWAY and len(payload) >= 8 and int.from_bytes(payload[4:8], "big"):
            error = int.from_bytes(payload[4:8], "big")
            raise CallFailed(f"the runtime closed the connection (HTTP/2 GOAWAY, error {error})")
        elif kind == RST_STREAM and stream == _STREAM:
            code = int.from_bytes(payload[:4], "big") if len(payload) >= 4 else -1
            raise CallFailed(f"the runtime reset the call (HTTP/2 RST_STREAM, error {code})")
        elif kind in (HEADERS, CONTINUATION):
            if kind == HEADERS:
                ends_stream, block_stream = bool(flags & END_STREAM) and stream == _STREAM, stream
                payload = _unpad(flags, payload, True)
            elif stream != block_stream:  # RFC 7540 6.10: a connection error
                raise Malformed(
                    f"HTTP/2: a CONTINUATION on stream {stream} in the header block of stream {block_stream} "
                    "(PROTOCOL_ERROR)"
                )
            header_bytes += len(payload)
            if header_bytes > MAX_HEADER_BYTES:
                raise Malformed(f"HTTP/2: more than {MAX_HEADER_BYTES} bytes of header blocks in one answer")
            block += payload  # a CONTINUATION defines END_HEADERS only: other flags are ignored (4.1)
            in_block = not flags & END_HEADERS
            if not in_block:
                decoded = decoder.decode(bytes(block))  # every block, whatever its stream: the table
                block = bytearray()
                if stream == _STREAM:
                    headers += decoded
                    if ends_stream:
                        return _message(headers, bytes(body))
        elif kind == DATA and stream == _STREAM:
            body += _unpad(flags, payload, False)
            if flags & END_STREAM:
                return _message(headers, bytes(body))


def _acknowledge(kind: int, payload: bytes, answered: int, transport: Transport, deadline: Deadline) -> bytes:
    """The ACK a SETTINGS or PING frame asks for; past ``MAX_CONTROL`` in a call, a GOAWAY
    (ENHANCE_YOUR_CALM, RFC 9113 10.5) offered for ``GRACE`` seconds, and ``Malformed``."""
    if kind == SETTINGS and len(payload) % 6:
        raise Malformed("HTTP/2: a SETTINGS frame whose length is not a multiple of 6")
    if kind == PING and len(payload) != 8:
        raise Malformed(f"HTTP/2: a PING frame of {len(payload)} bytes, not 8")
    if answered > MAX_CONTROL:
        goaway = frame(GOAWAY, 0, 0, bytes(4) + ENHANCE_YOUR_CALM.to_bytes(4, "big"))
        try:
            transport.send(goaway, min(deadline.at, deadline.clock() + GRACE))
        except Unreachable:
            pass  # it reads nothing: it learns when we hang up
        raise Malformed(f"HTTP/2: more than {MAX_CONTROL} SETTINGS and PING frames in one call (a flood)")
    return frame(kind, ACK, 0, payload if kind == PING else b"")  # a SETTINGS ACK is empty (6.5)


def _message(headers: list[tuple[str, str]], body: bytes) -> bytes:
    """The gRPC message of a finished call: HTTP 200, grpc-status 0, one uncompressed message."""
    seen = dict(headers)  # the trailers come last and win
    if seen.get(":status") != "200":
        raise CallFailed(f"the runtime answered HTTP status {_said(seen.get(':status') or 'none')}, not 200")
    status = seen.get("grpc-status")
    if status is None:
        raise Malformed("gRPC: the call ended without a grpc-status")
    if status != "0":
        from urllib.parse import unquote

        raise CallFailed(f"gRPC status {_said(status)}: {_said(unquote(seen.get('grpc-message', '')))}".rstrip(": "))
    if len(body) < 5:
        raise Malformed(f"gRPC: the answer holds {len(body)} bytes, not a length-prefixed message")
    if body[0] != 0:
        raise Malformed("gRPC: a compressed answer, which we did not ask for")
    size = int.from_bytes(body[1:5], "big")
    if size != len(body) - 5:
        raise Malformed(f"gRPC: the message says {size} bytes, {len(body) - 5} came")
    return body[5:]


#: The most of the runtime's own words an error quotes.
QUOTED = 200


def _said(text: str) -> str:
    """The runtime's words as one line of ours: what is not printable is '?', and the rest cut."""
    line = "".join(c if c.isprintable() else "?" for c in text[: QUOTED + 1])
    return line if len(line) <= QUOTED else line[:QUOTED] + "..."
