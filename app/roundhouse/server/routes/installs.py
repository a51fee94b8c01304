"""Routes of engine installs: jobs (start, follow, cancel) and llama.cpp builds (switch, remove)."""

from __future__ import annotations

from collections.abc import AsyncIterator

from fastapi import APIRouter, Query
from fastapi.sse import EventSourceResponse, ServerSentEvent
from pydantic import BaseModel, ConfigDict

from roundhouse.api.engines import EngineId
from roundhouse.api.installs import (
    BuildList,
    InstalledBuild,
    InstallJob,
    InstallJobList,
    InstallRequest,
    JobState,
)
from roundhouse.core.engines.install.managed import ManagedBuilds
from roundhouse.core.engines.install.venvs import remove_python_engine
from roundhouse.core.errors import InvalidInputError
from roundhouse.server.deps import Installs, Services
from roundhouse.server.streams import event

router = APIRouter(tags=["installs"])

# A follower hears at least this often, so a dead client is noticed.
STREAM_HEARTBEAT_S = 15.0


class SwitchRequest(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    tag: str


@router.post("/engines/{engine}/install", response_model=InstallJob, status_code=202)
async def install(engine: EngineId, request: InstallRequest, installs: Installs) -> InstallJob:
    """Install an engine in the background: llama.cpp's official build for this machine, or
    mlx-lm / vLLM / SGLang in a virtual environment of their own. Follow the job."""
    return installs.start(engine, request)


@router.get("/installs", response_model=InstallJobList)
async def list_jobs(installs: Installs) -> InstallJobList:
    return InstallJobList(jobs=installs.all())


@router.get("/installs/{job_id}", response_model=InstallJob)
async def get_job(job_id: str, installs: Installs) -> InstallJob:
    return installs.get(job_id)


@router.delete("/installs/{job_id}", response_model=InstallJob)
async def cancel_job(job_id: str, installs: Installs) -> InstallJob:
    """Cancel a running install; a llama.cpp download resumes at the next install."""
    return await installs.cancel(job_id)


@router.get("/installs/{job_id}/stream", response_class=EventSourceResponse)
async def follow_job(
    job_id: str, services: Services, installs: Installs
) -> AsyncIterator[ServerSentEvent]:
    """The job as a `job` event at each change, until it ends."""
    seen = installs.version(job_id)
    job = installs.get(job_id)
    yield event("job", job)
    while job.state == JobState.RUNNING and not services.stopping.is_set():
        job, seen = await installs.wait_change(job_id, seen, STREAM_HEARTBEAT_S)
        yield event("job", job)


def _builds(services: Services) -> ManagedBuilds:
    return ManagedBuilds(services.home.data_dir / "engines")


def _build_list(builds: ManagedBuilds) -> BuildList:
    return BuildList(
        current=builds.current_tag(), builds=builds.installed(), partials=builds.partials()
    )


@router.get("/engines/llama.cpp/builds", response_model=BuildList)
async def list_builds(services: Services) -> BuildList:
    return _build_list(_builds(services))


@router.put("/engines/llama.cpp/builds/current", response_model=InstalledBuild)
async def switch_build(request: SwitchRequest, services: Services) -> InstalledBuild:
    """Make an installed build the one llama.cpp instances start with."""
    build = _builds(services).switch(request.tag)
    await services.engines(refresh=True)
    return build


@router.delete("/engines/llama.cpp/builds/{tag}", response_model=BuildList)
async def remove_build(
    tag: str,
    services: Services,
    force: bool = Query(default=False, description="also remove the current build"),
) -> BuildList:
    builds = _builds(services)
    await builds.remove(tag, force=force)
    await services.engines(refresh=True)
    return _build_list(builds)


@router.delete("/engines/{engine}/venv", status_code=204)
async def remove_venv(engine: EngineId, services: Services) -> None:
    """Remove the virtual environment Roundhouse made for mlx-lm, vLLM or SGLang."""
    if engine not in (EngineId.MLX, EngineId.VLLM, EngineId.SGLANG):
        raise InvalidInputError(f"Roundhouse makes no virtual environment for {engine.value}.")
    await remove_python_engine(engine, services.home.data_dir / "engines")
    await services.engines(refresh=True)
