"""The simulator's on-disk state: one JSON document, one lock file, atomic replace.

Every pod ADD goes through here from its own process, so correctness under concurrency is the
point: a mutation is lock → read → change → write a temp file → ``os.replace`` → unlock, and a
reader never sees a half-written file (on POSIX it needs no lock at all; on Windows, where
replacing a file another process holds open fails, readers take the lock too).
"""

from __future__ import annotations

import os
import time

from basics import jsontext

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any, Mapping

STATE_FILE = "state.json"
LOCK_FILE = "state.lock"
COUNTERS_FILE = "fault-counters.json"


def default_state_dir(env: Mapping[str, str]) -> Path:
    """Per-user state dir: %LOCALAPPDATA%\\wincni\\hns-sim, else $XDG_STATE_HOME or ~/.local/state."""
    from pathlib import Path  # only when LIBHNS_SIM_DIR is not set

    if os.name == "nt" and env.get("LOCALAPPDATA"):
        return Path(env["LOCALAPPDATA"]) / "wincni" / "hns-sim"
    base = env.get("XDG_STATE_HOME") or str(Path(env.get("HOME") or Path.home()) / ".local" / "state")
    return Path(base) / "wincni" / "hns-sim"


def empty_state() -> dict[str, Any]:
    return {"networks": {}, "endpoints": {}, "namespaces": {}, "loadbalancers": {}, "containers": {}, "seq": {}}


class _FileLock:
    """An exclusive lock on ``path`` for a ``with`` block (flock; on Windows msvcrt.locking)."""

    __slots__ = ("path", "fh")

    def __init__(self, path: str) -> None:
        self.path = path
        self.fh = None

    def __enter__(self) -> None:
        fh = self.fh = open(self.path, "a+b")
        try:
            if os.name == "nt":
                import msvcrt

                while True:
                    try:
                        fh.seek(0)
                        msvcrt.locking(fh.fileno(), msvcrt.LK_LOCK, 1)
                        return
                    except OSError:  # LK_LOCK gives up after ~10 s; keep waiting
                        time.sleep(0.01)
            import fcntl

            fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        except BaseException:
            fh.close()
            raise

    def __exit__(self, *exc: object) -> None:
        fh, self.fh = self.fh, None
        try:
            if os.name == "nt":
                import msvcrt

                fh.seek(0)
                msvcrt.locking(fh.fileno(), msvcrt.LK_UNLCK, 1)
            else:
                import fcntl

                fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
        finally:
            fh.close()


class _Transaction:
    """The state under the lock for a ``with`` block; written back unless the block raises."""

    __slots__ = ("store", "lock", "data")

    def __init__(self, store: Store) -> None:
        self.store = store
        self.lock = store.locked()

    def __enter__(self) -> dict[str, Any]:
        self.lock.__enter__()
        try:
            self.data = self.store._read()
        except BaseException:
            self.lock.__exit__()
            raise
        return self.data

    def __exit__(self, kind: object, *exc: object) -> None:
        try:
            if kind is None:
                self.store._write(self.data)
        finally:
            self.lock.__exit__()


class Store:
    """The JSON state in ``directory``; ``snapshot()`` to read, ``transaction()`` to change."""

    def __init__(self, directory: Path | str) -> None:
        self.directory = os.fspath(directory)
        self.path = os.path.join(self.directory, STATE_FILE)
        self.lock_path = os.path.join(self.directory, LOCK_FILE)

    def _read(self, path: str | None = None) -> dict[str, Any]:
        try:
            with open(path or self.path, "rb") as fh:
                return jsontext.loads(fh.read())
        except FileNotFoundError:
            return empty_state() if path is None else {}

    def _write(self, data: Any, path: str | None = None) -> None:
        target = path or self.path
        tmp = f"{target}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(jsontext.dumps(data, separators=(",", ":")))
        os.replace(tmp, target)

    def locked(self) -> _FileLock:
        """The store's lock (its folder made first)."""
        os.makedirs(self.directory, exist_ok=True)
        return _FileLock(self.lock_path)

    def snapshot(self) -> dict[str, Any]:
        """A consistent copy of the state (no lock on POSIX thanks to atomic replace)."""
        if os.name == "nt" and os.path.isdir(self.directory):
            with self.locked():
                return self._read()
        return self._read()

    def transaction(self) -> _Transaction:
        """``with store.transaction() as data``: the state under the lock, written back unless
        the block raises."""
        return _Transaction(self)

    def bump_counter(self, name: str) -> int:
        """Increment and return the cross-process call counter ``name`` (for ``#N`` faults)."""
        path = os.path.join(self.directory, COUNTERS_FILE)
        with self.locked():
            counters = self._read(path)
            counters[name] = int(counters.get(name, 0)) + 1
            self._write(counters, path)
            return counters[name]

    def reset_counters(self) -> None:
        with self.locked():
            self._write({}, os.path.join(self.directory, COUNTERS_FILE))
