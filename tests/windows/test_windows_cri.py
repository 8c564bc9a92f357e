"""The CRI client's named-pipe transport (``tools/wincni/cri/transport.py``), which only Windows
runs: containerd listens on ``\\\\.\\pipe\\containerd-containerd``. Our source runs under the
lane's Windows CPython; a pipe server in the same process (CreateNamedPipeW, as containerd's
go-winio listener is) answers one ListPodSandbox as a gRPC server does, byte for byte what the
unit tests and crifake (tests/e2e/test_cri_client.py) prove the HTTP/2 side against. The client
reads the answer, gives up on a server that never answers at its deadline (``PeekNamedPipe``
polls, no blocking read), and says so for a pipe nobody listens on. Two hostile runtimes (as
tests/hostilecri.py's on a unix socket): one floods SETTINGS frames (the client answers 32, then
hangs up saying so), one has no buffer and reads nothing (the client's write, in the pipe's
non-blocking mode, gives up at the deadline instead of blocking)."""

from __future__ import annotations

import json

from winenode import ROOT, WineNode, toolchain

PROBE = r"""
import ctypes, json, sys, threading, time
sys.path.insert(0, sys.argv[1])
from tools.wincni.node.cri import h2, hpack, list_sandboxes
from tools.wincni.node.cri.errors import CriError

k32 = ctypes.WinDLL("kernel32", use_last_error=True)
k32.CreateNamedPipeW.restype = ctypes.c_void_p
k32.CreateNamedPipeW.argtypes = [ctypes.c_wchar_p] + [ctypes.c_ulong] * 6 + [ctypes.c_void_p]
k32.ConnectNamedPipe.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
k32.ReadFile.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_ulong, ctypes.POINTER(ctypes.c_ulong), ctypes.c_void_p]
k32.WriteFile.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.POINTER(ctypes.c_ulong), ctypes.c_void_p]
k32.DisconnectNamedPipe.argtypes = k32.CloseHandle.argtypes = [ctypes.c_void_p]

def field(n, raw):
    return bytes([n << 3 | 2, len(raw)]) + raw

SANDBOX = field(1, b"pod-a") + field(2, field(1, b"web") + field(2, b"uid-1") + field(3, b"default")) + bytes([0x18, 1])
MESSAGE = field(1, SANDBOX)
ANSWER = (
    h2.frame(h2.SETTINGS, 0, 0)
    + h2.frame(h2.HEADERS, h2.END_HEADERS, 1, hpack.encode([(":status", "200"), ("content-type", "application/grpc")]))
    + h2.frame(h2.DATA, 0, 1, b"\x00" + len(MESSAGE).to_bytes(4, "big") + MESSAGE)
    + h2.frame(h2.HEADERS, h2.END_HEADERS | h2.END_STREAM, 1, hpack.encode([("grpc-status", "0")]))
)

def serve(name, answer, ready, size, reads):
    pipe = k32.CreateNamedPipeW(name, 3, 0, 1, size, size, 0, None)  # duplex, byte mode
    ready.set()
    k32.ConnectNamedPipe(pipe, None)
    buf, n = ctypes.create_string_buffer(65536), ctypes.c_ulong(0)
    got = b""
    while reads and len(got) < len(h2.PREFACE) + 9:
        if not k32.ReadFile(pipe, buf, 65536, ctypes.byref(n), None):
            break
        got += buf.raw[: n.value]
    if answer:
        k32.WriteFile(pipe, answer, len(answer), ctypes.byref(n), None)
        time.sleep(0.5)
    else:
        time.sleep(3)  # a runtime that accepts and never answers
    k32.DisconnectNamedPipe(pipe)
    k32.CloseHandle(pipe)
    out["server_read_preface"] = got.startswith(h2.PREFACE) or out.get("server_read_preface", False)

out = {}
CASES = (
    ("answer", ANSWER, 65536, True),
    ("silent", b"", 65536, True),
    ("flood", h2.frame(h2.SETTINGS, 0, 0) * 455, 65536, True),
    ("deaf", b"", 0, False),
)
for case, answer, size, reads in CASES:
    name = "\\\\.\\pipe\\wincni-cri-" + case
    ready = threading.Event()
    server = threading.Thread(target=serve, args=(name, answer, ready, size, reads), daemon=True)
    server.start()
    ready.wait(5)
    started = time.monotonic()
    try:
        out[case] = [[s.id, s.name, s.uid, s.namespace, s.state] for s in list_sandboxes("npipe:////./pipe/wincni-cri-" + case, timeout=1.0)]
    except CriError as exc:
        out[case] = type(exc).__name__ + ": " + str(exc)
    out[case + "_s"] = time.monotonic() - started
    server.join(5)
try:
    list_sandboxes("npipe:////./pipe/nobody-listens", timeout=0.5)
except CriError as exc:
    out["absent"] = type(exc).__name__ + ": " + str(exc)
print(json.dumps(out))
"""


def cri_probe(node: WineNode) -> dict:
    python = toolchain.winpath(toolchain.cache_dir() / "python" / "python.exe")
    script = node.root / "cri_probe.py"
    script.write_text(PROBE)
    proc = node.wine(python, toolchain.winpath(script), toolchain.winpath(ROOT))
    assert proc.returncode == 0, proc.stderr.decode()[-3000:]
    return json.loads(proc.stdout.decode().strip().splitlines()[-1])


def test_list_pod_sandbox_over_a_named_pipe(node: WineNode) -> None:
    said = cri_probe(node)
    assert said["answer"] == [["pod-a", "web", "uid-1", "default", "SANDBOX_NOTREADY"]], said
    assert said["server_read_preface"], said
    assert said["silent"].startswith("Unreachable: no answer on \\\\.\\pipe\\wincni-cri-silent"), said
    assert 0.9 < said["silent_s"] < 2.5, said
    assert said["flood"] == "Malformed: HTTP/2: more than 32 SETTINGS and PING frames in one call (a flood)", said
    assert said["flood_s"] < 2.5, said
    assert said["deaf"].startswith("Unreachable: "), said  # it took nothing, or answered nothing, in time
    assert 0.9 < said["deaf_s"] < 2.5, said
    assert said["absent"].startswith("Unreachable: cannot open \\\\.\\pipe\\nobody-listens: Windows error 2"), said
