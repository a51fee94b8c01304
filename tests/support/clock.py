"""A clock a test moves by hand: pass it where code takes `clock: Callable[[], float]`."""

from __future__ import annotations


class Clock:
    """Reads `now`; a test sets or advances it (`clock.now += 5`)."""

    def __init__(self, now: float = 100.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now
