"""The protobuf wire format, as much as ``ListPodSandbox`` needs: the request is an empty message
(no filter: every sandbox, in every state), and the answer is decoded field by field, skipping
what we do not read, so a newer runtime's extra fields never break us.

``runtime.v1`` (k8s.io/cri-api, api.proto): ListPodSandboxResponse{1: repeated PodSandbox items};
PodSandbox{1: id, 2: metadata, 3: state, 4: created_at}; PodSandboxMetadata{1: name, 2: uid,
3: namespace, 4: attempt}; PodSandboxState 0 SANDBOX_READY, 1 SANDBOX_NOTREADY.

The runtime decides how much work its answer is: at most ``MAX_SANDBOXES`` items, ``MAX_FIELDS``
fields in a sandbox and ``MAX_UNKNOWN`` fields beside the items, each field at least two bytes,
and the call's ``Deadline`` asked every so many fields.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

from tools.wincni.node.cri.deadline import Deadline, unbounded
from tools.wincni.node.cri.errors import Malformed

LIST_POD_SANDBOX = "/runtime.v1.RuntimeService/ListPodSandbox"
STATES = {0: "SANDBOX_READY", 1: "SANDBOX_NOTREADY"}

_VARINT, _I64, _LEN, _I32 = 0, 1, 2, 5
#: Sandboxes in one answer: a node runs a few hundred pods; their dead sandboxes add some more.
MAX_SANDBOXES = 100_000
#: Fields of one PodSandbox: a handful of its own plus one per label and annotation.
MAX_FIELDS = 4096
#: Fields of the response beside its items (runtime.v1 has none: a newer runtime's few).
MAX_UNKNOWN = 1024


@dataclass(frozen=True)
class ListedSandbox:
    """A pod sandbox the runtime lists: ``id`` is the CNI_CONTAINERID it gave the plugins."""

    id: str
    name: str = ""
    uid: str = ""
    namespace: str = ""
    attempt: int = 0
    state: str = "SANDBOX_READY"


def list_request() -> bytes:
    """An empty ListPodSandboxRequest: no filter."""
    return b""


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(data):
            raise Malformed("protobuf: a varint runs past the end of the message")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
        if shift >= 64:
            raise Malformed("protobuf: a varint longer than 10 bytes")


def fields(data: bytes, deadline: Deadline | None = None) -> Iterator[tuple[int, int, int | bytes]]:
    """(field number, wire type, value) of each field of a message: an int for varints and
    fixed-width numbers, bytes for length-delimited ones. Group wire types are refused."""
    deadline = deadline or unbounded()
    pos = 0
    while pos < len(data):
        deadline.step("decoding the pod list")
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise Malformed("protobuf: field number 0")
        if wire == _VARINT:
            value, pos = _varint(data, pos)
            yield number, wire, value
        elif wire in (_I64, _I32):
            width = 8 if wire == _I64 else 4
            if pos + width > len(data):
                raise Malformed("protobuf: a fixed-width field runs past the end of the message")
            yield number, wire, int.from_bytes(data[pos : pos + width], "little")
            pos += width
        elif wire == _LEN:
            size, pos = _varint(data, pos)
            if pos + size > len(data):
                raise Malformed(f"protobuf: field {number} says {size} bytes, {len(data) - pos} are left")
            yield number, wire, data[pos : pos + size]
            pos += size
        else:
            raise Malformed(f"protobuf: wire type {wire} (field {number}) is not one CRI uses")


def _text(value: int | bytes, what: str) -> str:
    if not isinstance(value, bytes):
        raise Malformed(f"protobuf: {what} is not a string")
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Malformed(f"protobuf: {what} is not UTF-8") from exc


def _number(value: int | bytes, what: str) -> int:
    if not isinstance(value, int):
        raise Malformed(f"protobuf: {what} is not a number")
    return value


def _sandbox(data: bytes, deadline: Deadline) -> ListedSandbox:
    out: dict[str, object] = {"id": ""}
    for count, (number, _, value) in enumerate(fields(data, deadline), 1):
        if count > MAX_FIELDS:
            raise Malformed(f"protobuf: a PodSandbox of more than {MAX_FIELDS} fields")
        if number == 1:
            out["id"] = _text(value, "PodSandbox.id")
        elif number == 2:
            if not isinstance(value, bytes):
                raise Malformed("protobuf: PodSandbox.metadata is not a message")
            for n, _, v in fields(value, deadline):
                if n in (1, 2, 3):
                    out[("name", "uid", "namespace")[n - 1]] = _text(v, "PodSandboxMetadata field")
                elif n == 4:
                    out["attempt"] = _number(v, "PodSandboxMetadata.attempt")
        elif number == 3:
            state = _number(value, "PodSandbox.state")
            out["state"] = STATES.get(state, f"state {state}")
    return ListedSandbox(**out)  # type: ignore[arg-type]


def decode_list_response(data: bytes, deadline: Deadline | None = None) -> list[ListedSandbox]:
    """The sandboxes of a ListPodSandboxResponse; ``Malformed`` for anything else."""
    deadline = deadline or unbounded()
    items: list[ListedSandbox] = []
    unknown = 0
    for number, wire, value in fields(data, deadline):
        if number != 1:
            unknown += 1
            if unknown > MAX_UNKNOWN:
                raise Malformed(f"protobuf: more than {MAX_UNKNOWN} fields beside the sandboxes")
            continue
        if wire != _LEN or not isinstance(value, bytes):
            raise Malformed("protobuf: ListPodSandboxResponse.items is not a message")
        if len(items) == MAX_SANDBOXES:
            raise Malformed(f"protobuf: more than {MAX_SANDBOXES} sandboxes listed")
        items.append(_sandbox(value, deadline))
    return items
