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
from roundhouse.server.deps import Instances, Services, TheGateway

router = APIRouter(tags=["instances"])


@router.get("/instances", response_model=InstanceList)
async def list_instances(instances: Instances) -> InstanceList:
    return InstanceList(instances=instances.all())


@router.post("/instances", response_model=InstanceInfo, status_code=202)
async def start_instance(
    request: StartRequest, services: Services, instances: Instances, gateway: TheGateway
) -> InstanceInfo:
    """Start an engine; it answers at once with status "starting". Poll the instance (or
    its logs) until it is "ready" or "failed". Its model becomes the active one."""
    started = await instances.start(request)
    services.remember_active_model(gateway.model_of(started.id))
    return started


@router.get("/instances/{instance_id}", response_model=InstanceInfo)
async def get_instance(instance_id: str, instances: Instances) -> InstanceInfo:
    return instances.info(instance_id)


@router.post("/instances/scan", response_model=InstanceList)
async def scan_instances(instances: Instances) -> InstanceList:
    """Look for engines running without Roundhouse, and probe added endpoints again. Those
    left out (another user's, listening beyond loopback) are named with why in `left_out`."""
    await instances.scan_external()
    return InstanceList(instances=instances.all(), left_out=instances.left_out())


@router.post("/endpoints", response_model=InstanceInfo, status_code=201)
async def add_endpoint(request: AddEndpointRequest, instances: Instances) -> InstanceInfo:
    """Attach to an OpenAI-compatible server (LM Studio, Jan, another machine); the key goes
    to the OS keyring."""
    return await instances.add_endpoint(request)


@router.put("/instances/{instance_id}/may-serve-presets", response_model=InstanceInfo)
async def allow_presets(
    instance_id: str, request: PresetRouting, instances: Instances
) -> InstanceInfo:
    """Let an engine Roundhouse did not start serve the models saved presets start (or stop
    letting it): until then the gateway starts a preset's model itself rather than send its
    requests there."""
    return await instances.allow_presets(instance_id, request.allowed)


@router.delete("/instances/{instance_id}", response_model=InstanceInfo)
async def stop_instance(
    instance_id: str,
    instances: Instances,
    force: bool = Query(default=False, description="also stop an engine Roundhouse did not start"),
) -> InstanceInfo:
    """Stop the instance gracefully, then its whole process tree; a failed one is dismissed,
    an added endpoint detached. An external engine needs `force` (the user confirmed)."""
    return await instances.stop(instance_id, force=force)


@router.post("/instances/{instance_id}/restart", response_model=InstanceInfo, status_code=202)
async def restart_instance(instance_id: str, instances: Instances) -> InstanceInfo:
    return await instances.restart(instance_id)


@router.get("/instances/{instance_id}/metrics", response_model=InstanceMetrics)
async def instance_metrics(instance_id: str, instances: Instances) -> InstanceMetrics:
    """The engine's own Prometheus metrics that the catalog names (llama.cpp, vLLM, SGLang)."""
    return await instances.metrics(instance_id)


@router.get("/instances/{instance_id}/logs", response_model=InstanceLogs)
async def instance_logs(
    instance_id: str,
    instances: Instances,
    since: int = Query(default=0, ge=0, description="the `next` of the previous answer"),
    limit: int = Query(default=500, ge=1, le=5000),
) -> InstanceLogs:
    return instances.logs(instance_id, since, limit)


@router.get("/presets", response_model=PresetList)
async def list_presets(
    instances: Instances, engine: EngineId | None = None, model: str | None = None
) -> PresetList:
    return PresetList(presets=instances.presets.find(engine, model))


@router.put("/presets", response_model=Preset)
async def save_preset(preset: Preset, instances: Instances) -> Preset:
    """Save options for a model on an engine under a name (replacing one of that name)."""
    return instances.presets.save(preset)


@router.delete("/presets", status_code=204)
async def delete_preset(
    instances: Instances, engine: EngineId, model: str, name: str = "default"
) -> None:
    instances.presets.delete(engine, model, name)
