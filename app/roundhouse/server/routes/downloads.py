"""Routes of the model download queue: add, list, follow, pause, resume, cancel.

The queue holds files from the Hub and Ollama pulls (core/models/queue.py); the same item
routes pause, resume and cancel either, and each answer says its `kind`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from fastapi import APIRouter
from fastapi.sse import EventSourceResponse, ServerSentEvent

from roundhouse.api.downloads import (
    AnyDownloadItem,
    DownloadQueueView,
    DownloadRequest,
    OllamaDownloadRequest,
    OllamaPullItem,
)
from roundhouse.server.deps import Instances, ModelsOpen, Queue, Services
from roundhouse.server.routes.ollama import ollama_url_for
from roundhouse.server.streams import event, until_stopped

router = APIRouter(prefix="/downloads", tags=["downloads"], dependencies=[ModelsOpen])


@router.get("", response_model=DownloadQueueView)
async def queue(downloads: Queue) -> DownloadQueueView:
    """Every download, the oldest first, with bytes, speed, ETA and state; Ollama pulls
    under `ollama`."""
    return downloads.view()


@router.post("", response_model=DownloadQueueView, status_code=202)
async def add(request: DownloadRequest, downloads: Queue) -> DownloadQueueView:
    """Queue files of a Hub repository (paths or a glob). Refused when the disk has less
    free than 1.2x what the whole queue still has to fetch."""
    return await downloads.add(request)


@router.post("/ollama", response_model=OllamaPullItem, status_code=202)
async def add_ollama(
    request: OllamaDownloadRequest, instances: Instances, downloads: Queue
) -> OllamaPullItem:
    """Queue a pull through Ollama's API: the instance named, else an Ollama serving, else
    OLLAMA_HOST's. A pull of that model there that has not finished is returned."""
    base_url = ollama_url_for(instances, request.instance)
    return await downloads.add_pull(request.model, base_url, request.instance)


@router.get("/stream", response_class=EventSourceResponse)
async def follow(services: Services, downloads: Queue) -> AsyncIterator[ServerSentEvent]:
    """The queue as a `queue` event now and after each change (at most 4 per second)."""
    async for view in until_stopped(downloads.follow(), services.stopping):
        yield event("queue", view)


@router.post("/clear", response_model=DownloadQueueView)
async def clear_finished(downloads: Queue) -> DownloadQueueView:
    """Drop finished items (done and cancelled) from the list; files and models stay."""
    return await downloads.clear_finished()


@router.get("/{item_id}", response_model=AnyDownloadItem)
async def item(item_id: str, downloads: Queue) -> AnyDownloadItem:
    return downloads.get(item_id)


@router.post("/{item_id}/pause", response_model=AnyDownloadItem)
async def pause(item_id: str, downloads: Queue) -> AnyDownloadItem:
    """Stop the transfer; an Ollama pull's stream ends and Ollama keeps its layers."""
    return await downloads.pause(item_id)


@router.post("/{item_id}/resume", response_model=AnyDownloadItem)
async def resume(item_id: str, downloads: Queue) -> AnyDownloadItem:
    """Continue from the partial file (a quarantined file starts again from zero); an
    Ollama pull is pulled again and Ollama continues from its layers."""
    return await downloads.resume(item_id)


@router.post("/{item_id}/cancel", response_model=AnyDownloadItem)
async def cancel(item_id: str, downloads: Queue) -> AnyDownloadItem:
    """Stop and remove the partial file; for an Ollama pull, stop it (Ollama keeps its
    partial layers until it cleans up)."""
    return await downloads.cancel(item_id)
