"""The sampler keeps a bounded ring and streams every new sample to subscribers."""

from __future__ import annotations

import asyncio
import itertools

from roundhouse.api.hardware import GpuSample
from roundhouse.base.fanout import SUBSCRIBER_BACKLOG
from roundhouse.core.hardware.sampler import Sampler


def _gpu() -> list[GpuSample]:
    return [GpuSample(index=0, memory_used_bytes=1024, memory_total_bytes=4096)]


def test_ring_is_bounded_and_ordered() -> None:
    ticks = itertools.count(1000)
    sampler = Sampler(_gpu, interval_s=1.0, history_s=900, clock=lambda: float(next(ticks)))
    assert sampler.capacity == 900

    async def take(n: int) -> None:
        for _ in range(n):
            await sampler.sample_once()

    asyncio.run(take(905))
    history = sampler.history()
    assert len(history.samples) == 900
    assert history.samples[0].t == 1005.0
    assert history.samples[-1].t == 1904.0
    assert [s.t for s in sampler.history(since=1900.0).samples] == [1901.0, 1902.0, 1903.0, 1904.0]
    latest = sampler.latest()
    assert latest is not None
    assert latest.gpus[0].memory_used_bytes == 1024
    assert 0 < latest.ram_used_bytes <= latest.ram_total_bytes


def test_failing_gpu_reader_does_not_stop_sampling() -> None:
    def broken() -> list[GpuSample]:
        raise RuntimeError("driver went away")

    sampler = Sampler(broken)
    sample = asyncio.run(sampler.sample_once())
    assert sample.gpus == []
    assert sample.ram_total_bytes > 0


def test_subscribers_get_new_samples_and_slow_ones_drop_the_oldest() -> None:
    async def scenario() -> tuple[list[float], list[float]]:
        ticks = itertools.count()
        sampler = Sampler(_gpu, clock=lambda: float(next(ticks)))
        fast = sampler.subscribe()
        slow = sampler.subscribe()
        first_fast = asyncio.ensure_future(anext(fast))
        first_slow = asyncio.ensure_future(anext(slow))
        await asyncio.sleep(0)
        assert sampler.subscriber_count == 2
        await sampler.sample_once()
        got_fast = [(await first_fast).t]
        got_slow = [(await first_slow).t]
        for _ in range(SUBSCRIBER_BACKLOG + 5):
            await sampler.sample_once()
        got_fast.append((await anext(fast)).t)
        got_slow.append((await anext(slow)).t)
        await fast.aclose()
        await slow.aclose()
        assert sampler.subscriber_count == 0
        return got_fast, got_slow

    fast, slow = asyncio.run(scenario())
    assert fast[0] == 0.0
    # Both queues overflowed the same way: the oldest samples were dropped.
    assert fast[1] == slow[1] == 6.0


def test_run_loop_samples_at_the_interval() -> None:
    async def scenario() -> int:
        sampler = Sampler(_gpu, interval_s=0.1)
        sampler.start()
        await asyncio.sleep(0.55)
        await sampler.stop()
        return len(sampler.history().samples)

    count = asyncio.run(scenario())
    assert 5 <= count <= 7
