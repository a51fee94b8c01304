"""The 1 Hz sampler of live counters, kept in a bounded ring and fanned out to subscribers."""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import AsyncIterator, Callable

import psutil

from roundhouse.api.hardware import GpuSample, HardwareSample, SampleHistory
from roundhouse.base.fanout import Fanout
from roundhouse.base.tasks import cancel_and_wait, run_every

log = logging.getLogger(__name__)

GpuReader = Callable[[], list[GpuSample]]


def read_host_sample(
    gpus: list[GpuSample], clock: Callable[[], float] = time.time
) -> HardwareSample:
    """One reading of CPU, RAM and the given GPU samples."""
    memory = psutil.virtual_memory()
    return HardwareSample(
        t=clock(),
        # interval=None compares with the previous call: non-blocking, and exact at 1 Hz.
        cpu_percent=psutil.cpu_percent(interval=None),
        ram_used_bytes=memory.total - memory.available,
        ram_total_bytes=memory.total,
        gpus=gpus,
    )


class Sampler:
    """Samples at a fixed interval into a ring buffer; `subscribe()` streams new samples."""

    def __init__(
        self,
        gpu_reader: GpuReader,
        *,
        interval_s: float = 1.0,
        history_s: float = 3600.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._gpu_reader = gpu_reader
        self.interval_s = interval_s
        self.capacity = max(1, int(history_s / interval_s))
        self._ring: deque[HardwareSample] = deque(maxlen=self.capacity)
        self._clock = clock
        self._fanout: Fanout[HardwareSample] = Fanout()
        self._task: asyncio.Task[None] | None = None

    def history(self, since: float | None = None) -> SampleHistory:
        samples = [s for s in self._ring if since is None or s.t > since]
        return SampleHistory(interval_s=self.interval_s, capacity=self.capacity, samples=samples)

    def latest(self) -> HardwareSample | None:
        return self._ring[-1] if self._ring else None

    async def sample_once(self) -> HardwareSample:
        """Take one sample now (GPU libraries block, so they run in a worker thread)."""
        gpus = await asyncio.to_thread(self._safe_gpu_read)
        sample = read_host_sample(gpus, self._clock)
        self._publish(sample)
        return sample

    def _safe_gpu_read(self) -> list[GpuSample]:
        try:
            return self._gpu_reader()
        except Exception:
            # A GPU that fails one reading must not stop CPU and RAM sampling; the error is
            # logged with its traceback and the next tick tries again.
            log.exception("GPU sampling failed")
            return []

    def _publish(self, sample: HardwareSample) -> None:
        self._ring.append(sample)
        self._fanout.publish(sample)

    def subscribe(self) -> AsyncIterator[HardwareSample]:
        """Yield every new sample until the caller stops iterating."""
        return self._fanout.subscribe()

    @property
    def subscriber_count(self) -> int:
        return len(self._fanout)

    def start(self) -> None:
        if self._task is None:
            psutil.cpu_percent(interval=None)  # prime: the first call always returns 0.0
            self._task = asyncio.create_task(self._run(), name="hardware-sampler")

    async def stop(self) -> None:
        if self._task is not None:
            await cancel_and_wait(self._task)
            self._task = None

    async def _run(self) -> None:
        await run_every(self.interval_s, self.sample_once)
