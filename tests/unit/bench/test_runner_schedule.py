"""The load generator's schedule: closed-loop slots, arrival times, and never more in flight
than the concurrency, against the stand-in streaming server on loopback."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

from aiohttp import web

from roundhouse.core.bench.records import RequestRecord
from roundhouse.core.bench.runner import Target, new_session, run_requests
from roundhouse.core.bench.workloads import Prompt
from tests.fakes.bench_stream import make_app

TOKENS = 5


def _run(body: Callable[[str], Coroutine[Any, Any, None]]) -> None:
    async def main() -> None:
        async with _serving() as base_url:
            await body(base_url)

    asyncio.run(main())


class _serving:
    """The stand-in app on a loopback port, counting requests in flight."""

    def __init__(self) -> None:
        self.runner: web.AppRunner | None = None
        self.in_flight = 0
        self.peak = 0

    async def __aenter__(self) -> str:
        app = make_app(tokens_per_s=500.0)

        @web.middleware
        async def count(request: web.Request, handler: Any) -> web.StreamResponse:
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
            try:
                response: web.StreamResponse = await handler(request)
                return response
            finally:
                self.in_flight -= 1

        app.middlewares.append(count)
        _serving.last = self
        self.runner = web.AppRunner(app, access_log=None)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        port = self.runner.addresses[0][1]
        return f"http://127.0.0.1:{port}/v1"

    async def __aexit__(self, *_: object) -> None:
        assert self.runner is not None
        await self.runner.cleanup()

    last: _serving


def _prompts(n: int) -> list[Prompt]:
    return [Prompt(text="hello there", input_len=2, output_len=TOKENS) for _ in range(n)]


async def _records(
    base_url: str, n: int, offsets: list[float], concurrency: int | None
) -> tuple[list[RequestRecord], float]:
    target = Target(base_url=base_url, api_key="k", model="stand-in")
    async with new_session(concurrency or n) as session:
        return await run_requests(session, target, _prompts(n), offsets, concurrency)


def test_closed_loop_keeps_the_concurrency_and_schedules_each_freed_slot() -> None:
    async def body(base_url: str) -> None:
        records, duration = await _records(base_url, 9, [0.0] * 9, 3)
        assert all(not r.error for r in records), [r.error for r in records]
        assert all(r.output_tokens == TOKENS for r in records)
        # The opening burst has no schedule; every later request waited for a slot.
        assert [r.scheduled_s is None for r in records] == [True] * 3 + [False] * 6
        ends = sorted(r.end_s for r in records)
        for r in records[3:]:
            assert r.scheduled_s is not None and r.sent_s >= r.scheduled_s
            # It took the slot of a request that had ended by then.
            assert any(abs(end - r.scheduled_s) < 1e-3 for end in ends)
        assert duration >= max(r.end_s for r in records)
        assert _serving.last.peak == 3

    _run(body)


def test_arrivals_are_kept_and_never_sent_early() -> None:
    offsets = [0.0, 0.05, 0.1, 0.15]

    async def body(base_url: str) -> None:
        records, _ = await _records(base_url, 4, offsets, None)
        for record, offset in zip(records, offsets, strict=True):
            assert record.scheduled_s == offset
            assert record.sent_s >= offset
            assert not record.error

    _run(body)


def test_arrivals_with_a_cap_wait_for_the_later_of_arrival_and_slot() -> None:
    offsets = [0.0, 0.0, 0.3, 0.31]

    async def body(base_url: str) -> None:
        records, _ = await _records(base_url, 4, offsets, 1)
        assert records[0].scheduled_s is None
        ends = [r.end_s for r in records]
        # Request 1 arrived at 0 but waited for request 0 to end.
        assert records[1].scheduled_s is not None
        assert abs(records[1].scheduled_s - ends[0]) < 1e-3
        # Request 2 arrives after the slot came free: its arrival is its schedule.
        assert records[2].scheduled_s == max(0.3, ends[1])
        assert all(r.sent_s >= (r.scheduled_s or 0.0) for r in records)
        assert _serving.last.peak == 1

    _run(body)
