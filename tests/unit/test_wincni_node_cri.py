"""tools/wincni/cri without a runtime: the protobuf decoder, HPACK (Huffman included), the HTTP/2
exchange over a scripted transport, and the unix socket's deadline. Bad input from the peer is a
``CriError`` subclass, never another exception and never a wait past the deadline. The client
against a real gRPC server (Go's, over k8s.io/cri-api) is tests/e2e/test_cri_client.py."""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tools.wincni.node.cri import h2, hpack, proto, transport
from tools.wincni.node.cri.deadline import Deadline
from tools.wincni.node.cri.errors import CallFailed, CriError, Malformed, Unreachable
from tools.wincni.node.cri.huffman import CODES

# ---------------------------------------------------------------------------- protobuf


def varint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    return bytes(out + bytes([n]))


def field(number: int, value: int | bytes | str) -> bytes:
    if isinstance(value, int):
        return varint(number << 3) + varint(value)
    raw = value.encode() if isinstance(value, str) else value
    return varint(number << 3 | 2) + varint(len(raw)) + raw


def sandbox_bytes(s: proto.ListedSandbox, extra: bytes = b"") -> bytes:
    meta = field(1, s.name) + field(2, s.uid) + field(3, s.namespace) + field(4, s.attempt)
    state = {v: k for k, v in proto.STATES.items()}[s.state]
    return field(1, s.id) + field(2, meta) + field(3, state) + extra


texts = st.text(max_size=20)
sandboxes = st.builds(
    proto.ListedSandbox,
    texts,
    texts,
    texts,
    texts,
    st.integers(0, 2**32 - 1),
    st.sampled_from(list(proto.STATES.values())),
)


@given(st.lists(sandboxes, max_size=5))
def test_the_decoder_reads_what_a_protobuf_encoder_writes(items: list[proto.ListedSandbox]) -> None:
    # created_at (4, varint), labels (5, map entries) and a fixed64 of a newer runtime are skipped
    extra = field(4, 1_700_000_000) + field(5, field(1, "app") + field(2, "web")) + bytes([0x79]) + bytes(8)
    data = b"".join(field(1, sandbox_bytes(s, extra)) for s in items)
    assert proto.decode_list_response(data) == items


@settings(max_examples=300)
@given(st.binary(max_size=200))
def test_any_bytes_decode_or_are_malformed_within_a_step_a_byte(data: bytes) -> None:
    deadline = Deadline(1e9)
    try:
        proto.decode_list_response(data, deadline)
    except Malformed:
        pass
    assert deadline.steps <= 2 * len(data) + 3  # a field is two bytes at least, nested twice


@pytest.mark.parametrize(
    ("data", "says"),
    [
        (b"\x0a\x05ab", "says 5 bytes, 2 are left"),
        (b"\x0a\x02\x0a\x80", "runs past the end"),
        (b"\x0b", "wire type 3"),
        (b"\x08" + b"\xff" * 11, "longer than 10 bytes"),
        (field(1, field(1, b"\xff")), "not UTF-8"),
        (field(1, field(3, b"x")), "PodSandbox.state is not a number"),
        (b"\x00", "field number 0"),
    ],
)
def test_malformed_protobuf_says_what(data: bytes, says: str) -> None:
    with pytest.raises(Malformed, match=says):
        proto.decode_list_response(data)


# ---------------------------------------------------------------------------- HPACK


def huffman(raw: bytes) -> bytes:
    bits = "".join(format(CODES[b][0], f"0{CODES[b][1]}b") for b in raw)
    bits += "1" * (-len(bits) % 8)
    return bytes(int(bits[i : i + 8], 2) for i in range(0, len(bits), 8))


@given(st.binary(max_size=64))
def test_huffman_decodes_what_the_code_of_rfc_7541_encodes(raw: bytes) -> None:
    assert hpack.huffman_decode(huffman(raw)) == raw


