"""``wincni doctor --replay`` given a hostile bundle: a header that claims a GiB, JSON nested past
any stack, every field the checks read holding the wrong type, names that climb out, links; and
mutations of a real node's bundle. Each is refused in one line (the error envelope, exit status
1, as any flag's file), never a traceback, within bounded memory and time."""

from __future__ import annotations

import io
import json
import resource
import subprocess
import sys
import tarfile
import time
import zlib
from pathlib import Path
from typing import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hnsnode import Node, pods_node
from test_wincni_doctor_archive import realhns_bundle, replay
from tools.wincni.doctor.archive import unpack
from tools.wincni.doctor.archive.members import MANIFEST, STORE_MEMBER, ReplayError

REPO = Path(__file__).resolve().parents[2]
GIB = 1 << 30
#: The replay of a hostile bundle may take this much more than that of a small real one, and time.
MEMORY_BOUND = 64 << 20
TIME_BOUND = 10.0


def header(name: str, size: int, kind: bytes = b"0") -> bytes:
    """One ustar header whose size field says ``size``, whatever follows it."""
    info = tarfile.TarInfo(name)
    info.type, info.mode = kind, 0o600
    raw = bytearray(info.tobuf(tarfile.USTAR_FORMAT)[:512])
    raw[124:136] = b"%011o\0" % size
    raw[148:156] = b" " * 8
    raw[148:156] = b"%06o\0 " % sum(raw)
    return bytes(raw)


def gz(*parts: bytes, zeros: int = 0) -> bytes:
    """``parts`` and then ``zeros`` zero bytes, gzip'd a MiB at a time."""
    z = zlib.compressobj(1, zlib.DEFLATED, 31)
    out = [z.compress(p) for p in parts]
    out += [z.compress(bytes(1 << 20)) for _ in range(zeros >> 20)]
    return b"".join(out) + z.flush()


def rewritten(base: bytes, changes: dict[str, bytes | None]) -> bytes:
    """``base`` with members replaced, added (bytes) or left out (None), as a plain tar writes them."""
    found = {**members_of(base), **changes}
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for name, data in found.items():
            if data is not None:
                info = tarfile.TarInfo(name)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def members_of(bundle: bytes) -> dict[str, bytes]:
    with tarfile.open(fileobj=io.BytesIO(bundle), mode="r:gz") as tar:
        return {m.name: tar.extractfile(m).read() for m in tar if m.isfile()}


def edited(name: str, edit: Callable[[object], object]) -> Callable[[bytes], bytes]:
    """A change of one JSON member: ``edit`` gets its document and returns the new one."""

    def change(base: bytes) -> bytes:
        doc = json.loads(members_of(base)[name])
        return rewritten(base, {name: json.dumps(edit(doc)).encode()})

    return change


def put(doc: dict, **fields: object) -> dict:
    return {**doc, **fields}


def first(doc: list, **fields: object) -> list:
    return [{**doc[0], **fields}, *doc[1:]]


def linked(base: bytes) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        info = tarfile.TarInfo("hns/v1/endpoints.json")
        info.type, info.linkname = tarfile.SYMTYPE, "/etc/shadow"
        tar.addfile(info)
        for name, data in members_of(base).items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


