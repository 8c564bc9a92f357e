"""``wincni doctor --replay BUNDLE``: the doctor's facts read from a ``wincni bundle`` instead of
the node, on any OS.

``RecordedNode`` answers every question ``gather.gather`` asks its source with what the node answered
when the bundle was taken: the files by the paths the doctor read them at, HNS through the same
clients over the recorded documents (``libhns.recorded``), host-local's reservations with their
ages. What only the node can answer (a check whose entry in ``registry.CHECKS`` is ``live_only``) is not checked, and says so.

A bundle comes from anywhere (an issue's attachment): it is read as any flag's file is (a size
cap, no FIFO, no user's link), never unpacked to disk, every member capped; anything malformed
is a ``ReplayError`` naming the bundle.
"""

from __future__ import annotations

import io
import json
from typing import Any, Mapping

from basics.inputfile import Input
from tools.wincni.doctor.archive.members import (
    FORMAT,
    HCS_MEMBER,
    MANIFEST,
    MEMBER_CAP,
    SANDBOX_MEMBER,
    STORE_MEMBER,
    TOTAL_CAP,
    V1_MEMBERS,
    V2_MEMBERS,
    VERSION_MEMBER,
)
from tools.wincni.node.source import Problem

#: The largest bundle read: its members' cap, compressed no worse than stored.
MAX_BUNDLE = TOTAL_CAP + (1 << 20)


class ReplayError(Exception):
    """A bundle that cannot be replayed: the message names it and what is wrong."""


class RecordedNode:
    """``LiveNode``'s questions, answered from a bundle's manifest and members."""

    live = False

    def __init__(self, path: str, manifest: Mapping[str, Any], members: Mapping[str, bytes]) -> None:
        self.replayed, self.manifest, self.members = path, manifest, members

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
        data = self.members.get(name)
        if data is None:
            return None
        try:
            return json.loads(data)
        except ValueError as exc:
            raise ReplayError(f"{self.replayed}: {name} is not JSON: {exc}") from None


def load(path: str) -> RecordedNode:
    """The bundle at ``path``, read whole under ``MAX_BUNDLE`` and its members under their caps."""
    import tarfile

    from tools.wincni.node.flagfile import FlagFileError, read

    try:
        found = read("--replay", path, MAX_BUNDLE)
    except FlagFileError as exc:
        raise ReplayError(str(exc)) from None
    if found is None:
        raise ReplayError(f"--replay {path} does not exist")
    members: dict[str, bytes] = {}
    total = 0
    try:
        with tarfile.open(fileobj=io.BytesIO(found.data), mode="r:gz") as tar:
            for info in tar:
                if not info.isfile():
                    continue
                if info.size > MEMBER_CAP or total + info.size > TOTAL_CAP:
                    raise ReplayError(f"{path}: {info.name} is {info.size} bytes, over a bundle's caps")
                member = tar.extractfile(info)
                members[info.name] = member.read(MEMBER_CAP + 1) if member is not None else b""
                total += info.size
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise ReplayError(f"{path} is not a wincni bundle (a .tar.gz from wincni bundle): {exc}") from None
    try:
        manifest = json.loads(members[MANIFEST])
    except (KeyError, ValueError):
        raise ReplayError(f"{path} has no readable {MANIFEST}: not a wincni bundle") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise ReplayError(
            f"{path}: format {manifest.get('format') if isinstance(manifest, dict) else '?'!r}, not {FORMAT}"
        )
    return RecordedNode(path, manifest, members)


def gather(bundle: RecordedNode, reach: str = "") -> Any:
    """The facts the doctor read on the node, read again from ``bundle`` with the node's flags,
    platform and working folder."""
    from tools.wincni.doctor.gather import gather as read
    from tools.wincni.doctor.options import NodeFiles

    m = bundle.manifest
    opts = dict(m.get("doctor") or {})
    for key in ("cni_conf", "subnet_env", "net_conf", "source_vip", "cni_bin_dir"):
        if not isinstance(opts.get(key), str):
            raise ReplayError(f"{bundle.replayed}: {MANIFEST} names no {key}")
    opts["quick"], opts["reach"] = False, reach
    return read(NodeFiles.of_record(opts), {}, str(m.get("platform") or ""), str(m.get("cwd") or ""), bundle)
