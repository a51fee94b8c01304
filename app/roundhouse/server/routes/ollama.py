"""Routes to the Ollama Roundhouse serves or attached to: models, pull with progress, show,
delete, load and unload, and what is loaded."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator

from fastapi import APIRouter, Query
from fastapi.sse import EventSourceResponse, ServerSentEvent

from roundhouse.api.daemon import Problem
from roundhouse.api.engines import EngineId
from roundhouse.api.instances import InstanceStatus
from roundhouse.api.ollama import (
    OllamaLoadedList,
    OllamaLoadRequest,
    OllamaModelList,
    OllamaModelRef,
    OllamaPullRequest,
    OllamaShownModel,
)
from roundhouse.core.engines.ollama_api import OllamaClient, ollama_base_url
from roundhouse.core.errors import InvalidInputError, RoundhouseError
from roundhouse.core.instances.service import InstanceService
from roundhouse.server.deps import Instances, Services
from roundhouse.server.streams import event, until_stopped

router = APIRouter(prefix="/ollama", tags=["ollama"])

InstanceQuery = Query(
    default=None, description="the Ollama instance to use; default: the first one serving"
)


def ollama_url_for(instances: InstanceService, instance: str | None) -> str:
    """The chosen Ollama instance, else one that serves, else OLLAMA_HOST or its default."""
    if instance is not None:
        info = instances.info(instance)
        if info.engine != EngineId.OLLAMA:
            raise InvalidInputError(f"Instance {instance} is {info.engine.value}, not Ollama.")
        return info.url
    for info in instances.all():
        if info.engine == EngineId.OLLAMA and info.status == InstanceStatus.READY:
            return info.url
    return ollama_base_url(os.environ.get("OLLAMA_HOST"))


@router.get("/models", response_model=OllamaModelList)
async def list_models(
    instances: Instances, instance: str | None = InstanceQuery
) -> OllamaModelList:
    async with OllamaClient(ollama_url_for(instances, instance)) as ollama:
        return OllamaModelList(base_url=ollama.base_url, models=await ollama.list_models())


@router.get("/ps", response_model=OllamaLoadedList)
async def loaded(instances: Instances, instance: str | None = InstanceQuery) -> OllamaLoadedList:
    async with OllamaClient(ollama_url_for(instances, instance)) as ollama:
        return OllamaLoadedList(base_url=ollama.base_url, models=await ollama.loaded_models())


@router.get("/show", response_model=OllamaShownModel)
async def show(
    instances: Instances, model: str, instance: str | None = InstanceQuery
) -> OllamaShownModel:
    async with OllamaClient(ollama_url_for(instances, instance)) as ollama:
        return await ollama.show(model)


@router.post("/delete", status_code=204)
async def delete(
    request: OllamaModelRef, instances: Instances, instance: str | None = InstanceQuery
) -> None:
    async with OllamaClient(ollama_url_for(instances, instance)) as ollama:
        await ollama.delete(request.model)


@router.post("/load", status_code=204)
async def load(
    request: OllamaLoadRequest, instances: Instances, instance: str | None = InstanceQuery
) -> None:
    async with OllamaClient(ollama_url_for(instances, instance)) as ollama:
        await ollama.load(
            request.model, keep_alive=request.keep_alive, context_length=request.context_length
        )


@router.post("/unload", status_code=204)
async def unload(
    request: OllamaModelRef, instances: Instances, instance: str | None = InstanceQuery
) -> None:
    async with OllamaClient(ollama_url_for(instances, instance)) as ollama:
        await ollama.unload(request.model)


@router.post("/pull", response_class=EventSourceResponse)
async def pull(
    request: OllamaPullRequest,
    services: Services,
    instances: Instances,
    instance: str | None = InstanceQuery,
) -> AsyncIterator[ServerSentEvent]:
    """Each progress line as a `progress` event; a failure as an `error` event (a problem).

    The pull runs while the stream is open: closing it cancels the pull (Ollama keeps the
    layers it has, and a later pull resumes).
    """
    base = ollama_url_for(instances, instance)
    async with OllamaClient(base) as ollama:
        steps = ollama.pull_stream(request.model)
        try:
            async for step in until_stopped(steps, services.stopping):
                yield event("progress", step)
        except RoundhouseError as exc:
            problem = Problem(title=exc.title, status=exc.status, detail=exc.detail)
            yield event("error", problem)
