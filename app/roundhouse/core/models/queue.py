"""The download queue users see: the Hub's files and the Ollama pulls as one, with one set of
actions; each item is handled by the queue that holds it, never guessed from its id.

Light on purpose (the two services are typed, not imported): the routes import it at the
server's start.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence
from typing import TYPE_CHECKING

from roundhouse.api.downloads import (
    UNFINISHED_STATES,
    AnyDownloadItem,
    DownloadItem,
    DownloadQueueView,
    DownloadRequest,
    DownloadState,
    DownloadTotals,
    OllamaPullItem,
)
from roundhouse.core.infra.changes import Changes, any_change

if TYPE_CHECKING:
    from roundhouse.core.models.downloads.service import DownloadService
    from roundhouse.core.models.ollama_pulls.service import OllamaPulls


_ACTIVE = (DownloadState.DOWNLOADING, DownloadState.VERIFYING)
_MOVING = (DownloadState.QUEUED, DownloadState.DOWNLOADING)


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
    sources: Sequence[Changes],
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
        seen = await any_change(sources, seen, 1.0 if busy else heartbeat_s)
        latest = view()
        yield latest


class DownloadQueue:
    """Both queues behind one face. `downloads()` gives the Hub queue or raises in words
    when it could not open; `pulls()` gives the Ollama pulls, or None when they could not."""

    def __init__(
        self,
        downloads: Callable[[], DownloadService],
        pulls: Callable[[], OllamaPulls | None],
        pulls_closed: Callable[[], Exception],
    ) -> None:
        self._downloads = downloads
        self._pulls = pulls
        # The error to raise when a pull is asked for while the pulls are closed.
        self._pulls_closed = pulls_closed

    # -- the whole queue ---------------------------------------------------------------------

    def view(self) -> DownloadQueueView:
        """Every file, the oldest first, with the pulls under `ollama`; totals over both."""
        view = self._downloads().view()
        pulls = self._pulls()
        return combine(view, pulls.items()) if pulls is not None else view

    async def follow(self) -> AsyncIterator[DownloadQueueView]:
        """The view now, then after each change of either queue (at most 4 per second)."""
        sources = [self._downloads().changes]
        pulls = self._pulls()
        if pulls is not None:
            sources.append(pulls.changes)
        async for view in follow_queue(self.view, sources):
            yield view

    async def add(self, request: DownloadRequest) -> DownloadQueueView:
        await self._downloads().add(request)
        return self.view()

    async def add_pull(self, model: str, base_url: str, instance: str | None) -> OllamaPullItem:
        return await self._open_pulls().add(model, base_url, instance)

    async def clear_finished(self) -> DownloadQueueView:
        """Forget done and cancelled items of both (files and models stay)."""
        await self._downloads().clear_finished()
        pulls = self._pulls()
        if pulls is not None:
            await pulls.clear_finished()
        return self.view()

    # -- one item, by the queue that holds it ------------------------------------------------

    def get(self, item_id: str) -> AnyDownloadItem:
        pulls = self._holding(item_id)
        return pulls.get(item_id) if pulls is not None else self._downloads().get(item_id)

    async def pause(self, item_id: str) -> AnyDownloadItem:
        pulls = self._holding(item_id)
        if pulls is not None:
            return await pulls.pause(item_id)
        return await self._downloads().pause(item_id)

    async def resume(self, item_id: str) -> AnyDownloadItem:
        pulls = self._holding(item_id)
        if pulls is not None:
            return await pulls.resume(item_id)
        return await self._downloads().resume(item_id)

    async def cancel(self, item_id: str) -> AnyDownloadItem:
        pulls = self._holding(item_id)
        if pulls is not None:
            return await pulls.cancel(item_id)
        return await self._downloads().cancel(item_id)

    def _holding(self, item_id: str) -> OllamaPulls | None:
        """The pulls when they hold the item; None: it is the Hub queue's (or no one's,
        which the Hub queue says in words)."""
        pulls = self._pulls()
        return pulls if pulls is not None and pulls.holds(item_id) else None

    def _open_pulls(self) -> OllamaPulls:
        pulls = self._pulls()
        if pulls is None:
            raise self._pulls_closed()
        return pulls
