"""The gateway's hook: tokens, time to first token and inter-token latency per instance."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

# Latencies of this many recent requests per instance are kept for the median.
RECENT = 32


class InstanceLive:
    """Counters since the daemon started, and the latencies of recent requests. Plain
    attributes and a fixed ring: an event on the hot path is a few additions, no allocation."""

    __slots__ = ("_next", "itl_s", "output_tokens", "prompt_tokens", "requests", "ttft_s")

    def __init__(self) -> None:
        self.output_tokens = 0
        self.prompt_tokens = 0
        self.requests = 0
        self.ttft_s: list[float] = [0.0] * RECENT
        self.itl_s: list[float] = [0.0] * RECENT
        self._next = 0

    def record_latency(self, ttft_s: float, itl_s: float) -> None:
        slot = self._next % RECENT
        self.ttft_s[slot] = ttft_s
        self.itl_s[slot] = itl_s
        self._next += 1

    def recent(self) -> tuple[list[float], list[float]]:
        """(TTFTs, ITLs) of the recent requests that measured them; ITL 0 means one token."""
        n = min(self._next, RECENT)
        return self.ttft_s[:n], [v for v in self.itl_s[:n] if v > 0]


class RequestMeter:
    """One request through the gateway: `chunk` per read of its stream, `finish` once."""

    __slots__ = ("_clock", "_events", "_finished", "_first", "_last", "_live", "_started")

    def __init__(self, live: InstanceLive, started: float, clock: Callable[[], float]) -> None:
        self._live = live
        self._clock = clock
        self._started = started
        self._first = 0.0
        self._last = 0.0
        self._events = 0
        self._finished = False

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
            completion = _int(usage.get("completion_tokens"))
            if completion:
                # The events counted live include role, finish and usage chunks.
                live.output_tokens += completion - self._events
            live.prompt_tokens += _int(usage.get("prompt_tokens"))
        if not self._events:
            # Not streamed: the whole reply is its first token.
            self._first = self._last = self._clock()
        ttft = self._first - self._started
        itl = (self._last - self._first) / (self._events - 1) if self._events > 1 else 0.0
        live.record_latency(max(ttft, 0.0), itl)


class LiveStats:
    """Per instance id: what the gateway saw of its requests."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._by_instance: dict[str, InstanceLive] = {}

    def begin(self, instance_id: str, started: float) -> RequestMeter:
        """A meter for one request to `instance_id` that arrived at `started` (clock time,
        so time spent queued counts toward its time to first token)."""
        live = self._by_instance.get(instance_id)
        if live is None:
            live = self._by_instance[instance_id] = InstanceLive()
        return RequestMeter(live, started, self.clock)

    def get(self, instance_id: str) -> InstanceLive | None:
        return self._by_instance.get(instance_id)

    def forget_except(self, present: set[str]) -> None:
        for gone in self._by_instance.keys() - present:
            del self._by_instance[gone]


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
