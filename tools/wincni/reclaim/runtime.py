"""The runtime's pod list (CRI ListPodSandbox) for each pass, or None and why."""

from __future__ import annotations

from typing import Any, Callable, Iterable


class Runtime:
    """The runtime's pod list for each pass, or None and why."""

    def __init__(self, endpoint: str, ask: Callable[[str], Iterable[Any]] | None = None) -> None:
        self.endpoint = "" if endpoint == "none" else endpoint
        self.ask = ask
        self.state = ""
        self.news = ""

    def pods(self) -> tuple[frozenset[str] | None, str]:
        """(the sandbox IDs or None, what to say about it)."""
        if not self.endpoint:
            return self._now("off", None, "runtime not asked (--runtime-endpoint none): the ownership rule alone")
        from tools.wincni.node import cri

        try:
            listed = frozenset(s.id for s in (self.ask or cri.list_sandboxes)(self.endpoint))
        except cri.CriError as exc:
            note = f"runtime's pod list not available at {self.endpoint} ({exc}): the ownership rule alone"
            return self._now("unavailable", None, note)
        return self._now("listed", listed, f"runtime lists {len(listed)} sandbox(es) at {self.endpoint}: kept")

    def _now(self, state: str, listed: frozenset[str] | None, note: str) -> tuple[frozenset[str] | None, str]:
        self.news = note if state != self.state else ""  # said once per change: a loop logs no noise
        self.state = state
        return listed, note
