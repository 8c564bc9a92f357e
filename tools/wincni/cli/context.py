"""``Context``: what a command may touch of the world it runs in, handed to every ``run``.

Nothing below a command's ``run`` reads ``sys`` or ``os.environ`` itself: tests build a
``Context`` of their own (a ``StringIO`` for stdout, a node's environment, a fake clock).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Mapping, TextIO


@dataclass(frozen=True)
class Context:
    stdout: TextIO
    stderr: TextIO
    env: Mapping[str, str]
    platform: str
    cwd: str
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep
