"""A time-bounded buffer of every instance's metrics, tick by tick (no Qt in here)."""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

import numpy as np

from roundhouse.api.metrics import InstanceMetrics, MetricsHistory, MetricsSnapshot

# The figures the Monitor charts draw, as stored per instance and tick (NaN: not measured).
CHARTED = ("output_tps", "running", "queued", "cpu_percent", "rss_bytes", "vram_bytes")


@dataclass(frozen=True)
class Tick:
    t: float
    # instance id -> figure name -> value
    values: dict[str, dict[str, float]]


def _figures(point: InstanceMetrics) -> dict[str, float]:
    figures = {}
    for name in CHARTED:
        value = getattr(point, name)
        figures[name] = math.nan if value is None else float(value)
    return figures


def label_of(point: InstanceMetrics) -> str:
    """How a chart's legend names an instance: its model (a file's name, not its path; a
    repository's model, not its owner), then its id."""
    if not point.model:
        return point.instance
    return f"{point.model.replace(chr(92), '/').rsplit('/', 1)[-1]} ({point.instance})"


class MetricsBuffer:
    """The ticks of the last `window_s` seconds, oldest first; each tick once."""

    def __init__(self, window_s: float = 300.0) -> None:
        self.window_s = window_s
        self._ticks: deque[Tick] = deque()
        self.labels: dict[str, str] = {}
        self.latest: MetricsSnapshot | None = None
        # Bumped on every change, so a painter can tell whether it has drawn the latest data.
        self.revision = 0

    def __len__(self) -> int:
        return len(self._ticks)

    @property
    def end_t(self) -> float | None:
        return self._ticks[-1].t if self._ticks else None

    def add_snapshot(self, snapshot: MetricsSnapshot) -> None:
        self.latest = snapshot
        for point in snapshot.instances:
            self.labels[point.instance] = label_of(point)
        # A reconnect replays the latest snapshot: what is not newer is not a new tick.
        if not self._ticks or snapshot.t > self._ticks[-1].t:
            values = {p.instance: _figures(p) for p in snapshot.instances}
            self._ticks.append(Tick(snapshot.t, values))
            self._trim()
        self.revision += 1

    def load_history(self, history: MetricsHistory) -> None:
        """Replace what is held by the daemon's history; newer live ticks are kept."""
        rows: dict[float, dict[str, dict[str, float]]] = {}
        for series in history.series:
            # A column the daemon does not send reads as not measured.
            columns = [series.values.get(name) or [] for name in CHARTED]
            for index, t in enumerate(series.t):
                figures = {}
                for name, column in zip(CHARTED, columns, strict=True):
                    value = column[index] if index < len(column) else None
                    figures[name] = math.nan if value is None else float(value)
                rows.setdefault(t, {})[series.instance] = figures
            self.labels.setdefault(series.instance, series.instance)
        ticks = [Tick(t, rows[t]) for t in sorted(rows)]
        last = ticks[-1].t if ticks else -math.inf
        ticks.extend(tick for tick in self._ticks if tick.t > last)
        self._ticks = deque(ticks)
        self._trim()
        self.revision += 1

    def set_window(self, window_s: float) -> None:
        self.window_s = window_s
        self._trim()
        self.revision += 1

    def instances(self) -> list[str]:
        """Every instance with a point in the window, in the order they first appear."""
        seen: dict[str, None] = {}
        for tick in self._ticks:
            for instance in tick.values:
                seen.setdefault(instance)
        return list(seen)

    def times(self) -> np.ndarray:
        return np.fromiter((tick.t for tick in self._ticks), float, len(self._ticks))

    def column(self, instance: str, *names: str) -> np.ndarray:
        """The instance's figure at each tick (the sum of several names); NaN where absent."""
        out = np.full(len(self._ticks), math.nan)
        for index, tick in enumerate(self._ticks):
            figures = tick.values.get(instance)
            if figures is not None:
                out[index] = sum(figures[name] for name in names)
        return out

    def _trim(self) -> None:
        if not self._ticks:
            return
        oldest_allowed = self._ticks[-1].t - self.window_s
        while self._ticks and self._ticks[0].t < oldest_allowed:
            self._ticks.popleft()
