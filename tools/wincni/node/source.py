"""Where the commands read the node: ``LiveNode`` (the files the flags name, HNS, host-local's store), and ``Problem``, what a read that failed says."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Mapping

from basics.inputfile import Input


@dataclass(frozen=True)
class Problem:
    message: str
    fix: str


class LiveNode:
    """Where ``gather`` reads on the node itself: the files the flags name (``flagfile.read``),
    HNS through the backend ``LIBHNS_BACKEND`` picks, host-local's store through its own reader.
    ``replay.RecordedNode`` answers the same questions from a bundle, and says ``live`` False for the
    reads only the node can answer (who may write its folders, the plugins' STATUS, …)."""

    live = True
    replayed = ""

    def configs(self, path: str) -> list[str] | None:
        """The CNI configs in the folder ``path``, sorted; None when it is not a folder."""
        if not os.path.isdir(path):
            return None
        return sorted(n for n in os.listdir(path) if n.endswith(CONF_SUFFIXES))

    def exists(self, path: str) -> bool:
        return os.path.lexists(path)

    def read(self, flag: str, path: str, cap: int) -> Input | Problem | None:
        return _input(flag, path, cap)

    def now(self) -> float:
        """The wall time the node is read at."""
        import time

        return time.time()

    def clients(self, env: Mapping[str, str]) -> tuple[Any, Any]:
        from libhns.client import open_clients

        return open_clients(env)

    def store(
        self, ipam_dir: str, platform: str
    ) -> tuple[tuple[tuple[str, str], ...] | None, dict[str, float], Problem | None]:
        return read_store(ipam_dir, platform)

    def sandbox_records(self, ipam_dir: str, platform: str) -> list[tuple[str, str, str, str]] | None:
        """host-local's sandbox records (IP, container ID, ifname, CNI_NETNS) of reservations that
        hold them: none before the first ADD made the store's folder (as ``read_store``); None
        when no store is named. Read without the store's lock: each record is renamed into place
        whole, and one that does not match its reservation is left out."""
        from plugins.ipam_host_local.store import DiskStore

        if not ipam_dir:
            return None
        if not os.path.isdir(ipam_dir):
            return []
        found = DiskStore(ipam_dir, platform).sandboxes()
        return sorted((ip, owner.container_id, owner.ifname, netns) for ip, (owner, netns) in found.items())


LIVE = LiveNode()


CONF_SUFFIXES = (".conf", ".conflist", ".json")


def read_store(
    ipam_dir: str, platform: str
) -> tuple[tuple[tuple[str, str], ...] | None, dict[str, float], Problem | None]:
    """host-local's reservations (IP, container ID) for the network (None when unknown), and how
    many seconds ago each was made or renewed (``young_of`` says which an ADD may still own)."""
    import time

    from plugins.ipam_host_local.store import open_store

    if not ipam_dir or not os.path.isdir(ipam_dir):
        return (() if ipam_dir else None), {}, None
    try:
        with open_store(ipam_dir, platform) as store:
            found = tuple((str(ip), owner.container_id if owner else "") for ip, owner in store.allocations())
            now = time.time()
            return found, {ip: now - store.reserved_at(ip) for ip, _ in found}, None
    except OSError as err:
        return (
            None,
            {},
            Problem(
                f"cannot read host-local's store {ipam_dir}: {err}",
                "run the doctor as the user the runtime runs as (Administrator)",
            ),
        )


def _input(flag: str, path: str, cap: int) -> Input | Problem | None:
    """The file ``path`` the flag names (``flagfile.read``: a FIFO, a device, a folder or another
    user's link is a problem naming the flag, never waited on); None when it does not exist."""
    from tools.wincni.node.flagfile import FlagFileError, read

    try:
        return read(flag, path, cap)
    except FlagFileError as err:
        return Problem(str(err), "")


def quoted(problem: Problem, flag: str, found: Input | None) -> Problem:
    """``problem`` about the file ``found``, quoting nothing of it unless an administrator owns it."""
    from tools.wincni.node.flagfile import quote

    message = quote(problem.message, (flag, found))
    return problem if message == problem.message else Problem(message, "")
