"""Waits between retries that double up to a ceiling: the bridge's reconnects, pages' retries."""

from __future__ import annotations


class Backoff:
    """Waits between reconnection attempts: doubling from `first_s` up to `max_s`."""

    def __init__(self, first_s: float = 0.5, max_s: float = 10.0) -> None:
        self.first_s = first_s
        self.max_s = max_s
        self._next = first_s

    def next_delay(self) -> float:
        delay = self._next
        self._next = min(self._next * 2, self.max_s)
        return delay

    def reset(self) -> None:
        self._next = self.first_s
