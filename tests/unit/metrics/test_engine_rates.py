"""The engine's own tokens/s: llama-server's timings, and Ollama's from usage and the stream."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

from roundhouse.core.gateway.live import LiveStats, engine_rates
from roundhouse.core.gateway.sse import relay
from tests.support.clock import Clock

TIMINGS = {
    "prompt_n": 12,
    "prompt_ms": 30.0,
    "prompt_per_second": 400.0,
    "predicted_n": 50,
    "predicted_ms": 250.0,
    "predicted_per_second": 200.0,
}


def test_timings_give_prompt_and_generation_rates() -> None:
    assert engine_rates(TIMINGS) == (400.0, 200.0)
    # All from the prompt cache: no prompt rate, the generation rate stands.
    assert engine_rates({**TIMINGS, "prompt_n": 0, "prompt_ms": 0.0}) == (0.0, 200.0)


def test_missing_or_odd_timings_say_nothing() -> None:
    assert engine_rates(None) is None
    assert engine_rates("fast") is None
    assert engine_rates({}) is None
    assert engine_rates({"predicted_n": True, "predicted_ms": 5.0}) is None
    assert engine_rates({"predicted_n": 5, "predicted_ms": "5"}) is None
    assert engine_rates({"predicted_n": 5, "predicted_ms": float("nan")}) is None


def test_a_meter_keeps_the_median_of_recent_engine_rates() -> None:
    clock = Clock()
    stats = LiveStats(clock)
    for predicted_ms in (500.0, 250.0, 100.0):
        meter = stats.begin("a", started=clock())
        meter.chunk(1)
        meter.timings({**TIMINGS, "predicted_ms": predicted_ms})
        meter.finish({"prompt_tokens": 12, "completion_tokens": 50})
    live = stats.get("a")
    assert live is not None
    prompt, output = live.recent_engine_rates()
    assert prompt == [400.0, 400.0, 400.0]
    assert output == [100.0, 200.0, 500.0]


def test_without_timings_only_a_derived_engine_gets_a_rate_from_the_stream() -> None:
    clock = Clock()
    stats = LiveStats(clock)
    for instance, derive in (("ollama", True), ("vllm", False)):
        meter = stats.begin(instance, started=clock(), derive_engine_rate=derive)
        clock.now += 1.0  # the prompt: not part of the generation rate
        for _ in range(11):
            meter.chunk(1)
            clock.now += 0.05
        meter.finish({"prompt_tokens": 4, "completion_tokens": 11})
    ollama, vllm = stats.get("ollama"), stats.get("vllm")
    assert ollama is not None and vllm is not None
    prompt, output = ollama.recent_engine_rates()
    assert prompt == [] and len(output) == 1
    assert abs(output[0] - 10 / 0.5) < 1e-9  # ten tokens after the first in half a second
    assert vllm.recent_engine_rates() == ([], [])


def test_a_derived_rate_needs_a_stream_of_two_tokens() -> None:
    clock = Clock()
    stats = LiveStats(clock)
    meter = stats.begin("a", started=clock(), derive_engine_rate=True)
    clock.now += 1.0
    meter.finish({"prompt_tokens": 4, "completion_tokens": 30})  # not streamed
    live = stats.get("a")
    assert live is not None and live.recent_engine_rates() == ([], [])


async def _chunks(parts: list[bytes]) -> AsyncIterator[bytes]:
    for part in parts:
        yield part


def test_the_relay_hands_on_the_timings_of_the_usage_chunk() -> None:
    def event(payload: dict[str, Any]) -> bytes:
        return b"data: " + json.dumps(payload).encode() + b"\n\n"

    token = {"choices": [{"index": 0, "delta": {"content": "a"}}], "usage": None}
    final = {"choices": [], "usage": {"completion_tokens": 1}, "timings": TIMINGS}
    parts = [event(token), event(final)[:20], event(final)[20:], b"data: [DONE]\n\n"]
    seen: list[Any] = []
    usages: list[Any] = []

    async def run() -> bytes:
        out = b""
        async for e in relay(
            _chunks(parts), forward_usage=False, on_usage=usages.append, on_timings=seen.append
        ):
            out += e
        return out

    relayed = asyncio.run(run())
    assert seen == [TIMINGS]
    assert usages == [{"completion_tokens": 1}]
    assert b"timings" not in relayed  # the usage chunk the client did not ask for is dropped
