"""The gateway's hook: live token counts, corrected by usage; TTFT and ITL per request."""

from __future__ import annotations

import time

from roundhouse.core.gateway.live import RECENT, LiveStats
from tests.support.clock import Clock


def test_a_stream_counts_events_then_the_usage_corrects_them() -> None:
    clock = Clock()
    stats = LiveStats(clock)
    meter = stats.begin("a", started=clock())
    clock.now += 0.5  # queued and prompt: first event after half a second
    meter.chunk(1)
    for _ in range(4):
        clock.now += 0.1
        meter.chunk(1)
    live = stats.get("a")
    assert live is not None and live.output_tokens == 5
    meter.finish({"prompt_tokens": 7, "completion_tokens": 4})
    assert live.output_tokens == 4
    assert live.prompt_tokens == 7
    assert live.requests == 1
    ttfts, itls = live.recent()
    assert ttfts == [0.5]
    assert abs(itls[0] - 0.1) < 1e-9


def test_finish_counts_once_and_without_usage_keeps_the_live_count() -> None:
    clock = Clock()
    stats = LiveStats(clock)
    meter = stats.begin("a", started=clock())
    meter.chunk(3)
    meter.finish(None)
    meter.finish({"completion_tokens": 100})
    live = stats.get("a")
    assert live is not None and live.output_tokens == 3 and live.requests == 1


def test_a_reply_not_streamed_has_its_end_as_first_token() -> None:
    clock = Clock()
    stats = LiveStats(clock)
    meter = stats.begin("a", started=clock())
    clock.now += 2.0
    meter.finish({"prompt_tokens": 3, "completion_tokens": 8})
    live = stats.get("a")
    assert live is not None
    assert live.output_tokens == 8
    assert live.recent() == ([2.0], [])


def test_recent_latencies_are_bounded() -> None:
    clock = Clock()
    stats = LiveStats(clock)
    for _ in range(RECENT * 3):
        stats.begin("a", clock()).finish(None)
    live = stats.get("a")
    assert live is not None and len(live.recent()[0]) == RECENT


def test_forget_drops_instances_that_are_gone() -> None:
    stats = LiveStats()
    stats.begin("a", 0.0)
    stats.begin("b", 0.0)
    stats.forget_except({"b"})
    assert stats.get("a") is None and stats.get("b") is not None


def test_a_chunk_costs_well_under_a_microsecond_or_two() -> None:
    """The hook runs on the gateway's hot path, once per relayed read."""
    stats = LiveStats()
    meter = stats.begin("a", time.monotonic())
    n = 100_000
    started = time.perf_counter()
    for _ in range(n):
        meter.chunk(1)
    per_chunk = (time.perf_counter() - started) / n
    # Generous for a shared, slow machine; a relayed read costs tens of microseconds.
    assert per_chunk < 5e-6, per_chunk
