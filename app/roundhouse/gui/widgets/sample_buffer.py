"""A time-bounded buffer of hardware samples that the charts draw from (no Qt in here)."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

from roundhouse.api.hardware import HardwareSample


class SampleBuffer:
    """Keeps the samples of the last `window_s` seconds, oldest first, without duplicates."""

    def __init__(self, window_s: float = 900.0) -> None:
        self.window_s = window_s
        self._samples: deque[HardwareSample] = deque()
        # Bumped on every change, so a painter can tell whether it has drawn the latest data.
        self.revision = 0

    def __len__(self) -> int:
        return len(self._samples)

    @property
    def samples(self) -> tuple[HardwareSample, ...]:
        return tuple(self._samples)

    @property
    def latest(self) -> HardwareSample | None:
        return self._samples[-1] if self._samples else None

    def extend(self, samples: Iterable[HardwareSample]) -> None:
        changed = False
        for sample in samples:
            # Out-of-order or repeated samples (a reconnect replays history) are dropped.
            if self._samples and sample.t <= self._samples[-1].t:
                continue
            self._samples.append(sample)
            changed = True
        if changed:
            self._trim()
            self.revision += 1

    def append(self, sample: HardwareSample) -> None:
        self.extend((sample,))

    def _trim(self) -> None:
        oldest_allowed = self._samples[-1].t - self.window_s
        while self._samples and self._samples[0].t < oldest_allowed:
            self._samples.popleft()
