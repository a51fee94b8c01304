"""Bounded history: columns of floats at 1 s for an hour and at 1 min for a day."""

from __future__ import annotations

import math
from array import array
from collections.abc import Sequence

NAN = math.nan
SECONDS = 3600
MINUTES = 1440


class Ring:
    """A fixed number of rows of (t, value per field), oldest overwritten; NaN is "none".
    Arrays of doubles, allocated once: an hour of a dozen fields is about 350 KB."""

    def __init__(self, fields: int, capacity: int) -> None:
        self.capacity = capacity
        self._t = array("d", [NAN]) * capacity
        self._cols = [array("d", [NAN]) * capacity for _ in range(fields)]
        self._next = 0
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def append(self, t: float, values: Sequence[float]) -> None:
        i = self._next
        self._t[i] = t
        for col, value in zip(self._cols, values, strict=True):
            col[i] = value
        self._next = (i + 1) % self.capacity
        self._size = min(self._size + 1, self.capacity)

    def last_t(self) -> float | None:
        return self._t[(self._next - 1) % self.capacity] if self._size else None

    def since(self, t0: float) -> tuple[list[float], list[list[float]]]:
        """Rows with t > t0, oldest first: (times, one list per field)."""
        start = (self._next - self._size) % self.capacity
        order = [(start + k) % self.capacity for k in range(self._size)]
        rows = [i for i in order if self._t[i] > t0]
        return [self._t[i] for i in rows], [[col[i] for i in rows] for col in self._cols]


class TieredRing:
    """Seconds for the last hour; each finished minute also goes, averaged, to a day-long
    ring (a gauge's mean, a rate's mean: both what a chart of a day wants)."""

    def __init__(self, fields: int, seconds: int = SECONDS, minutes: int = MINUTES) -> None:
        self.fields = fields
        self.seconds = Ring(fields, seconds)
        self.minutes = Ring(fields, minutes)
        self._minute: float | None = None
        self._sums = [0.0] * fields
        self._counts = [0] * fields

    def append(self, t: float, values: Sequence[float]) -> None:
        minute = math.floor(t / 60) * 60
        if self._minute is not None and minute != self._minute:
            self._roll()
        self._minute = minute
        self.seconds.append(t, values)
        for k, value in enumerate(values):
            if not math.isnan(value):
                self._sums[k] += value
                self._counts[k] += 1

    def _roll(self) -> None:
        assert self._minute is not None
        means = [s / c if c else NAN for s, c in zip(self._sums, self._counts, strict=True)]
        self.minutes.append(self._minute, means)
        self._sums = [0.0] * self.fields
        self._counts = [0] * self.fields

    def window(self, window_s: float, now: float) -> tuple[float, list[float], list[list[float]]]:
        """(resolution in seconds, times, columns) covering the last `window_s`: seconds
        when the hour holds it, else minutes."""
        if window_s <= self.seconds.capacity:
            return 1.0, *self.seconds.since(now - window_s)
        return 60.0, *self.minutes.since(now - window_s)
