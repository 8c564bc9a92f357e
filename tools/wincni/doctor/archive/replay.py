"""``wincni doctor --replay BUNDLE``: the doctor's facts read from a ``wincni bundle`` instead of
the node, on any OS.

``RecordedNode`` answers every question ``gather.gather`` asks its source with what the node answered
when the bundle was taken: the files by the paths the doctor read them at, HNS through the same
clients over the recorded documents (``libhns.recorded``), host-local's reservations with their
ages. What only the node can answer (a check whose entry in ``registry.CHECKS`` is ``live_only``) is not checked, and says so.

A bundle comes from anywhere (an issue's attachment): it is read as any flag's file is (a size
cap, no FIFO, no user's link), never unpacked to disk, every header and member capped before it
is read (``unpack``), every JSON member parsed under a depth and value cap and checked against
its shape (``records``) before a check sees it; anything malformed is one ``ReplayError`` naming
the bundle, the member and the field.
"""

from __future__ import annotations

from typing import Any, BinaryIO, Mapping

from basics.inputfile import Input
from tools.wincni.doctor.archive.members import (
    FILES,
    FILES_CAP,
    FORMAT,
    HCS_MEMBER,
    JSON_DEPTH,
    JSON_VALUES,
    MANIFEST,
    SANDBOX_MEMBER,
    STORE_MEMBER,
    TOTAL_CAP,
    V1_MEMBERS,
    V2_MEMBERS,
    VERSION_MEMBER,
    ReplayError,
)
from tools.wincni.doctor.archive.records import SHAPES, check
from tools.wincni.node.source import Problem

#: The largest bundle read: its members' cap, compressed no worse than stored.
MAX_BUNDLE = TOTAL_CAP + (1 << 20)


class RecordedNode:
    """``LiveNode``'s questions, answered from a bundle's manifest and members."""

    live = False

    def __init__(
        self, path: str, manifest: Mapping[str, Any], members: Mapping[str, bytes], docs: Mapping[str, Any]
    ) -> None:
        self.replayed, self.manifest, self.members, self.docs = path, manifest, members, docs

    def _missing(self, what: str) -> Problem:
        return Problem(f"{what} is not in the bundle {self.replayed}", "take the bundle again with wincni bundle")

    def configs(self, path: str) -> list[str] | None:
        names = self.manifest.get("configs", {}).get(path)
        return [str(n) for n in names] if isinstance(names, list) else None

    def exists(self, path: str) -> bool:
        return bool(self.manifest.get("exists", {}).get(path, False))

    def read(self, flag: str, path: str, cap: int) -> Input | Problem | None:
        entry = self.manifest.get("files", {}).get(path)
        if not isinstance(entry, dict):
            return self._missing(f"{flag} {path}")
        if entry.get("absent"):
            return None
        if isinstance(entry.get("problem"), dict):
            return Problem(str(entry["problem"].get("message", "")), str(entry["problem"].get("fix", "")))
        data = self.members.get(str(entry.get("member")))
        if data is None:
            return self._missing(f"{flag} {path}")
        if len(data) > cap:
            return Problem(f"{flag} {path}: {len(data)} bytes in the bundle, over its cap of {cap}", "")
        return Input(path, data, str(entry.get("owner") or ""))

    def now(self) -> float:
        """When the bundle was taken (its manifest's ``created``; 0 when it says none)."""
        import calendar
        import time

        try:
            return float(calendar.timegm(time.strptime(str(self.manifest.get("created")), "%Y-%m-%dT%H:%M:%SZ")))
        except ValueError:
            return 0.0

    def clients(self, env: Mapping[str, str]) -> tuple[Any, Any]:
        from libhns.client import HcnClient, HnsCallClient
        from libhns.recorded import RecordedHns, Recording

        v2 = {kind: self._json(f"hns/v2/{name}.json") for kind, name in V2_MEMBERS.items()}
        v1 = {name: self._json(f"hns/v1/{name}.json") for name in V1_MEMBERS}
        raw = RecordedHns(
            Recording(
                self._json(VERSION_MEMBER),
                {k: v for k, v in v2.items() if isinstance(v, list)},
                {k: v for k, v in v1.items() if isinstance(v, list)},
                self._json(HCS_MEMBER),
            )
        )
        return HcnClient(raw), HnsCallClient(raw)

    def store(self, ipam_dir: str, platform: str) -> tuple[Any, dict[str, float], Problem | None]:
        if not ipam_dir:
            return None, {}, None
        doc = self._json(STORE_MEMBER)
        if not isinstance(doc, dict) or doc.get("dir") != ipam_dir:
            return None, {}, self._missing(f"host-local's store {ipam_dir}")
        if isinstance(doc.get("problem"), dict):
            return None, {}, Problem(str(doc["problem"].get("message", "")), str(doc["problem"].get("fix", "")))
        found = doc.get("reservations")
        if not isinstance(found, list):
            return None, {}, None
        rows = [r for r in found if isinstance(r, dict)]
        return (
            tuple((str(r.get("ip")), str(r.get("container") or "")) for r in rows),
            {str(r.get("ip")): float(r.get("ageSeconds") or 0) for r in rows},
            None,
        )

    def sandbox_records(self, ipam_dir: str, platform: str) -> list[tuple[str, str, str, str]] | None:
        doc = self._json(SANDBOX_MEMBER)
        if not ipam_dir or not isinstance(doc, dict) or doc.get("dir") != ipam_dir:
            return None  # a bundle from before the records, or of another store: the sandboxes are unknown
        rows = doc.get("records")
        if not isinstance(rows, list):
            return None
        return [
            (str(r.get("ip")), str(r.get("container") or ""), str(r.get("ifname") or ""), str(r.get("netns") or ""))
            for r in rows
            if isinstance(r, dict)
        ]

    def _json(self, name: str) -> Any:
        return self.docs.get(name)