def test_huffman_refuses_bad_padding_and_the_end_of_string_symbol() -> None:
    with pytest.raises(Malformed, match="padding"):
        hpack.huffman_decode(b"\x00")  # '0' then 3 zero bits of padding
    with pytest.raises(Malformed, match="no symbol"):
        hpack.huffman_decode(b"\xff\xff\xff\xff")


def literal(name: str, value: str, kind: int = 0x40, huff: bool = True) -> bytes:
    def s(text: str) -> bytes:
        raw = huffman(text.encode()) if huff else text.encode()
        return bytes([0x80 | len(raw) if huff else len(raw)]) + raw

    return bytes([kind]) + s(name) + s(value)


def test_the_dynamic_table_carries_over_blocks_and_evicts_as_the_peer_does() -> None:
    d = hpack.Decoder()
    first = d.decode(b"\x88" + literal("grpc-status", "0") + literal("content-type", "application/grpc"))
    assert first == [(":status", "200"), ("grpc-status", "0"), ("content-type", "application/grpc")]
    assert d.decode(b"\xbf\xbe") == [("grpc-status", "0"), ("content-type", "application/grpc")]  # 63, 62
    assert d.decode(b"\x3f\xe1\x1f") == []  # table size 4096 -> 4096 (no change)
    assert d.decode(b"\x20") == [] and d.table == []  # size 0: everything evicted
    with pytest.raises(Malformed, match="index 62 names no table entry"):
        d.decode(b"\xbe")
    # a literal whose name is a static entry's, never indexed
    assert d.decode(b"\x1f\x10" + literal("", "x", 0, False)[2:]) == [("content-type", "x")]


@settings(max_examples=300)
@given(st.binary(max_size=120))
def test_any_header_block_decodes_or_is_malformed_within_a_step_a_byte(block: bytes) -> None:
    deadline = Deadline(1e9)
    try:
        hpack.Decoder(deadline).decode(block)
    except Malformed:
        pass
    assert deadline.steps <= 2 * len(block)  # a representation is a byte at least, a Huffman byte one step


def test_what_we_send_decodes_back() -> None:
    headers = [(":path", "/runtime.v1.RuntimeService/ListPodSandbox"), ("te", "trailers")]
    assert hpack.Decoder().decode(hpack.encode(headers)) == headers


# ---------------------------------------------------------------------------- HTTP/2 + gRPC


class Scripted:
    """A transport that answers with ``script`` in chunks of ``chunk`` bytes, then closes."""

    def __init__(self, script: bytes, chunk: int = 7) -> None:
        self.script, self.chunk = script, chunk
        self.sent = bytearray()

    def send(self, data: bytes, deadline: float) -> None:
        self.sent += data

    def recv(self, size: int, deadline: float) -> bytes:
        out, self.script = self.script[: min(size, self.chunk)], self.script[min(size, self.chunk) :]
        return out

    def close(self) -> None:
        pass


def frames(data: bytes) -> list[tuple[int, int, int, bytes]]:
    out = []
    while data:
        size = int.from_bytes(data[:3], "big")
        out.append((data[3], data[4], int.from_bytes(data[5:9], "big"), data[9 : 9 + size]))
        data = data[9 + size :]
    return out


def headers(fields: list[tuple[str, str]], stream: int = 1, flags: int = h2.END_HEADERS) -> bytes:
    return h2.frame(h2.HEADERS, flags, stream, b"".join(literal(n, v) for n, v in fields))


def grpc(message: bytes) -> bytes:
    return b"\x00" + len(message).to_bytes(4, "big") + message


OK_HEAD = [(":status", "200"), ("content-type", "application/grpc")]
TRAILERS = [("grpc-status", "0"), ("grpc-message", "")]
ANSWER = field(1, sandbox_bytes(proto.ListedSandbox("abc", "web", "u1", "default")))


