"""Build the FastAPI application from the daemon's services."""

from __future__ import annotations

from fastapi import APIRouter, Depends, FastAPI

from roundhouse.api.daemon import API_PREFIX
from roundhouse.server.deps import require_token
from roundhouse.server.problems import install_problem_handlers
from roundhouse.server.routes import daemon, engines, hardware, installs, instances, ollama
from roundhouse.server.routes.gateway import install_gateway
from roundhouse.server.security import HostGuard
from roundhouse.server.services import DaemonServices


def create_app(services: DaemonServices) -> FastAPI:
    app = FastAPI(
        title="Roundhouse daemon",
        version=services.version,
        summary="Control API of the Roundhouse daemon. Every /api/v1 route needs the token.",
    )
    app.state.services = services
    install_problem_handlers(app)

    api = APIRouter(prefix=API_PREFIX, dependencies=[Depends(require_token)])
    api.include_router(daemon.router)
    api.include_router(hardware.router)
    api.include_router(installs.router)
    api.include_router(engines.router)
    api.include_router(instances.router)
    api.include_router(ollama.router)
    app.include_router(api)
    # The OpenAI-compatible gateway, outside /api/v1 and without the daemon token.
    install_gateway(app)

    app.add_middleware(HostGuard)
    return app
