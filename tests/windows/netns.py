"""A network namespace of the lane's own, holding the node's addresses.

flanneld looks for a host interface holding the address HNS gives its network, and on host-gw
one holding its host endpoint's; the machine has neither, and the lane must not add addresses to
it. So the calling thread moves into a new network namespace (``unshare(CLONE_NEWNET)``, as
root): every socket it opens and every process it starts from then on (the fake HNS server's
listener, etcd, wineserver and the Windows programs) lives there, with loopback and a veth pair
carrying the node's addresses. Other threads, and this one after ``close``, stay in the
machine's namespace; the namespace goes away with the last process and socket in it, so nothing
is left behind.
"""

from __future__ import annotations

import ctypes
import os
import subprocess

CLONE_NEWNET = 0x40000000
#: The node's interface, as the Windows programs see it through Wine.
NODE_LINK, PEER_LINK = "v0", "v1"


class NetnsError(RuntimeError):
    """The namespace or its links cannot be made here: the message says what failed."""


def _own_ns() -> int:
    return os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC)


class Netns:
    """This thread in a new network namespace with ``NODE_LINK`` carrying ``address`` (a CIDR)."""

    def __init__(self, address: str) -> None:
        self._libc = ctypes.CDLL(None, use_errno=True)
        self._home = _own_ns()
        self._call(self._libc.unshare(CLONE_NEWNET), "unshare(CLONE_NEWNET) (the lane runs as root)")
        self.address = address.split("/")[0]
        self.ip("link", "set", "lo", "up")
        self.ip("link", "add", NODE_LINK, "type", "veth", "peer", "name", PEER_LINK)
        self.ip("addr", "add", address, "dev", NODE_LINK)
        self.ip("link", "set", NODE_LINK, "up")
        self.ip("link", "set", PEER_LINK, "up")

    def _call(self, rc: int, what: str) -> None:
        if rc != 0:
            raise NetnsError(f"{what} failed: {os.strerror(ctypes.get_errno())}")

    def ip(self, *args: str) -> None:
        """``ip ARGS`` inside the namespace."""
        proc = subprocess.run(["ip", *args], capture_output=True, text=True)
        if proc.returncode:
            raise NetnsError(f"ip {' '.join(args)}: {proc.stderr.strip()}")

    def add_address(self, cidr: str) -> None:
        """One more address on the node (what HNS does when it attaches a host endpoint)."""
        self.ip("addr", "add", cidr, "dev", NODE_LINK)

    def close(self) -> None:
        """Back to the machine's namespace (this one lives on while its processes do)."""
        self._call(self._libc.setns(self._home, CLONE_NEWNET), "setns back to the machine's namespace")
        os.close(self._home)