def call(script: bytes, cap: int = 1 << 20) -> bytes:
    return h2.unary(Scripted(script), proto.LIST_POD_SANDBOX, b"", Deadline(1.0), cap)


def test_a_whole_answer_with_settings_ping_padding_and_continuation() -> None:
    block = b"".join(literal(n, v) for n, v in TRAILERS)
    t = Scripted(
        h2.frame(h2.SETTINGS, 0, 0, bytes(6))
        + h2.frame(h2.PING, 0, 0, b"12345678")
        + headers(OK_HEAD)
        + h2.frame(h2.DATA, h2.PADDED, 1, b"\x03" + grpc(ANSWER) + b"\x00\x00\x00")
        + h2.frame(h2.WINDOW_UPDATE, 0, 0, (1).to_bytes(4, "big"))
        + h2.frame(h2.HEADERS, h2.END_STREAM, 1, block[:5])
        + h2.frame(h2.CONTINUATION, h2.END_HEADERS, 1, block[5:])
    )
    assert proto.decode_list_response(h2.unary(t, proto.LIST_POD_SANDBOX, b"", Deadline(1.0), 1 << 20)) == [
        proto.ListedSandbox("abc", "web", "u1", "default")
    ]
    assert t.sent.startswith(h2.PREFACE)
    assert h2.frame(h2.SETTINGS, h2.ACK, 0) in t.sent and h2.frame(h2.PING, h2.ACK, 0, b"12345678") in t.sent
    sent = frames(bytes(t.sent[len(h2.PREFACE) :]))
    [request_headers] = [payload for kind, _, _, payload in sent if kind == h2.HEADERS]
    assert (":path", proto.LIST_POD_SANDBOX) in hpack.Decoder().decode(request_headers)
    assert [payload for kind, _, _, payload in sent if kind == h2.DATA] == [grpc(b"")]


@pytest.mark.parametrize(
    ("script", "error", "says"),
    [
        (
            headers([*OK_HEAD, ("grpc-status", "14"), ("grpc-message", "down%20now")], flags=5),
            CallFailed,
            "14: down now",
        ),
        (headers([(":status", "404")], flags=5), CallFailed, "HTTP status 404"),
        (headers(OK_HEAD) + h2.frame(h2.DATA, 1, 1, grpc(b"")), Malformed, "without a grpc-status"),
        (headers(OK_HEAD) + h2.frame(h2.RST_STREAM, 0, 1, (8).to_bytes(4, "big")), CallFailed, "RST_STREAM, error 8"),
        (h2.frame(h2.GOAWAY, 0, 0, bytes(4) + (2).to_bytes(4, "big")), CallFailed, "GOAWAY, error 2"),
        (headers(OK_HEAD), Unreachable, "closed the connection"),
        (b"\x00\x40\x01" + bytes(6), Malformed, "a frame of 16385 bytes"),
        (h2.frame(h2.CONTINUATION, 4, 1), Malformed, "CONTINUATION outside"),
        (h2.frame(h2.HEADERS, 0, 1, b"") + h2.frame(h2.DATA, 0, 1), Malformed, "header block interrupted"),
        (h2.frame(h2.SETTINGS, 0, 0, b"12345"), Malformed, "multiple of 6"),
        (h2.frame(h2.DATA, h2.PADDED, 1, b"\x09"), Malformed, "padding longer"),
        (
            headers(OK_HEAD) + h2.frame(h2.DATA, 0, 1, b"\x01" + bytes(4)) + headers(TRAILERS, flags=5),
            Malformed,
            "compressed",
        ),
        (
            headers(OK_HEAD) + h2.frame(h2.DATA, 0, 1, grpc(b"abc")[:-1]) + headers(TRAILERS, flags=5),
            Malformed,
            "says 3 bytes, 2 came",
        ),
    ],
)
def test_what_goes_wrong_is_a_cri_error_saying_what(script: bytes, error: type, says: str) -> None:
    with pytest.raises(error, match=says):
        call(script)


