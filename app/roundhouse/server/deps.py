"""FastAPI dependencies: each of the daemon's services by name, and the token check.

A route names what it uses (`instances: Instances`, `library: Library`; the gateway is
`TheGateway`, `Gateway` being its class); the services were all built at start by the
composition root (server/compose.py). The model services open beside the daemon's start:
the dependencies that give one wait for that.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from fastapi import Depends, HTTPException, Request

from roundhouse.core.bench.ab import AbService
from roundhouse.core.bench.service import BenchService
from roundhouse.core.chat.store import ChatStore
from roundhouse.core.engines.install.jobs import InstallJobs
from roundhouse.core.gateway.gateway import Gateway
from roundhouse.core.infra.jobs import JobBoard
from roundhouse.core.instances.service import InstanceService
from roundhouse.core.metrics.service import MetricsService
from roundhouse.core.models.queue import DownloadQueue
from roundhouse.core.system.updates import UpdateChecker
from roundhouse.server.feed_wiring import ChangeFeed
from roundhouse.server.models_wiring import ModelServices
from roundhouse.server.security import token_matches
from roundhouse.server.services import DaemonServices

if TYPE_CHECKING:
    # Named in quotes below: FastAPI needs only the dependency, and these modules load in a
    # thread beside the daemon's start (server/models_wiring.py).
    from roundhouse.core.models.downloads.service import DownloadService
    from roundhouse.core.models.fitter import ModelFitter
    from roundhouse.core.models.hub.service import HubService
    from roundhouse.core.models.library.service import LibraryService
    from roundhouse.core.models.ollama_pulls.service import OllamaPulls

# async, like every dependency here: FastAPI runs a plain `def` in its thread pool, a thread
# hop per request for what is one attribute read.


async def get_services(request: Request) -> DaemonServices:
    services: DaemonServices = request.app.state.services
    return services


Services = Annotated[DaemonServices, Depends(get_services)]


async def get_instances(services: Services) -> InstanceService:
    return services.instances


async def get_installs(services: Services) -> InstallJobs:
    return services.installs


async def get_chats(services: Services) -> ChatStore:
    return services.chats


async def get_gateway(services: Services) -> Gateway:
    return services.gateway


async def get_jobs(services: Services) -> JobBoard:
    return services.jobs


async def get_bench(services: Services) -> BenchService:
    return services.bench


async def get_ab(services: Services) -> AbService:
    return services.ab


async def get_metrics(services: Services) -> MetricsService:
    return services.metrics


async def get_updates(services: Services) -> UpdateChecker:
    return services.updates


Instances = Annotated[InstanceService, Depends(get_instances)]
Installs = Annotated[InstallJobs, Depends(get_installs)]
Chats = Annotated[ChatStore, Depends(get_chats)]
TheGateway = Annotated[Gateway, Depends(get_gateway)]
Bench = Annotated[BenchService, Depends(get_bench)]
Jobs = Annotated[JobBoard, Depends(get_jobs)]
Ab = Annotated[AbService, Depends(get_ab)]
Metrics = Annotated[MetricsService, Depends(get_metrics)]
Updates = Annotated[UpdateChecker, Depends(get_updates)]


async def get_feed(services: Services) -> ChangeFeed:
    return services.feed


Feed = Annotated[ChangeFeed, Depends(get_feed)]


async def get_models(services: Services) -> ModelServices:
    """The model services, once open (at once, after the daemon's start)."""
    return await services.models.ready()


Models = Annotated[ModelServices, Depends(get_models)]


async def get_hub(models: Models) -> HubService:
    return models.hub


async def get_library(models: Models) -> LibraryService:
    return models.library


async def get_fitter(models: Models) -> ModelFitter:
    return models.fitter


async def get_downloads(models: Models) -> DownloadService:
    """The download queue; 503 with the reason when it could not open."""
    return models.open_downloads()


async def get_pulls(models: Models) -> OllamaPulls:
    """The queue of Ollama pulls; 503 with the reason when it could not open."""
    return models.open_pulls()


async def get_queue(models: Models) -> DownloadQueue:
    """The queue users see: the files and the Ollama pulls as one."""
    return models.queue


Hub = Annotated["HubService", Depends(get_hub)]
Library = Annotated["LibraryService", Depends(get_library)]
Fitter = Annotated["ModelFitter", Depends(get_fitter)]
Downloads = Annotated["DownloadService", Depends(get_downloads)]
Pulls = Annotated["OllamaPulls", Depends(get_pulls)]
Queue = Annotated[DownloadQueue, Depends(get_queue)]


async def require_token(request: Request, services: Services) -> None:
    if not token_matches(request.headers.get("authorization"), services.token):
        raise HTTPException(
            status_code=401,
            detail="A valid token is required: send 'Authorization: Bearer <token>' with the "
            f"token from {services.home.token_file}.",
            headers={"WWW-Authenticate": "Bearer"},
        )


# Routes of the model services wait until those are open (just after the start).
ModelsOpen = Depends(get_models)
