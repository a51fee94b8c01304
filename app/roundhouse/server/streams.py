"""Turn an async source into server-sent events that end when the daemon stops."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator
from typing import TypeVar

from fastapi.sse import ServerSentEvent
from pydantic import BaseModel

from roundhouse.base.tasks import cancel_and_wait

T = TypeVar("T")


async def until_stopped(source: AsyncIterator[T], stopping: asyncio.Event) -> AsyncIterator[T]:
    """Yield from `source` until it ends or `stopping` is set (uvicorn waits for open
    responses on shutdown, so a stream that never ends would hold the daemon up)."""
    stop_wait = asyncio.ensure_future(stopping.wait())
    next_item: asyncio.Future[T] | None = None
    try:
        while True:
            next_item = asyncio.ensure_future(anext(source))
            done, _ = await asyncio.wait(
                {next_item, stop_wait}, return_when=asyncio.FIRST_COMPLETED
            )
            if next_item not in done:
                await cancel_and_wait(next_item, reraise=False)
                return
            try:
                item = next_item.result()
            except StopAsyncIteration:
                return
            yield item
    finally:
        stop_wait.cancel()
        # A client that went away cancels this while the source's next item is pending:
        # that read must end before the source can be closed ("already running" else).
        if next_item is not None and not next_item.done():
            await cancel_and_wait(next_item, reraise=False)
        if isinstance(source, AsyncGenerator):
            await source.aclose()


def event(name: str, model: BaseModel) -> ServerSentEvent:
    """An SSE event whose data is the model's JSON."""
    return ServerSentEvent(event=name, raw_data=model.model_dump_json())
