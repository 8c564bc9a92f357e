"""The simulator's on-disk state: one JSON document, one lock file, atomic replace.

Every pod ADD goes through here from its own process, so correctness under concurrency is the
point: a mutation is lock → read → change → write a temp file → ``os.replace`` → unlock, and a
reader never sees a half-written file (on POSIX it needs no lock at all; on Windows, where
replacing a file another process holds open fails, readers take the lock too).
"""
from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path
from typing import Any, Iterator, Mapping

STATE_FILE = "state.json"
LOCK_FILE = "state.lock"
COUNTERS_FILE = "fault-counters.json"


def default_state_dir(env: Mapping[str, str]) -> Path:
    """Per-user state dir: %LOCALAPPDATA%\\wincni\\hns-sim, else $XDG_STATE_HOME or ~/.local/state."""
    if os.name == "nt" and env.get("LOCALAPPDATA"):
        return Path(env["LOCALAPPDATA"]) / "wincni" / "hns-sim"
    base = env.get("XDG_STATE_HOME") or str(Path(env.get("HOME") or Path.home()) / ".local" / "state")
    return Path(base) / "wincni" / "hns-sim"


def empty_state() -> dict[str, Any]:
    return {"networks": {}, "endpoints": {}, "namespaces": {}, "loadbalancers": {},
            "containers": {}, "seq": {}}


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    with open(path, "a+b") as fh:
        if os.name == "nt":
            import msvcrt

            while True:
                try:
                    fh.seek(0)
                    msvcrt.locking(fh.fileno(), msvcrt.LK_LOCK, 1)
                    break
                except OSError:  # LK_LOCK gives up after ~10 s; keep waiting
                    time.sleep(0.01)
            try:
                yield
            finally:
                fh.seek(0)
                msvcrt.locking(fh.fileno(), msvcrt.LK_UNLCK, 1)
        else:
            import fcntl

            fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


class Store:
    """The JSON state in ``directory``; ``snapshot()`` to read, ``transaction()`` to change."""

    def __init__(self, directory: Path | str) -> None:
        self.directory = Path(directory)
        self.path = self.directory / STATE_FILE
        self.lock_path = self.directory / LOCK_FILE

    def _read(self, path: Path | None = None) -> dict[str, Any]:
        try:
            with open(path or self.path, "rb") as fh:
                return json.loads(fh.read())
        except FileNotFoundError:
            return empty_state() if path is None else {}

    def _write(self, data: Any, path: Path | None = None) -> None:
        target = path or self.path
        tmp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(data, fh, separators=(",", ":"))
        os.replace(tmp, target)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self.directory.mkdir(parents=True, exist_ok=True)
        with _file_lock(self.lock_path):
            yield

    def snapshot(self) -> dict[str, Any]:
        """A consistent copy of the state (no lock on POSIX thanks to atomic replace)."""
        if os.name == "nt" and self.directory.exists():
            with self._locked():
                return self._read()
        return self._read()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[dict[str, Any]]:
        """Yield the state under the lock; written back unless the block raises."""
        with self._locked():
            data = self._read()
            yield data
            self._write(data)

    def bump_counter(self, name: str) -> int:
        """Increment and return the cross-process call counter ``name`` (for ``#N`` faults)."""
        path = self.directory / COUNTERS_FILE
        with self._locked():
            counters = self._read(path)
            counters[name] = int(counters.get(name, 0)) + 1
            self._write(counters, path)
            return counters[name]

    def reset_counters(self) -> None:
        with self._locked():
            self._write({}, self.directory / COUNTERS_FILE)
