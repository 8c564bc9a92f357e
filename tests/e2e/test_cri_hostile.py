"""The CRI client and the sweep against a hostile runtime (tests/hostilecri.py) on a unix socket:
floods of SETTINGS and PING read back one acknowledgement a second, 8.3 million empty sandboxes,
a Huffman-coded header of 15 MiB, floods of unknown protobuf fields and of HPACK literals. Each
ends in one ``CriError`` line within the call's deadline (plus a loaded machine's margin), and
``wincni reclaim`` goes on with the ownership rule alone: it frees what it frees without a
runtime, no more. Without the deadline held end to end these ran 7 to 90 s each."""

from __future__ import annotations

import io
import os
import time
from pathlib import Path
from typing import Iterator

import pytest

from hnsnode import Node
from hostilecri import ACK_SIZES, ATTACKS, HostileServer
from test_cri_client import a_gone_pod, age
from tools.wincni.cli.main import main as wincni_main
from tools.wincni.node.cri import TIMEOUT, list_sandboxes
from tools.wincni.node.cri.errors import CriError

pytestmark = pytest.mark.slow

DEADLINE = 2.0
MARGIN = 3.0  # the machine is shared and loaded: the bound is the deadline plus this, not the deadline
SAYS = {
    "settings": "HTTP/2: more than 32 SETTINGS and PING frames in one call (a flood)",
    "ping": "HTTP/2: more than 32 SETTINGS and PING frames in one call (a flood)",
    "items": "protobuf: more than 100000 sandboxes listed",
    "huffman": "HTTP/2: more than 65536 bytes of header blocks in one answer",
    "protobuf": "protobuf: more than 1024 fields beside the sandboxes",
    "hpack": "HTTP/2: more than 65536 bytes of header blocks in one answer",
}


def said_in_time(message: str, attack: str, deadline: float) -> bool:
    """The cap the attack meets, or on a machine too busy to get there in time, the deadline."""
    return message == SAYS[attack] or message.startswith(f"the call's {deadline:g} s deadline passed while ")


@pytest.fixture
def socket_dir() -> Iterator[Path]:
    short = Path(f"/tmp/cri-{os.getpid()}-{time.monotonic_ns()}")  # a unix socket path has 107 bytes at most
    short.mkdir()
    yield short
    for p in short.iterdir():
        p.unlink()
    short.rmdir()


def serve(socket_dir: Path, attack: str) -> HostileServer:
    """The attack's server, holding a connection long enough to outlast any bound asserted here."""
    return HostileServer(str(socket_dir / f"{attack}.sock"), ATTACKS[attack](), ACK_SIZES.get(attack, 0), hold=30)


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_each_attack_is_one_cri_error_line_within_the_deadline(socket_dir: Path, attack: str) -> None:
    server = serve(socket_dir, attack)
    try:
        started = time.monotonic()
        with pytest.raises(CriError) as caught:
            list_sandboxes(server.endpoint, timeout=DEADLINE)
        took = time.monotonic() - started
    finally:
        server.close()
    assert said_in_time(str(caught.value), attack, DEADLINE), caught.value
    assert took < DEADLINE + MARGIN, f"{attack}: {took:.1f} s"
    [served] = server.served
    assert served.ended - served.started < DEADLINE + MARGIN, "the client hung up once it gave up"


def test_a_runtime_that_reads_nothing_holds_a_send_no_longer_than_the_deadline(socket_dir: Path) -> None:
    """Every acknowledgement is a write: past the socket's buffer, a runtime that reads nothing
    more made each one wait as long as the whole call may take."""
    import socket

    from tools.wincni.node.cri.errors import Unreachable
    from tools.wincni.node.cri.transport import UnixSocket

    deaf = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    deaf.bind(str(socket_dir / "deaf.sock"))
    deaf.listen(1)  # never accepts, never reads
    stream = UnixSocket(str(socket_dir / "deaf.sock"), DEADLINE)
    try:
        started = time.monotonic()
        with pytest.raises(Unreachable, match="did not take what we sent in time"):
            stream.send(bytes(64 << 20), time.monotonic() + DEADLINE)  # more than any socket buffer
        took = time.monotonic() - started
    finally:
        stream.close()
        deaf.close()
    assert DEADLINE - 0.5 < took < DEADLINE + MARGIN, took


# ---------------------------------------------------------------------------- the sweep


def reclaim(node: Node, endpoint: str, conf: Path) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    argv = ["reclaim", "--dry-run", "--cni-conf", str(conf), "--runtime-endpoint", endpoint]
    assert wincni_main(argv, out, err, node.env, platform="linux", cwd=str(node.root)) == 0, err.getvalue()
    return out.getvalue(), err.getvalue()


def would_free(said: str) -> list[str]:
    """What a dry run would free, without why (an age in it moves on between two runs)."""
    return sorted(line.split(" (")[0] for line in said.splitlines() if line.startswith("would "))


def test_the_sweep_decides_without_a_hostile_runtime_and_frees_no_more(tmp_path: Path, socket_dir: Path) -> None:
    node, conf_path, ip = a_gone_pod(tmp_path)
    age(node.flannel_dir / "gone")

    alone, _ = reclaim(node, "none", conf_path)
    frees = would_free(alone)
    assert f"would release {ip}" in frees, alone
    for attack in sorted(ATTACKS):
        server = serve(socket_dir, attack)
        try:
            started = time.monotonic()
            said, err = reclaim(node, server.endpoint, conf_path)
            took = time.monotonic() - started
        finally:
            server.close()
        assert took < TIMEOUT + MARGIN, f"{attack}: {took:.1f} s"
        assert "Traceback" not in said + err, said + err
        [note] = [line for line in said.splitlines() if line.startswith("runtime's")]
        head, tail = f"runtime's pod list not available at {server.endpoint} (", "): the ownership rule alone"
        assert note.startswith(head) and note.endswith(tail), note
        assert said_in_time(note[len(head) : -len(tail)], attack, TIMEOUT), note
        assert would_free(said) == frees, said