def test_an_answer_larger_than_the_cap_is_refused_as_it_arrives() -> None:
    flood = h2.frame(h2.WINDOW_UPDATE, 0, 0, bytes(4)) * 1000  # read and dropped, never ending
    with pytest.raises(Malformed, match="larger than the 4096 bytes"):
        call(flood, cap=4096)


@settings(max_examples=300)
@given(st.binary(max_size=300))
def test_any_bytes_after_a_good_start_end_in_an_answer_or_a_cri_error(tail: bytes) -> None:
    try:
        call(h2.frame(h2.SETTINGS, 0, 0) + headers(OK_HEAD) + tail, cap=4096)
    except CriError:
        pass


# ---------------------------------------------------------------------------- transports


@pytest.mark.parametrize(
    ("endpoint", "parsed"),
    [
        ("unix:///run/containerd/containerd.sock", ("unix://", "/run/containerd/containerd.sock")),
        ("npipe:////./pipe/containerd-containerd", ("npipe://", r"\\.\pipe\containerd-containerd")),
        (r"npipe://\\.\pipe\containerd-containerd", ("npipe://", r"\\.\pipe\containerd-containerd")),
    ],
)
def test_runtime_endpoints_are_spelled_as_crictl_spells_them(endpoint: str, parsed: tuple[str, str]) -> None:
    assert transport.parse_endpoint(endpoint) == parsed


@pytest.mark.parametrize("endpoint", ["tcp://127.0.0.1:1", "unix://", "npipe:////./C:/x", "/run/containerd.sock"])
def test_other_endpoints_are_refused(endpoint: str) -> None:
    with pytest.raises(ValueError):
        transport.parse_endpoint(endpoint)


def test_a_runtime_that_accepts_and_never_answers_is_given_up_at_the_deadline(tmp_path: Path) -> None:
    from tools.wincni.node.cri import list_sandboxes

    path = str(tmp_path / "cri.sock")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(1)
    accepted: list[socket.socket] = []
    thread = threading.Thread(target=lambda: accepted.append(server.accept()[0]), daemon=True)
    thread.start()
    started = time.monotonic()
    with pytest.raises(Unreachable, match="no answer"):
        list_sandboxes(f"unix://{path}", timeout=0.3)
    assert time.monotonic() - started < 2
    thread.join(1)
    for s in (*accepted, server):
        s.close()


def test_named_pipes_are_windows_only_here() -> None:
    from tools.wincni.node.cri import list_sandboxes

    with pytest.raises(Unreachable, match="Windows only"):
        list_sandboxes("npipe:////./pipe/containerd-containerd", timeout=0.1)


def test_a_continuations_undefined_flags_are_ignored_not_read_as_padding() -> None:
    """RFC 7540 6.10: CONTINUATION defines END_HEADERS only; 0x8 (PADDED on HEADERS and DATA) on it
    is an undefined flag, which 4.1 says to ignore: the fragment is whole, first byte included."""
    block = hpack.encode(OK_HEAD + TRAILERS)
    script = h2.frame(h2.HEADERS, h2.END_STREAM, 1, block[:5]) + h2.frame(
        h2.CONTINUATION, h2.END_HEADERS | h2.PADDED | 0x20, 1, block[5:]
    )
    with pytest.raises(Malformed, match="gRPC: the answer holds 0 bytes"):
        call(script)  # the whole block decoded: the status is read, and the (empty) body judged


def test_a_continuation_on_another_stream_is_a_protocol_error() -> None:
    """RFC 7540 6.10: a CONTINUATION must follow on the stream of the HEADERS it continues; any
    other is a connection error of type PROTOCOL_ERROR, whatever the block would decode to."""
    block = hpack.encode(OK_HEAD + TRAILERS)
    script = h2.frame(h2.HEADERS, h2.END_STREAM, 3, block[:5]) + h2.frame(h2.CONTINUATION, h2.END_HEADERS, 1, block[5:])
    with pytest.raises(Malformed, match="PROTOCOL_ERROR"):
        call(script)


