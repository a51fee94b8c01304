"""Routes of engine instances: start, list, logs, restart, stop; and presets per model."""

from __future__ import annotations

from fastapi import APIRouter, Query

from roundhouse.api.engines import EngineId
from roundhouse.api.instances import (
    AddEndpointRequest,
    InstanceInfo,
    InstanceList,
    InstanceLogs,
    InstanceMetrics,
    Preset,
    PresetList,
    PresetRouting,
    StartRequest,
)
from roundhouse.server.deps import Services

router = APIRouter(tags=["instances"])


@router.get("/instances", response_model=InstanceList)
async def list_instances(services: Services) -> InstanceList:
    return InstanceList(instances=services.instance_service().all())


@router.post("/instances", response_model=InstanceInfo, status_code=202)
async def start_instance(request: StartRequest, services: Services) -> InstanceInfo:
    """Start an engine; it answers at once with status "starting". Poll the instance (or
    its logs) until it is "ready" or "failed". Its model becomes the active one."""
    started = await services.instance_service().start(request)
    services.remember_active_model(services.gateway().model_of(started.id))
    return started


@router.get("/instances/{instance_id}", response_model=InstanceInfo)
async def get_instance(instance_id: str, services: Services) -> InstanceInfo:
    return services.instance_service().info(instance_id)


@router.post("/instances/scan", response_model=InstanceList)
async def scan_instances(services: Services) -> InstanceList:
    """Look for engines running without Roundhouse, and probe added endpoints again. Those
    left out (another user's, listening beyond loopback) are named with why in `left_out`."""
    service = services.instance_service()
    await service.scan_external()
    return InstanceList(instances=service.all(), left_out=service.left_out())


@router.post("/endpoints", response_model=InstanceInfo, status_code=201)
async def add_endpoint(request: AddEndpointRequest, services: Services) -> InstanceInfo:
    """Attach to an OpenAI-compatible server (LM Studio, Jan, another machine); the key goes
    to the OS keyring."""
    return await services.instance_service().add_endpoint(request)


@router.put("/instances/{instance_id}/may-serve-presets", response_model=InstanceInfo)
async def allow_presets(
    instance_id: str, request: PresetRouting, services: Services
) -> InstanceInfo:
    """Let an engine Roundhouse did not start serve the models saved presets start (or stop
    letting it): until then the gateway starts a preset's model itself rather than send its
    requests there."""
    return await services.instance_service().allow_presets(instance_id, request.allowed)


@router.delete("/instances/{instance_id}", response_model=InstanceInfo)
async def stop_instance(
    instance_id: str,
    services: Services,
    force: bool = Query(default=False, description="also stop an engine Roundhouse did not start"),
) -> InstanceInfo:
    """Stop the instance gracefully, then its whole process tree; a failed one is dismissed,
    an added endpoint detached. An external engine needs `force` (the user confirmed)."""
    return await services.instance_service().stop(instance_id, force=force)


@router.post("/instances/{instance_id}/restart", response_model=InstanceInfo, status_code=202)
async def restart_instance(instance_id: str, services: Services) -> InstanceInfo:
    return await services.instance_service().restart(instance_id)


@router.get("/instances/{instance_id}/metrics", response_model=InstanceMetrics)
async def instance_metrics(instance_id: str, services: Services) -> InstanceMetrics:
    """The engine's own Prometheus metrics that the catalog names (llama.cpp, vLLM, SGLang)."""
    return await services.instance_service().metrics(instance_id)


@router.get("/instances/{instance_id}/logs", response_model=InstanceLogs)
async def instance_logs(
    instance_id: str,
    services: Services,
    since: int = Query(default=0, ge=0, description="the `next` of the previous answer"),
    limit: int = Query(default=500, ge=1, le=5000),
) -> InstanceLogs:
    return services.instance_service().logs(instance_id, since, limit)


@router.get("/presets", response_model=PresetList)
async def list_presets(
    services: Services, engine: EngineId | None = None, model: str | None = None
) -> PresetList:
    return PresetList(presets=services.instance_service().presets.find(engine, model))


@router.put("/presets", response_model=Preset)
async def save_preset(preset: Preset, services: Services) -> Preset:
    """Save options for a model on an engine under a name (replacing one of that name)."""
    return services.instance_service().presets.save(preset)


@router.delete("/presets", status_code=204)
async def delete_preset(
    services: Services, engine: EngineId, model: str, name: str = "default"
) -> None:
    services.instance_service().presets.delete(engine, model, name)
