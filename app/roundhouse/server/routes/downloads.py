"""Routes of the model download queue: add, list, follow, pause, resume, cancel."""

from __future__ import annotations

from collections.abc import AsyncIterator

from fastapi import APIRouter
from fastapi.sse import EventSourceResponse, ServerSentEvent

from roundhouse.api.downloads import DownloadItem, DownloadQueueView, DownloadRequest
from roundhouse.server.deps import ModelsOpen, Services
from roundhouse.server.streams import event, until_stopped

router = APIRouter(prefix="/downloads", tags=["downloads"], dependencies=[ModelsOpen])


@router.get("", response_model=DownloadQueueView)
async def queue(services: Services) -> DownloadQueueView:
    """Every download, the oldest first, with bytes, speed, ETA and state."""
    return services.download_service().view()


@router.post("", response_model=DownloadQueueView, status_code=202)
async def add(request: DownloadRequest, services: Services) -> DownloadQueueView:
    """Queue files of a Hub repository (paths or a glob). Refused when the disk has less
    free than 1.2x what the whole queue still has to fetch."""
    downloads = services.download_service()
    await downloads.add(request)
    return downloads.view()


@router.get("/stream", response_class=EventSourceResponse)
async def follow(services: Services) -> AsyncIterator[ServerSentEvent]:
    """The queue as a `queue` event now and after each change (at most 4 per second)."""
    downloads = services.download_service()
    async for view in until_stopped(downloads.subscribe(), services.stopping):
        yield event("queue", view)


@router.post("/clear", response_model=DownloadQueueView)
async def clear_finished(services: Services) -> DownloadQueueView:
    """Drop finished items (done and cancelled) from the list; files stay."""
    downloads = services.download_service()
    await downloads.clear_finished()
    return downloads.view()


@router.get("/{item_id}", response_model=DownloadItem)
async def item(item_id: str, services: Services) -> DownloadItem:
    return services.download_service().get(item_id)


@router.post("/{item_id}/pause", response_model=DownloadItem)
async def pause(item_id: str, services: Services) -> DownloadItem:
    return await services.download_service().pause(item_id)


@router.post("/{item_id}/resume", response_model=DownloadItem)
async def resume(item_id: str, services: Services) -> DownloadItem:
    """Continue from the partial file (a quarantined file starts again from zero)."""
    return await services.download_service().resume(item_id)


@router.post("/{item_id}/cancel", response_model=DownloadItem)
async def cancel(item_id: str, services: Services) -> DownloadItem:
    """Stop and remove the partial file."""
    return await services.download_service().cancel(item_id)