DEEP = b"[" * 100_000 + b"]" * 100_000
STORE = {"dir": "C:\\var\\lib\\cni\\networks", "reservations": [{"ip": "10.0.0.2", "container": "c", "ageSeconds": 1}]}
#: name -> (the hostile bundle made from a good one, words its one line holds)
HOSTILE: dict[str, tuple[Callable[[bytes], bytes], str]] = {
    "PAX header claiming 1 GiB": (lambda _: gz(header("pax", GIB, b"x"), bytes(4096)), "over a bundle's caps"),
    "GNU long name claiming 1 GiB": (lambda _: gz(header("././@LongLink", GIB, b"L"), bytes(4096)), "GNU long name"),
    "PAX header holding 1 GiB": (lambda _: gz(header("pax", GIB, b"x"), zeros=256 << 20), "over a bundle's caps"),
    "member holding 1 GiB": (lambda _: gz(header("big", GIB), zeros=256 << 20), "over a bundle's caps"),
    "MANIFEST.json nested 100,000 deep": (lambda b: rewritten(b, {MANIFEST: DEEP}), "MANIFEST.json is not JSON"),
    "a member nested 100,000 deep": (
        lambda b: rewritten(b, {"hns/v1/endpoints.json": DEEP}),
        "hns/v1/endpoints.json is not JSON",
    ),
    "a member nested 100 deep": (
        lambda b: rewritten(b, {"hns/v1/endpoints.json": b"[" * 100 + b"]" * 100}),
        "nested deeper than 64",
    ),
    "configs: []": (edited(MANIFEST, lambda d: put(d, configs=[])), "MANIFEST.json: configs: expected an object"),
    "doctor.checked: [[1, 2, 3]]": (
        edited(MANIFEST, lambda d: put(d, doctor=put(d["doctor"], checked=[["--x", "a", "b"]]))),
        "MANIFEST.json: doctor.checked[0]: expected a list of two",
    ),
    "files entry: a string": (
        edited(MANIFEST, lambda d: put(d, files=dict.fromkeys(d["files"], "x"))),
        "expected an object, got 'x'",
    ),
    "hns/version.json = 0": (lambda b: rewritten(b, {"hns/version.json": b"0"}), "hns/version.json: the document"),
    "ageSeconds: 'x'": (
        lambda b: rewritten(
            b, {STORE_MEMBER: json.dumps(put(STORE, reservations=[{"ip": "1", "ageSeconds": "x"}])).encode()}
        ),
        "stores/host-local.json: reservations[0].ageSeconds: expected a number, got 'x'",
    ),
    "an endpoint whose Name is 5": (
        edited("hns/v1/endpoints.json", lambda d: first(d, Name=5)),
        "hns/v1/endpoints.json: [0].Name: expected a string, got 5",
    ),
    "an endpoint whose name (any case) is a list": (
        edited("hns/v1/endpoints.json", lambda d: first(d, nAME=[])),
        "hns/v1/endpoints.json: [0].nAME: expected a string, got list",
    ),
    "a load balancer's PortMappings: a string": (
        edited("hns/v2/loadbalancers.json", lambda d: first(d, PortMappings="80")),
        "[0].PortMappings: expected a list",
    ),
    "16,385 endpoints": (
        lambda b: rewritten(b, {"hns/v1/endpoints.json": b"[" + b",".join([b"{}"] * 16385) + b"]"}),
        "hns/v1/endpoints.json: the document: 16385 items, over the cap of 16384",
    ),
    "300,000 values in a member": (
        lambda b: rewritten(b, {"hns/compute-systems.json": b"[" + b",".join([b"0"] * 300_000) + b"]"}),
        "hns/compute-systems.json may hold 300001 values, past the 262144",
    ),
    "the node's files: 9 MiB": (
        lambda b: rewritten(b, {"files/8-a": bytes(5 << 20), "files/9-b": bytes(4 << 20)}),
        "the node's files (files/*) hold",
    ),
    "10,000 folders": (lambda _: gz(header("d/", 0, b"5") * 10_000), "more than 768 tar headers"),
    "a member named ../escape": (lambda b: rewritten(b, {"../escape": b"{}"}), "'../escape': a member name"),
    "a member named /etc/passwd": (lambda b: rewritten(b, {"/etc/passwd": b"{}"}), "'/etc/passwd': a member name"),
    "a symbolic link": (linked, "a symbolic link, which a bundle never holds"),
}