# ---------------------------------------------------------------------------- the deadline and the caps


class Ticking:
    """A clock that moves one second each time it is read."""

    def __init__(self) -> None:
        self.now = -1.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


def test_decoding_steps_look_at_the_clock_every_so_many() -> None:
    from tools.wincni.node.cri.deadline import STEPS_PER_LOOK

    clock = Ticking()
    deadline = Deadline(1.5, clock)  # set at 0, over from the second look on
    for _ in range(STEPS_PER_LOOK * 2 - 1):
        deadline.step("working")
    assert clock.now == 1.0  # set, then one look
    with pytest.raises(Unreachable, match="the call's 1.5 s deadline passed while working"):
        deadline.step("working")


HUFFMAN_ZEROS = b"\x00\x01x" + bytes([0xFF, 0xA1, 0x1E]) + bytes(4000)  # x: 6400 '0's, Huffman-coded


@pytest.mark.parametrize(
    ("decode", "doing"),
    [
        (lambda d: proto.decode_list_response(field(1, b"") * 5000, d), "decoding the pod list"),
        (lambda d: hpack.Decoder(d).decode(HUFFMAN_ZEROS), "decoding a Huffman-coded header"),
        (lambda d: hpack.huffman_decode(bytes(4000), d), "decoding a Huffman-coded header"),
        (
            lambda d: h2.unary(Scripted(h2.frame(h2.WINDOW_UPDATE, 0, 0, bytes(4)) * 4000), "/", b"", d, 1 << 20),
            "reading the answer's frames",
        ),
    ],
)
def test_every_decoder_stops_at_the_deadline(decode, doing: str) -> None:
    with pytest.raises(Unreachable, match=f"deadline passed while {doing}"):
        decode(Deadline(2.5, Ticking()))


def test_the_huffman_case_above_decodes_whole_without_a_deadline() -> None:
    assert hpack.Decoder().decode(HUFFMAN_ZEROS) == [("x", "0" * 6400)]


def empty_items(count: int) -> bytes:
    return field(1, b"") * count


def test_at_most_100000_sandboxes_are_listed() -> None:
    assert len(proto.decode_list_response(empty_items(proto.MAX_SANDBOXES))) == proto.MAX_SANDBOXES
    with pytest.raises(Malformed, match="more than 100000 sandboxes listed"):
        proto.decode_list_response(empty_items(proto.MAX_SANDBOXES + 1))


def test_fields_a_sandbox_and_a_response_may_hold() -> None:
    labels = field(5, field(1, "k") + field(2, "v"))
    assert proto.decode_list_response(field(1, field(1, "a") + labels * (proto.MAX_FIELDS - 1))) == [
        proto.ListedSandbox("a")
    ]
    with pytest.raises(Malformed, match="a PodSandbox of more than 4096 fields"):
        proto.decode_list_response(field(1, field(1, "a") + labels * proto.MAX_FIELDS))
    unknown = field(15, 0) * proto.MAX_UNKNOWN
    assert proto.decode_list_response(unknown + field(1, field(1, "a"))) == [proto.ListedSandbox("a")]
    with pytest.raises(Malformed, match="more than 1024 fields beside the sandboxes"):
        proto.decode_list_response(unknown + field(15, 0))


def test_header_fields_are_counted_over_every_block_of_a_call() -> None:
    d = hpack.Decoder()
    assert len(d.decode(b"\x88" * 200)) == 200
    assert len(d.decode(b"\x88" * (hpack.MAX_FIELDS - 200))) == hpack.MAX_FIELDS - 200
    with pytest.raises(Malformed, match="more than 256 header fields in one answer"):
        d.decode(b"\x88")


