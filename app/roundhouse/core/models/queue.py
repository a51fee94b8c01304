"""The download queue users see: the Hub's files and the Ollama pulls as one, with one set of
actions; each item is handled by the queue that holds it, never guessed from its id.

Light on purpose (the two services are typed, not imported): the routes import it at the
server's start.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING

from roundhouse.api.downloads import (
    AnyDownloadItem,
    DownloadQueueView,
    DownloadRequest,
    OllamaPullItem,
)
from roundhouse.core.models.ollama_pulls.follow import Changing, combine, follow_queue

if TYPE_CHECKING:
    from roundhouse.core.models.downloads.service import DownloadService
    from roundhouse.core.models.ollama_pulls.service import OllamaPulls


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
        sources: list[Changing] = [self._downloads()]
        pulls = self._pulls()
        if pulls is not None:
            sources.append(pulls)
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
