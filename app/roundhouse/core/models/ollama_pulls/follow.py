"""The queue as one view: the Hub files and the Ollama pulls, their totals, and a live follow.

Light on purpose (no huggingface_hub, no aiohttp): the routes import it at the server's start.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Protocol

from roundhouse.api.downloads import (
    UNFINISHED_STATES,
    DownloadItem,
    DownloadQueueView,
    DownloadState,
    DownloadTotals,
    OllamaPullItem,
)

_ACTIVE = (DownloadState.DOWNLOADING, DownloadState.VERIFYING)
_MOVING = (DownloadState.QUEUED, DownloadState.DOWNLOADING)


class Changing(Protocol):
    """A source of changes: the download service and the Ollama pulls both are."""

    @property
    def version(self) -> int: ...

    async def wait_change(self, seen: int, timeout_s: float) -> int: ...


def totals_of(items: Sequence[DownloadItem | OllamaPullItem]) -> DownloadTotals:
    unfinished = [item for item in items if item.state in UNFINISHED_STATES]
    moving = [item for item in items if item.state in _MOVING]
    speed = sum(item.speed_bps for item in items)
    left = sum(item.remaining_bytes for item in moving)
    stalled = any(item.stalled for item in moving)
    return DownloadTotals(
        items=len(items),
        active=sum(item.state in _ACTIVE for item in items),
        queued=sum(item.state == DownloadState.QUEUED for item in items),
        unfinished_bytes=sum(item.size for item in unfinished),
        unfinished_done_bytes=sum(item.bytes_done for item in unfinished),
        speed_bps=speed,
        eta_s=left / speed if speed > 0 and not stalled else (0.0 if left == 0 else None),
    )


def combine(view: DownloadQueueView, pulls: list[OllamaPullItem]) -> DownloadQueueView:
    """The Hub queue's view with the Ollama pulls added, totals over both."""
    if not pulls:
        return view
    totals = totals_of([*view.items, *pulls])
    return view.model_copy(update={"ollama": pulls, "totals": totals})


async def follow_queue(
    view: Callable[[], DownloadQueueView],
    sources: Sequence[Changing],
    interval_s: float = 0.25,
    heartbeat_s: float = 15.0,
) -> AsyncIterator[DownloadQueueView]:
    """The view now, then after each change of any source at most every `interval_s`; every
    second while something downloads (speed and stall move with time alone), and at least
    every `heartbeat_s`."""
    seen = [source.version for source in sources]
    latest = view()
    yield latest
    while True:
        await asyncio.sleep(interval_s)
        states = [i.state for i in latest.items] + [i.state for i in latest.ollama]
        busy = DownloadState.DOWNLOADING in states
        seen = await _any_change(sources, seen, 1.0 if busy else heartbeat_s)
        latest = view()
        yield latest


async def _any_change(sources: Sequence[Changing], seen: list[int], timeout_s: float) -> list[int]:
    waits = [
        asyncio.create_task(source.wait_change(version, timeout_s))
        for source, version in zip(sources, seen, strict=True)
    ]
    try:
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for wait in waits:
            wait.cancel()
        await asyncio.gather(*waits, return_exceptions=True)
    return [source.version for source in sources]
