"""Serve the guide's model for its first chat, through the gateway like any other model.

llama.cpp and MLX: the model gets a "default" preset (unless it has one), so the gateway can
start it now and again later on request; then the gateway serves it, which waits until the
engine has loaded it. Ollama: the Ollama that runs is used (attached when found), else
Roundhouse starts `ollama serve`.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from roundhouse.api.engines import EngineId, InstanceOptions
from roundhouse.api.instances import (
    InstanceInfo,
    InstanceOrigin,
    InstanceStatus,
    Preset,
    StartRequest,
)
from roundhouse.api.starters import ServedStarter, ServeStarterRequest
from roundhouse.core.errors import NotFoundError, RoundhouseError
from roundhouse.core.gateway.errors import GatewayError
from roundhouse.core.gateway.gateway import Gateway
from roundhouse.core.gateway.library import DEFAULT_PRESET, listed_id
from roundhouse.core.guide.choice import STARTER_CONTEXT
from roundhouse.core.instances.service import InstanceService

POLL_S = 0.1


class ServeError(RoundhouseError):
    """The model could not be served: the gateway's or the engine's reason, in words."""

    title = "The model did not start"
    status = 503


def starter_preset(request: ServeStarterRequest) -> Preset:
    """The options the guide starts a model with: one request at a time, a 4k context."""
    if request.engine == EngineId.LLAMA_CPP:
        options = InstanceOptions(
            model=request.model, ctx_size=request.ctx_size or STARTER_CONTEXT, parallel=1
        )
    else:
        # mlx_lm.server sizes its cache as it goes: it takes no context option.
        options = InstanceOptions(model=request.model)
    return Preset(engine=request.engine, model=request.model, name=DEFAULT_PRESET, options=options)


async def serve_starter(
    gateway: Gateway, instances: InstanceService, request: ServeStarterRequest, wait_s: float
) -> ServedStarter:
    """A ready instance serving the model, and the name to chat with it by."""
    if request.engine == EngineId.OLLAMA:
        info = await ensure_ollama(instances, wait_s)
        if info.origin == InstanceOrigin.STARTED and request.model not in info.models:
            # An Ollama we started lists its models once, when ready: a model pulled since
            # is served only after a restart (a second or two).
            restarted = await instances.restart(info.id)
            await _wait_ready(instances, restarted.id, wait_s)
        name = request.model
    else:
        if not await asyncio.to_thread(Path(request.model).exists):
            raise NotFoundError(
                f"There is no {request.model}: download the model first, or choose one that "
                "is on this machine."
            )
        if not instances.presets.find(request.engine, request.model):
            instances.presets.save(starter_preset(request))
        name = listed_id(request.engine, request.model, None)
    try:
        info = await gateway.serve(name if request.engine == EngineId.OLLAMA else request.model)
    except GatewayError as exc:
        raise ServeError(exc.message) from exc
    return ServedStarter(instance=info, model=name)


async def ensure_ollama(instances: InstanceService, wait_s: float) -> InstanceInfo:
    """An Ollama that answers: one serving already, one found running, or one started now.

    Raises NotFoundError (in the instance service's words) when Ollama is not installed."""
    ready = _ready_ollama(instances.all(memory=False))
    if ready is not None:
        return ready
    await instances.scan_external()
    ready = _ready_ollama(instances.all(memory=False))
    if ready is not None:
        return ready
    started = await instances.start(StartRequest(engine=EngineId.OLLAMA))
    return await _wait_ready(instances, started.id, wait_s)


def _ready_ollama(listed: list[InstanceInfo]) -> InstanceInfo | None:
    found = [i for i in listed if i.engine == EngineId.OLLAMA and i.status == InstanceStatus.READY]
    found.sort(key=lambda i: i.origin != InstanceOrigin.STARTED)
    return found[0] if found else None


async def _wait_ready(instances: InstanceService, instance_id: str, wait_s: float) -> InstanceInfo:
    deadline = time.monotonic() + wait_s
    while True:
        info = instances.info(instance_id, memory=False)
        if info.status == InstanceStatus.READY:
            return info
        if info.status == InstanceStatus.FAILED:
            raise ServeError(info.error or f"The {info.engine.value} instance failed to start.")
        if time.monotonic() > deadline:
            raise ServeError(
                f"The {info.engine.value} instance {info.id} is still {info.status.value} after "
                f"{wait_s:.0f} s: see its log with `roundhouse engines logs {info.id}`."
            )
        await asyncio.sleep(POLL_S)
