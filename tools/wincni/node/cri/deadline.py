"""When a CRI call must be over, end to end: the runtime decides how much we send, read and
decode, so every wait and every decoding loop asks one ``Deadline`` on an injected clock (the
transports wait until ``at``; the decoders call ``step`` per unit of work)."""

from __future__ import annotations

import time
from typing import Callable

from tools.wincni.node.cri.errors import Unreachable

#: Decoding steps between two looks at the clock: a few microseconds of work, never a long loop.
STEPS_PER_LOOK = 1024


class Deadline:
    def __init__(self, timeout: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.timeout, self.clock = timeout, clock
        self.at = clock() + timeout
        self.steps = 0

    def check(self, doing: str) -> None:
        """``Unreachable`` once the deadline has passed; ``doing`` says what it stopped."""
        if self.clock() >= self.at:
            raise Unreachable(f"the call's {self.timeout:g} s deadline passed while {doing}")

    def step(self, doing: str) -> None:
        """One unit of decoding work: the clock is read every ``STEPS_PER_LOOK`` of them."""
        self.steps += 1
        if not self.steps % STEPS_PER_LOOK:
            self.check(doing)


def unbounded() -> Deadline:
    """No deadline: for decoding what we wrote ourselves, and for tests of the format alone."""
    return Deadline(float("inf"))