@pytest.fixture(scope="module")
def real(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """A bundle of real-node HNS documents (``realhns_bundle``), the base each attack rewrites."""
    return realhns_bundle(tmp_path_factory.mktemp("real") / "real.tar.gz").read_bytes()


@pytest.mark.parametrize("case", [c for c in HOSTILE if "1 GiB" not in c])
def test_a_hostile_bundle_is_one_line_exit_1(case: str, real: bytes, tmp_path: Path) -> None:
    make, words = HOSTILE[case]
    path = tmp_path / "hostile.tar.gz"
    path.write_bytes(make(real))
    rc, out, err = replay(path)
    assert (rc, err) == (1, ""), (out, err)
    assert out.startswith(f"FAILED: --replay {path}: ") and out.count("\n") == 1 and words in out, out
    rc, out, _ = replay(path, "-o", "json")
    assert rc == 1 and words in json.loads(out)["error"]


#: ``wincni`` as its console script runs it, writing its peak resident size (VmHWM: this program's
#: own, not the forked parent's pages that rusage's maxrss also counts) to the file ``argv[1]`` names.
PEAK_THEN_WINCNI = """import atexit, sys
peak = sys.argv.pop(1)
atexit.register(lambda: open(peak, "w").write(next(l for l in open("/proc/self/status") if l.startswith("VmHWM"))))
from tools.wincni.cli.main import entry
entry()
"""


def run_replay(path: Path, tmp_path: Path) -> tuple[int, str, str, float, int]:
    """``wincni doctor --replay path`` as a process under a 1 GiB address-space limit, killed after
    60 s: (exit status, stdout, stderr, seconds, peak resident bytes)."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (GIB, GIB))

    peak = tmp_path / "peak"
    peak.write_text("VmHWM: 0 kB")
    argv = [sys.executable, "-c", PEAK_THEN_WINCNI, str(peak), "doctor", "--replay", str(path)]
    start = time.monotonic()
    try:
        proc = subprocess.run(argv, cwd=REPO, capture_output=True, preexec_fn=limit, timeout=60)
    except subprocess.TimeoutExpired as exc:
        return -1, "", f"killed after {exc.timeout} s", exc.timeout, 0
    took = time.monotonic() - start
    kib = int(peak.read_text().split()[1])
    return proc.returncode, proc.stdout.decode(), proc.stderr.decode(), took, kib << 10


@pytest.mark.slow
def test_every_hostile_bundle_is_refused_within_its_memory_and_time(real: bytes, tmp_path: Path) -> None:
    """Each case as a process: one line, exit 1, no traceback, within ``MEMORY_BOUND`` over the
    replay of the good bundle and ``TIME_BOUND``."""
    good = tmp_path / "good.tar.gz"
    good.write_bytes(real)
    rc, out, err, _, baseline = run_replay(good, tmp_path)
    assert rc in (0, 1) and err == "" and "checks:" in out, (out, err)
    for case, (make, words) in HOSTILE.items():
        path = tmp_path / "hostile.tar.gz"
        path.write_bytes(make(real))
        rc, out, err, took, peak = run_replay(path, tmp_path)
        assert (rc, err) == (1, "") and out.count("\n") == 1 and words in out, (case, out, err)
        assert took < TIME_BOUND and peak - baseline <= MEMORY_BOUND, (case, took, (peak - baseline) >> 20)


#: Values a mutation puts where a field was.
VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),
    st.text(max_size=4),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)
#: Where in a 512-byte tar header a mutation writes: name, mode, size, checksum, type, magic, prefix.
HEADER_AT = (0, 1, 99, 100, 124, 125, 134, 148, 156, 257, 345)


def mutated(found: dict[str, bytes], draw: Callable) -> bytes:
    """A real bundle's members ``found`` changed once, as ``draw`` (hypothesis's) picks: a JSON
    field's value swapped or deleted or nested 100 deep, the gzip stream cut, or a header's byte."""
    how = draw(st.sampled_from(("value", "delete", "nest", "cut", "header")))
    found = dict(found)
    if how in ("value", "delete", "nest"):
        name = draw(st.sampled_from(sorted(n for n in found if n.endswith(".json"))))
        doc = json.loads(found[name])
        holder, key = _somewhere(doc, draw)
        if holder is None:
            doc = draw(VALUES) if how == "value" else [doc]
        elif how == "delete":
            del holder[key]
        else:
            holder[key] = draw(VALUES) if how == "value" else json.loads("[" * 100 + "0" + "]" * 100)
        found[name] = json.dumps(doc).encode()
    tar = io.BytesIO()
    with tarfile.open(fileobj=tar, mode="w", format=tarfile.PAX_FORMAT) as out:
        for name, data in found.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            out.addfile(info, io.BytesIO(data))
    raw = bytearray(tar.getvalue())
    if how == "header":
        at = draw(st.integers(0, len(raw) // 512 - 1)) * 512 + draw(st.sampled_from(HEADER_AT))
        raw[at] = draw(st.integers(0, 255))
    packed = gz(bytes(raw))
    return packed[: draw(st.integers(0, len(packed)))] if how == "cut" else packed


def _somewhere(doc: object, draw: Callable) -> tuple[object, object]:
    """Any (container, key) inside ``doc``, each as likely; (None, None): the whole document."""
    places: list[tuple[object, object]] = [(None, None)]
    level = [doc]
    while level:
        holder = level.pop()
        keys = list(holder) if isinstance(holder, dict) else range(len(holder)) if isinstance(holder, list) else ()
        places += [(holder, k) for k in keys]
        level += [holder[k] for k in keys]  # type: ignore[index]
    return draw(st.sampled_from(places))


@pytest.mark.slow
@pytest.mark.node("bridge", build=pods_node)
def test_mutated_real_bundles_replay_or_are_refused_in_one_line(node: Node, tmp_path: Path) -> None:
    """400 mutations of a real node's bundle, in-process: each replays (exit 0 or 1 with the
    report) or is refused in one line, exit 1; an exception escaping ``main`` would be a
    traceback and fails the example."""
    assert node.wincni("bundle", "--out", str(tmp_path / "real.tar.gz"))[0] == 0
    found = members_of((tmp_path / "real.tar.gz").read_bytes())
    path = tmp_path / "mutated.tar.gz"
    refused = []

    @settings(max_examples=400, deadline=None, database=None)
    @given(st.data())
    def one(data: st.DataObject) -> None:
        path.write_bytes(mutated(found, data.draw))
        start = time.monotonic()
        rc, out, err = replay(path)
        assert err == "" and rc in (0, 1) and time.monotonic() - start < TIME_BOUND, (rc, out, err)
        if out.startswith("FAILED: "):
            assert rc == 1 and out.count("\n") == 1, out
            refused.append(out)
        else:
            assert "checks:" in out, out

    one()
    assert refused  # the mutations reach the refusals, not only what replays


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=3 * 512))
def test_any_tar_bytes_give_members_or_a_replay_error(tar: bytes) -> None:
    """The header reader over any bytes: members, or ``ReplayError``, never another exception."""
    try:
        assert isinstance(unpack.members(io.BytesIO(tar + bytes(1024)).read), dict)
    except ReplayError:
        pass


NAMES = st.text(st.characters(codec="utf-8", exclude_characters="/\\\0"), min_size=1, max_size=120).filter(
    lambda n: n != ".."
)


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(st.lists(NAMES, min_size=1, max_size=3).map("/".join), st.binary(max_size=600), max_size=4))
def test_what_the_bundle_writer_packs_unpacks_whole(files: dict[str, bytes]) -> None:
    """``archive``'s own PAX tar (long and non-ASCII names take a PAX header) reads back exactly."""
    from tools.wincni.doctor.archive.members import Members, archive

    taken = Members()
    for name, data in files.items():
        taken.add(name, data)
    packed = archive({"format": "x"}, taken)
    found = unpack.members(unpack.Inflating(io.BytesIO(packed).read, len(packed)).read)
    assert {k: v for k, v in found.items() if k != MANIFEST} == files


