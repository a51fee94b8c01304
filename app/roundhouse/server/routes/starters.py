"""Routes of the first-run guide: the engines for this machine, the starter models, serving one."""

from __future__ import annotations

from fastapi import APIRouter, Query

from roundhouse.api.engines import EngineId
from roundhouse.api.instances import InstanceInfo
from roundhouse.api.starters import (
    GUIDE_ENGINES,
    ServedStarter,
    ServeStarterRequest,
    SetupGuide,
    StarterList,
)
from roundhouse.core.errors import InvalidInputError
from roundhouse.server.deps import Fitter, Instances, Library, ModelsOpen, Services, TheGateway

router = APIRouter(tags=["setup"])
# Serving waits for the engine to load the model; the gateway's own wait adds this margin.
_SERVE_MARGIN_S = 30.0


def _guided(engine: EngineId) -> EngineId:
    if engine not in GUIDE_ENGINES:
        names = ", ".join(e.value for e in GUIDE_ENGINES)
        raise InvalidInputError(f"The guide sets up {names}; not {engine.value}.")
    return engine


@router.get("/setup", response_model=SetupGuide)
async def setup(services: Services, refresh: bool = False) -> SetupGuide:
    """This machine in one line and the engines the guide can set up, best first, each
    installed or with what installing it costs. Works offline."""
    from roundhouse.core.guide.catalog import load_starters
    from roundhouse.core.guide.steps import setup_guide

    inventory = await services.inventory()
    engines = await services.engines(refresh=refresh)
    return setup_guide(
        inventory,
        engines,
        load_starters(),
        first_run_done=services.settings.ui.first_run_done,
    )


@router.get("/starters", response_model=StarterList, dependencies=[ModelsOpen])
async def starters(
    services: Services,
    library: Library,
    fitter: Fitter,
    engine: EngineId | None = None,
    offline: bool = Query(default=False, description="size from the catalog; ask no Hub"),
) -> StarterList:
    """The starter models for an engine (default: the recommended one), each sized and
    fitted on this machine, then the library's models for it; the largest that fits
    comfortably is recommended. Offline, the starters are sized from the catalog
    and marked as needing a download; only models on this machine can be recommended."""
    from roundhouse.core.guide.catalog import load_starters
    from roundhouse.core.guide.starter_list import starter_list

    inventory = await services.inventory()
    if engine is None:
        engine = await _recommended(services)
    listing = await library.scan()
    return await starter_list(
        load_starters(),
        _guided(engine),
        inventory,
        listing.models,
        fitter.fit,
        offline=offline,
    )


@router.post("/starters/serve", response_model=ServedStarter)
async def serve(
    request: ServeStarterRequest, services: Services, instances: Instances, gateway: TheGateway
) -> ServedStarter:
    """Serve a downloaded model for the guide's first chat: give it a preset (unless it has
    one) and answer once the engine has loaded it; Ollama is attached or started."""
    from roundhouse.core.guide.serve import serve_starter

    _guided(request.engine)
    wait = services.settings.engines.ready_timeout_s + _SERVE_MARGIN_S
    return await serve_starter(gateway, instances, request, wait)


@router.post("/setup/ollama", response_model=InstanceInfo)
async def ollama(services: Services, instances: Instances) -> InstanceInfo:
    """An Ollama that answers: the one serving, one found running (attached), or `ollama
    serve` started now; 404 when Ollama is not installed."""
    from roundhouse.core.guide.serve import ensure_ollama

    wait = services.settings.engines.ready_timeout_s + _SERVE_MARGIN_S
    return await ensure_ollama(instances, wait)


async def _recommended(services: Services) -> EngineId:
    from roundhouse.core.guide.catalog import load_starters
    from roundhouse.core.guide.steps import setup_guide

    guide = setup_guide(
        await services.inventory(),
        await services.engines(),
        load_starters(),
        first_run_done=services.settings.ui.first_run_done,
    )
    return guide.recommended