def load(path: str) -> RecordedNode:
    """The bundle at ``path``: read as any flag's file is (no FIFO waited on, no user's link, a
    regular file under ``MAX_BUNDLE``) but never whole, unpacked with every size checked before
    it is read (``unpack``; only the members replay reads are kept), and each JSON member parsed
    under the depth and values caps and checked against its shape (``records.SHAPES``) before any
    check sees it."""
    from tools.wincni.doctor.archive import unpack

    bundle = opened(path)
    try:
        with bundle:
            members = unpack.members(unpack.Inflating(bundle.read, MAX_BUNDLE).read, replayed)
        if MANIFEST not in members:
            raise ReplayError(f"has no readable {MANIFEST}: not a wincni bundle")
        held = sum(len(data) for name, data in members.items() if name.startswith(FILES))
        if held > FILES_CAP:
            raise ReplayError(f"the node's files ({FILES}*) hold {held} bytes, over replay's cap of {FILES_CAP}")
        docs = checked(members)
        manifest = docs[MANIFEST]
        if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
            shown = manifest.get("format") if isinstance(manifest, dict) else None
            raise ReplayError(f"{MANIFEST}: format {shown!r}, not {FORMAT}")
    except ReplayError as exc:
        raise ReplayError(f"--replay {path}: {exc}") from None
    except OSError as exc:
        raise ReplayError(f"--replay {path}: cannot read it: {exc.strerror or exc}") from None
    return RecordedNode(path, manifest, members, docs)


def opened(path: str) -> BinaryIO:
    """The bundle's file, judged as any flag's file (``inputfile.open_file``, its refusals named
    as ``flagfile`` names them), open to read."""
    from basics.inputfile import open_file
    from tools.wincni.node.flagfile import FlagFileError, named

    try:
        with named("--replay", path):
            try:
                fd, _ = open_file(path, MAX_BUNDLE)
            except FileNotFoundError:
                raise ReplayError(f"--replay {path} does not exist") from None
    except FlagFileError as exc:
        raise ReplayError(str(exc)) from None
    return open(fd, "rb")


def replayed(name: str) -> bool:
    """A member replay reads: the JSON ones of the table, and the node's files the doctor read."""
    return name in SHAPES or name.startswith(FILES)


def checked(members: dict[str, bytes]) -> dict[str, Any]:
    """``parsed``, each document then checked against its shape (``records.SHAPES``)."""
    docs = parsed(members)
    for name, doc in docs.items():
        check(name, doc, SHAPES[name])
    return docs


def parsed(members: dict[str, bytes]) -> dict[str, Any]:
    """The JSON members, taken out of ``members`` as parsed (their text let go), all of them
    within ``JSON_VALUES``; ``ReplayError`` names the member and what is wrong."""
    from basics.jsontext import loads_bounded, most_values

    docs, left = {}, JSON_VALUES
    for name in [n for n in SHAPES if n in members]:
        data = members.pop(name)
        most = most_values(data)
        if most > left:
            raise ReplayError(f"{name} may hold {most} values, past the {JSON_VALUES} a bundle's JSON may hold")
        try:
            docs[name] = loads_bounded(data, JSON_DEPTH, most)
        except (ValueError, UnicodeDecodeError) as exc:
            raise ReplayError(f"{name} is not JSON replay reads: {exc}") from None
        left -= most
    return docs


def gather(bundle: RecordedNode, reach: str = "") -> Any:
    """The facts the doctor read on the node, read again from ``bundle`` with the node's flags,
    platform and working folder."""
    from tools.wincni.doctor.gather import gather as read
    from tools.wincni.doctor.options import NodeFiles

    m = bundle.manifest
    opts = dict(m.get("doctor") or {})
    for key in ("cni_conf", "subnet_env", "net_conf", "source_vip", "cni_bin_dir"):
        if not isinstance(opts.get(key), str):
            raise ReplayError(f"--replay {bundle.replayed}: {MANIFEST} names no {key}")
    opts["quick"], opts["reach"] = False, reach
    return read(NodeFiles.of_record(opts), {}, str(m.get("platform") or ""), str(m.get("cwd") or ""), bundle)