def test_what_a_bundle_names_cannot_break_the_line() -> None:
    """A member name or JSON key holding a line break is escaped: the error stays one line."""
    from tools.wincni.doctor.archive.records import STR, Fields, check

    with pytest.raises(ReplayError) as exc:
        check("m.json", {"a\nFAILED: b": 5}, Fields({"a\nFAILED: b": STR}))
    assert "\n" not in str(exc.value) and "a\\nFAILED: b: expected a string, got 5" in str(exc.value)
    with pytest.raises(ReplayError) as exc:
        unpack.members(io.BytesIO(header("x\ny", 0, b"2") + bytes(1024)).read)
    assert str(exc.value) == "x\\ny: a symbolic link, which a bundle never holds"


def test_the_doctors_help_says_what_a_refused_bundle_exits_with() -> None:
    from tools.wincni.cli.main import build_parser

    help_text = build_parser("linux", "doctor")._subparsers._group_actions[0].choices["doctor"].format_help()
    text = " ".join(help_text.split())
    assert "exit status:" in text and "the --replay bundle too" in text and "2 a usage error" in text


def test_no_more_of_the_bundle_is_read_than_its_cap() -> None:
    """A file that grew past its cap after it was judged is refused at the cap, not read to its end."""
    packed = gz(header("a", 3) + b"abc".ljust(512, b"\0") + bytes(1024), zeros=1 << 20)
    reading = unpack.Inflating(io.BytesIO(packed).read, len(packed) - 1)
    with pytest.raises(ReplayError, match="larger than a bundle's cap"):
        while reading.read(1 << 16):
            pass
    assert unpack.members(unpack.Inflating(io.BytesIO(packed).read, len(packed)).read) == {"a": b"abc"}
