"""Routes of the model download queue: add, list, follow, pause, resume, cancel.

The queue holds files from the Hub and Ollama pulls; an id starting with 'ollama-' names a
pull, which the same item routes pause, resume and cancel.
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
    is_ollama_pull,
)
from roundhouse.core.models.ollama_pulls.follow import Changing, combine, follow_queue
from roundhouse.server.deps import Downloads, Instances, Models, ModelsOpen, Pulls, Services
from roundhouse.server.models_wiring import ModelServices
from roundhouse.server.routes.ollama import ollama_url_for
from roundhouse.server.streams import event, until_stopped

router = APIRouter(prefix="/downloads", tags=["downloads"], dependencies=[ModelsOpen])


def _view(models: ModelServices) -> DownloadQueueView:
    view = models.open_downloads().view()
    pulls = models.pulls_if_open()
    return combine(view, pulls.items()) if pulls is not None else view


@router.get("", response_model=DownloadQueueView)
async def queue(models: Models) -> DownloadQueueView:
    """Every download, the oldest first, with bytes, speed, ETA and state; Ollama pulls
    under `ollama`."""
    return _view(models)


@router.post("", response_model=DownloadQueueView, status_code=202)
async def add(request: DownloadRequest, models: Models, downloads: Downloads) -> DownloadQueueView:
    """Queue files of a Hub repository (paths or a glob). Refused when the disk has less
    free than 1.2x what the whole queue still has to fetch."""
    await downloads.add(request)
    return _view(models)


@router.post("/ollama", response_model=OllamaPullItem, status_code=202)
async def add_ollama(
    request: OllamaDownloadRequest, instances: Instances, pulls: Pulls
) -> OllamaPullItem:
    """Queue a pull through Ollama's API: the instance named, else an Ollama serving, else
    OLLAMA_HOST's. A pull of that model there that has not finished is returned."""
    base_url = ollama_url_for(instances, request.instance)
    return await pulls.add(request.model, base_url, request.instance)


@router.get("/stream", response_class=EventSourceResponse)
async def follow(
    services: Services, models: Models, downloads: Downloads
) -> AsyncIterator[ServerSentEvent]:
    """The queue as a `queue` event now and after each change (at most 4 per second)."""
    sources: list[Changing] = [downloads]
    pulls = models.pulls_if_open()
    if pulls is not None:
        sources.append(pulls)
    views = follow_queue(lambda: _view(models), sources)
    async for view in until_stopped(views, services.stopping):
        yield event("queue", view)


@router.post("/clear", response_model=DownloadQueueView)
async def clear_finished(models: Models, downloads: Downloads) -> DownloadQueueView:
    """Drop finished items (done and cancelled) from the list; files and models stay."""
    await downloads.clear_finished()
    pulls = models.pulls_if_open()
    if pulls is not None:
        await pulls.clear_finished()
    return _view(models)


@router.get("/{item_id}", response_model=AnyDownloadItem)
async def item(item_id: str, models: Models) -> AnyDownloadItem:
    if is_ollama_pull(item_id):
        return models.open_pulls().get(item_id)
    return models.open_downloads().get(item_id)


@router.post("/{item_id}/pause", response_model=AnyDownloadItem)
async def pause(item_id: str, models: Models) -> AnyDownloadItem:
    """Stop the transfer; an Ollama pull's stream ends and Ollama keeps its layers."""
    if is_ollama_pull(item_id):
        return await models.open_pulls().pause(item_id)
    return await models.open_downloads().pause(item_id)


@router.post("/{item_id}/resume", response_model=AnyDownloadItem)
async def resume(item_id: str, models: Models) -> AnyDownloadItem:
    """Continue from the partial file (a quarantined file starts again from zero); an
    Ollama pull is pulled again and Ollama continues from its layers."""
    if is_ollama_pull(item_id):
        return await models.open_pulls().resume(item_id)
    return await models.open_downloads().resume(item_id)


@router.post("/{item_id}/cancel", response_model=AnyDownloadItem)
async def cancel(item_id: str, models: Models) -> AnyDownloadItem:
    """Stop and remove the partial file; for an Ollama pull, stop it (Ollama keeps its
    partial layers until it cleans up)."""
    if is_ollama_pull(item_id):
        return await models.open_pulls().cancel(item_id)
    return await models.open_downloads().cancel(item_id)
