"""The gateway's hook: tokens, time to first token, inter-token latency and the engine's own
tokens/s per instance."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

# Latencies of this many recent requests per instance are kept for the median.
RECENT = 32


class InstanceLive:
    """Counters since the daemon started, and the latencies of recent requests. Plain
    attributes and a fixed ring: an event on the hot path is a few additions, no allocation."""

    __slots__ = (
        "_next",
        "_next_engine",
        "engine_output_tps",
        "engine_prompt_tps",
        "itl_s",
        "output_tokens",
        "prompt_tokens",
        "requests",
        "ttft_s",
    )

    def __init__(self) -> None:
        self.output_tokens = 0
        self.prompt_tokens = 0
        self.requests = 0
        self.ttft_s: list[float] = [0.0] * RECENT
        self.itl_s: list[float] = [0.0] * RECENT
        self._next = 0
        # The engine's own rates of recent requests (0: that request did not say).
        self.engine_prompt_tps: list[float] = [0.0] * RECENT
        self.engine_output_tps: list[float] = [0.0] * RECENT
        self._next_engine = 0

    def record_latency(self, ttft_s: float, itl_s: float) -> None:
        slot = self._next % RECENT
        self.ttft_s[slot] = ttft_s
        self.itl_s[slot] = itl_s
        self._next += 1

    def record_engine_rates(self, prompt_tps: float, output_tps: float) -> None:
        slot = self._next_engine % RECENT
        self.engine_prompt_tps[slot] = prompt_tps
        self.engine_output_tps[slot] = output_tps
        self._next_engine += 1

    def recent_engine_rates(self) -> tuple[list[float], list[float]]:
        """(prompt, generation) tokens/s the engine reported for recent requests."""
        n = min(self._next_engine, RECENT)
        prompt = [v for v in self.engine_prompt_tps[:n] if v > 0]
        return prompt, [v for v in self.engine_output_tps[:n] if v > 0]

    def recent(self) -> tuple[list[float], list[float]]:
        """(TTFTs, ITLs) of the recent requests that measured them; ITL 0 means one token."""
        n = min(self._next, RECENT)
        return self.ttft_s[:n], [v for v in self.itl_s[:n] if v > 0]


class RequestMeter:
    """One request through the gateway: `chunk` per read of its stream, `finish` once."""

    __slots__ = (
        "_clock",
        "_derive",
        "_events",
        "_finished",
        "_first",
        "_last",
        "_live",
        "_started",
        "_timings",
    )

    def __init__(
        self,
        live: InstanceLive,
        started: float,
        clock: Callable[[], float],
        derive_engine_rate: bool = False,
    ) -> None:
        self._live = live
        self._clock = clock
        self._started = started
        self._derive = derive_engine_rate
        self._first = 0.0
        self._last = 0.0
        self._events = 0
        self._finished = False
        self._timings: Any = None

    def timings(self, timings: Any) -> None:
        """llama-server's `timings` object, from the event or reply that carried it."""
        self._timings = timings

    def chunk(self, events: int) -> None:
        """`events` complete stream events went to the client; each counts as a token until
        the engine's usage says the exact number."""
        now = self._clock()
        if not self._events:
            self._first = now
        self._last = now
        self._events += events
        self._live.output_tokens += events

    def finish(self, usage: Any) -> None:
        """The reply ended; `usage` is OpenAI's usage object when the engine sent one."""
        if self._finished:
            return
        self._finished = True
        live = self._live
        live.requests += 1
        if isinstance(usage, dict):
            # OpenAI's usage, or Anthropic's (an engine's own /v1/messages).
            completion = _int(usage.get("completion_tokens", usage.get("output_tokens")))
            if completion:
                # The events counted live include role, finish and usage chunks.
                live.output_tokens += completion - self._events
            live.prompt_tokens += _int(usage.get("prompt_tokens")) + sum(
                _int(usage.get(k))
                for k in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
            )
        if not self._events:
            # Not streamed: the whole reply is its first token.
            self._first = self._last = self._clock()
        ttft = self._first - self._started
        itl = (self._last - self._first) / (self._events - 1) if self._events > 1 else 0.0
        live.record_latency(max(ttft, 0.0), itl)
        rates = engine_rates(self._timings)
        if rates is None and self._derive and isinstance(usage, dict):
            rates = self._stream_rate(_int(usage.get("completion_tokens")))
        if rates is not None:
            live.record_engine_rates(*rates)

    def _stream_rate(self, completion: int) -> tuple[float, float] | None:
        """Generation tokens/s from the usage and the stream's own timing, for an engine
        whose OpenAI-compatible replies carry no timings of their own (Ollama's /v1): the
        tokens after the first over the time from the first event to the last."""
        span = self._last - self._first
        if completion < 2 or self._events < 2 or span <= 0:
            return None
        return 0.0, (completion - 1) / span


class LiveStats:
    """Per instance id: what the gateway saw of its requests."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._by_instance: dict[str, InstanceLive] = {}

    def begin(
        self, instance_id: str, started: float, derive_engine_rate: bool = False
    ) -> RequestMeter:
        """A meter for one request to `instance_id` that arrived at `started` (clock time,
        so time spent queued counts toward its time to first token). `derive_engine_rate`:
        the engine reports no timings, so its generation rate comes from the stream."""
        live = self._by_instance.get(instance_id)
        if live is None:
            live = self._by_instance[instance_id] = InstanceLive()
        return RequestMeter(live, started, self.clock, derive_engine_rate)

    def get(self, instance_id: str) -> InstanceLive | None:
        return self._by_instance.get(instance_id)

    def forget_except(self, present: set[str]) -> None:
        for gone in self._by_instance.keys() - present:
            del self._by_instance[gone]


def engine_rates(timings: Any) -> tuple[float, float] | None:
    """(prompt, generation) tokens/s from llama-server's `timings`; None when absent. A rate
    the engine did not measure (no tokens, or no time) is 0."""
    if not isinstance(timings, dict):
        return None
    prompt = _rate(timings.get("prompt_n"), timings.get("prompt_ms"))
    output = _rate(timings.get("predicted_n"), timings.get("predicted_ms"))
    if prompt == 0 and output == 0:
        return None
    return prompt, output


def _rate(tokens: Any, ms: Any) -> float:
    n = _int(tokens)
    if n <= 0 or not isinstance(ms, int | float) or isinstance(ms, bool) or not ms > 0:
        return 0.0
    return float(n * 1000.0 / ms)


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
