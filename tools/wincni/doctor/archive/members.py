"""The diagnostics bundle's format: its member names and caps, and the gzip'd tar they are packed into."""

from __future__ import annotations

import io
import json
import tarfile
import time
from typing import Any

from tools.wincni.node.source import Problem

FORMAT = "wincni-bundle/1"


MANIFEST = "MANIFEST.json"


MEMBER_CAP = 8 << 20


TOTAL_CAP = 48 << 20


#: What replay reads beside the members' caps: how many members, a PAX header's records, how deep
#: a JSON member may nest and how many values all of them may hold (parsed, a value costs up to
#: 72 bytes: an empty object in a list), so a replay stays within 64 MiB of its own.
MAX_MEMBERS = 256


PAX_CAP = 8 << 10


JSON_DEPTH = 64


JSON_VALUES = 1 << 18


#: The most the node's files in a bundle may hold in all (the doctor reads each under its flag's
#: cap, at most 4 MiB), so they and the parsed JSON stay within 64 MiB together.
FILES_CAP = 8 << 20


#: The most HNS documents of one kind replay reads (each becomes a libhns object and passes the
#: recorded backend: about 340 bytes even when empty); far more than one node's HNS holds.
MAX_DOCUMENTS = 1 << 14


#: The folder of the node's files the doctor read (``files/<n>-<name>``).
FILES = "files/"


#: How much of the debug log's end is kept, and the largest log read at all (it rotates at 10 MiB).
LOG_TAIL = 1 << 20


MAX_LOG = 256 << 20


#: HCN kinds -> their member under hns/v2/; V1 collections are members under hns/v1/.
V2_MEMBERS = {
    "Network": "networks",
    "Endpoint": "endpoints",
    "Namespace": "namespaces",
    "LoadBalancer": "loadbalancers",
}


V1_MEMBERS = ("networks", "endpoints", "namespaces", "policylists")


VERSION_MEMBER = "hns/version.json"


HCS_MEMBER = "hns/compute-systems.json"


STORE_MEMBER = "stores/host-local.json"


SANDBOX_MEMBER = "stores/host-local-sandboxes.json"


FLANNEL_MEMBER = "stores/flannel.json"


class ReplayError(Exception):
    """A bundle that cannot be replayed: one line naming the bundle, the member and the field
    (what the bundle itself names is quoted, a line break in it escaped)."""

    def __init__(self, message: str) -> None:
        super().__init__("".join(c if c.isprintable() else repr(c)[1:-1] for c in message))


def problem_doc(problem: Problem | None) -> dict | None:
    return None if problem is None else {"message": problem.message, "fix": problem.fix}


class Members:
    """The archive's members in the order they are offered, within the caps; what did not fit is
    named in ``omitted`` with why."""

    def __init__(self, member_cap: int = MEMBER_CAP, total_cap: int = TOTAL_CAP) -> None:
        self.member_cap, self.total_cap = member_cap, total_cap
        self.data: dict[str, bytes] = {}
        self.omitted: dict[str, str] = {}
        self.total = 0

    def add(self, name: str, data: bytes) -> bool:
        if len(data) > self.member_cap:
            self.omitted[name] = f"{len(data)} bytes, over the member cap of {self.member_cap}"
        elif self.total + len(data) > self.total_cap:
            self.omitted[name] = f"{len(data)} bytes, past the bundle's cap of {self.total_cap}"
        else:
            self.data[name] = data
            self.total += len(data)
            return True
        return False

    def json(self, name: str, doc: Any) -> bool:
        return self.add(name, (json.dumps(doc, indent=2) + "\n").encode())


def archive(manifest: dict, members: Members) -> bytes:
    """The gzip'd tar: the manifest first, then the members in the order they were offered."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz", format=tarfile.PAX_FORMAT) as tar:
        for name, data in {MANIFEST: (json.dumps(manifest, indent=2) + "\n").encode(), **members.data}.items():
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(data), int(time.time()), 0o600
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()
