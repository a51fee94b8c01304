"""until_stopped: a stream whose client goes away closes its source cleanly."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from roundhouse.server.streams import until_stopped


def test_a_client_gone_while_the_next_item_is_pending_closes_the_source(
    caplog: pytest.LogCaptureFixture,
) -> None:
    closed: list[bool] = []

    async def source() -> AsyncIterator[int]:
        try:
            yield 1
            await asyncio.sleep(3600)  # the next item never comes
            yield 2
        finally:
            closed.append(True)

    async def scenario() -> None:
        got: list[int] = []
        first = asyncio.Event()

        async def consume() -> None:
            async for item in until_stopped(source(), asyncio.Event()):
                got.append(item)
                first.set()

        task = asyncio.ensure_future(consume())
        await first.wait()
        await asyncio.sleep(0.01)
        task.cancel()  # the client went away
        with pytest.raises(asyncio.CancelledError):
            await task
        assert got == [1] and closed == [True]

    loop_errors: list[dict[str, object]] = []

    async def main() -> None:
        asyncio.get_running_loop().set_exception_handler(lambda _, ctx: loop_errors.append(ctx))
        await scenario()

    asyncio.run(main())
    assert loop_errors == []
    assert "already running" not in caplog.text


def test_stopping_ends_the_stream_and_closes_the_source() -> None:
    closed: list[bool] = []

    async def source() -> AsyncIterator[int]:
        try:
            while True:
                await asyncio.sleep(3600)
                yield 0
        finally:
            closed.append(True)

    async def scenario() -> None:
        stopping = asyncio.Event()
        asyncio.get_running_loop().call_later(0.05, stopping.set)
        items = [item async for item in until_stopped(source(), stopping)]
        assert items == [] and closed == [True]

    asyncio.run(scenario())