def answer_after(prelude: bytes) -> bytes:
    return prelude + headers(OK_HEAD) + h2.frame(h2.DATA, 0, 1, grpc(ANSWER)) + headers(TRAILERS, flags=5)


@pytest.mark.parametrize("kind", [h2.SETTINGS, h2.PING])
def test_a_call_acknowledges_32_settings_and_pings_then_calls_a_flood_a_flood(kind: int) -> None:
    control = h2.frame(kind, 0, 0, bytes(8) if kind == h2.PING else b"")
    ack = h2.frame(kind, h2.ACK, 0, bytes(8) if kind == h2.PING else b"")
    assert call(answer_after(control * h2.MAX_CONTROL)) == ANSWER
    t = Scripted(answer_after(control * (h2.MAX_CONTROL + 1)))
    with pytest.raises(Malformed, match="more than 32 SETTINGS and PING frames in one call"):
        h2.unary(t, "/", b"", Deadline(1.0), 1 << 20)
    sent = frames(bytes(t.sent[len(h2.PREFACE) :]))
    assert sent.count(frames(ack)[0]) == h2.MAX_CONTROL
    assert sent[-1] == (h2.GOAWAY, 0, 0, bytes(4) + (h2.ENHANCE_YOUR_CALM).to_bytes(4, "big"))


def test_a_ping_of_another_size_than_8_is_malformed() -> None:
    with pytest.raises(Malformed, match="a PING frame of 7 bytes, not 8"):
        call(h2.frame(h2.PING, 0, 0, bytes(7)))


def test_header_blocks_are_capped_before_they_are_decoded() -> None:
    from hostilecri import header_block

    literals = b"\x00\x01x\x00" * (h2.MAX_HEADER_BYTES // 4)  # 64 KiB of them: within the cap
    with pytest.raises(Malformed, match="more than 65536 bytes of header blocks in one answer"):
        call(header_block(literals + b"\x88"))
    with pytest.raises(Malformed, match="more than 256 header fields"):  # whole, it is decoded and refused
        call(header_block(literals))


class Timed(Scripted):
    """A scripted transport that records the deadline of every send."""

    def __init__(self, script: bytes) -> None:
        super().__init__(script)
        self.deadlines: list[float] = []

    def send(self, data: bytes, deadline: float) -> None:
        self.deadlines.append(deadline)
        super().send(data, deadline)


def test_every_send_waits_at_most_until_the_deadline() -> None:
    t = Timed(answer_after(h2.frame(h2.SETTINGS, 0, 0) * (h2.MAX_CONTROL + 1)))
    deadline = Deadline(30.0)
    with pytest.raises(Malformed):
        h2.unary(t, "/", b"", deadline, 1 << 20)
    assert len(t.deadlines) == 1 + h2.MAX_CONTROL + 1  # the request, the ACKs, the GOAWAY
    assert set(t.deadlines[:-1]) == {deadline.at}
    assert t.deadlines[-1] <= time.monotonic() + h2.GRACE < deadline.at  # the GOAWAY is only offered


def test_the_runtime_s_words_are_quoted_on_one_line_and_cut() -> None:
    """A line break in grpc-message (%0A) or :status would let the runtime write lines of the
    sweep's report that look like ours."""
    forged = "down%0Areleased 10.244.4.7 (reserved 3600 s ago)" + "x" * 300
    with pytest.raises(CallFailed) as caught:
        call(h2.frame(h2.HEADERS, 5, 1, hpack.encode([*OK_HEAD, ("grpc-status", "14"), ("grpc-message", forged)])))
    one_line = ("down?released 10.244.4.7 (reserved 3600 s ago)" + "x" * 300)[: h2.QUOTED] + "..."
    assert str(caught.value) == f"gRPC status 14: {one_line}"
    with pytest.raises(CallFailed, match=r"HTTP status 500\?kept a, not 200$"):
        call(h2.frame(h2.HEADERS, 5, 1, hpack.encode([(":status", "500\nkept a")])))
