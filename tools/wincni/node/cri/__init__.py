"""A minimal CRI client: ``ListPodSandbox`` on the node's runtime socket, for the sweep's "which
sandboxes are alive" (no runtime on Windows calls CNI GC, so the node asks the runtime itself).

gRPC over HTTP/2 written here (``h2``, ``hpack``, ``proto``) rather than a dependency: one
unary call, a cap on the answer's size and one ``Deadline`` held end to end: connecting, every
write and read, and every decoding step count against it. Every failure is a ``CriError``.
"""

from __future__ import annotations

from typing import Any, Callable

from tools.wincni.node.cri.errors import CriError
from tools.wincni.node.cri.proto import ListedSandbox

#: Where containerd listens (crictl's spelling): the named pipe on Windows, its socket elsewhere.
DEFAULT_ENDPOINTS = {"win32": "npipe:////./pipe/containerd-containerd"}
DEFAULT_ENDPOINT = "unix:///run/containerd/containerd.sock"
#: What the kubelet's own CRI client accepts: sandboxes carry their pods' annotations, and
#: kubectl's last-applied-configuration alone can be kilobytes a pod.
MAX_ANSWER = 16 << 20
TIMEOUT = 5.0

__all__ = ["CriError", "ListedSandbox", "default_endpoint", "list_sandboxes"]


def default_endpoint(platform: str) -> str:
    return DEFAULT_ENDPOINTS.get(platform, DEFAULT_ENDPOINT)


def list_sandboxes(
    endpoint: str,
    timeout: float = TIMEOUT,
    cap: int = MAX_ANSWER,
    connect: Callable[[str, float], Any] | None = None,
) -> list[ListedSandbox]:
    """Every sandbox the runtime at ``endpoint`` lists, whatever its state. ``connect``
    (endpoint, timeout) -> transport: ``transport.connect`` unless a test gives its own."""
    from tools.wincni.node.cri import h2, proto, transport
    from tools.wincni.node.cri.deadline import Deadline

    deadline = Deadline(timeout)  # from before the connection: connecting counts against it
    try:
        stream = (connect or transport.connect)(endpoint, timeout)
    except ValueError as exc:
        from tools.wincni.node.cri.errors import Unreachable

        raise Unreachable(str(exc)) from exc
    try:
        answer = h2.unary(stream, proto.LIST_POD_SANDBOX, proto.list_request(), deadline, cap)
    finally:
        stream.close()
    return proto.decode_list_response(answer, deadline)
