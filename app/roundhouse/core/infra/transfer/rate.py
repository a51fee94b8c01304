"""The one rate meter: speed over a rolling window, ETA and stall from timed byte counts
(pure; the clock is given). Downloads, installs and Ollama pulls all measure with it."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

SPEED_WINDOW_S = 5.0
# No bytes for this long shows the item as stalled (long before the retry at stall_timeout_s).
STALL_SHOWN_AFTER_S = 5.0


@dataclass(frozen=True)
class Progress:
    speed_bps: float
    eta_s: float | None
    stalled: bool


class RollingRate:
    """Counts of bytes received, sampled over time; speed is measured up to `now`, so it
    falls toward zero while nothing arrives."""

    def __init__(self, window_s: float = SPEED_WINDOW_S) -> None:
        self.window_s = window_s
        self._points: deque[tuple[float, int]] = deque()
        self.last_bytes_at: float | None = None

    def reset(self, now: float, received: int) -> None:
        """Start measuring again (a new attempt): the wait before it is not a stall."""
        self._points.clear()
        self._points.append((now, received))
        self.last_bytes_at = now

    def add(self, now: float, received: int) -> None:
        if not self._points or received != self._points[-1][1]:
            self.last_bytes_at = now
        self._points.append((now, received))
        # Keep one point at or before the window's start as the baseline.
        while len(self._points) > 2 and self._points[1][0] <= now - self.window_s:
            self._points.popleft()

    @property
    def measuring(self) -> bool:
        """Whether there are two samples, so a speed means something."""
        return len(self._points) >= 2

    def speed(self, now: float) -> float:
        if len(self._points) < 2:
            return 0.0
        start_t, start_bytes = self._points[0]
        if start_t < now - self.window_s:
            start_t = now - self.window_s
            start_bytes = self._bytes_at(start_t)
        span = now - start_t
        done = self._points[-1][1] - start_bytes
        return max(0.0, done / span) if span > 0 else 0.0

    def _bytes_at(self, t: float) -> int:
        """Bytes received by time `t`, linearly between the samples around it."""
        before = self._points[0]
        for point in self._points:
            if point[0] >= t:
                if point[0] == before[0]:
                    return point[1]
                share = (t - before[0]) / (point[0] - before[0])
                return int(before[1] + share * (point[1] - before[1]))
            before = point
        return before[1]

    def progress(self, now: float, remaining: int, *, retrying: bool = False) -> Progress:
        """Speed, ETA (None while stalled or unknown) and the stall flag at `now`."""
        quiet = self.last_bytes_at is None or now - self.last_bytes_at >= STALL_SHOWN_AFTER_S
        stalled = retrying or (quiet and remaining > 0)
        speed = self.speed(now)
        eta = remaining / speed if speed > 0 and not stalled else None
        if remaining == 0:
            eta = 0.0
        return Progress(speed_bps=speed, eta_s=eta, stalled=stalled)
