"""Build the FastAPI application from the daemon's services."""

from __future__ import annotations

from collections.abc import Iterable

from fastapi import APIRouter, Depends, FastAPI

from roundhouse.api.daemon import API_PREFIX
from roundhouse.server.deps import require_token
from roundhouse.server.problems import install_problem_handlers
from roundhouse.server.request_guard import CONTROL_PREFIXES, RequestGuard, origins_for
from roundhouse.server.routes import daemon, engines, hardware, installs, instances, ollama
from roundhouse.server.routes.bench import router as bench_router
from roundhouse.server.routes.chats import router as chats_router
from roundhouse.server.routes.disk import router as disk_router
from roundhouse.server.routes.downloads import router as downloads_router
from roundhouse.server.routes.events import router as events_router
from roundhouse.server.routes.fit import router as fit_router
from roundhouse.server.routes.gateway import install_gateway
from roundhouse.server.routes.gateway_admin import router as gateway_admin_router
from roundhouse.server.routes.gateway_control import router as gateway_control_router
from roundhouse.server.routes.gateway_ollama import GATEWAY_PATHS
from roundhouse.server.routes.hub import router as hub_router
from roundhouse.server.routes.jobs import router as jobs_router
from roundhouse.server.routes.library import router as library_router
from roundhouse.server.routes.metrics import prometheus_router
from roundhouse.server.routes.metrics import router as metrics_router
from roundhouse.server.routes.peers import router as peers_router
from roundhouse.server.routes.rpc_servers import router as rpc_servers_router
from roundhouse.server.routes.starters import router as starters_router
from roundhouse.server.routes.updates import router as updates_router
from roundhouse.server.security import LOOPBACK_HOSTS, GatewayCors, HostGuard, KeyGuard
from roundhouse.server.services import DaemonServices


def create_app(services: DaemonServices, hosts: Iterable[str] = ()) -> FastAPI:
    """The daemon's app; `hosts` are Host names it answers to besides loopback's (the
    address it is bound to, when that is one address beyond loopback)."""
    app = FastAPI(
        title="Roundhouse daemon",
        version=services.version,
        summary="Control API of the Roundhouse daemon. Every /api/v1 route needs the token.",
    )
    app.state.services = services
    install_problem_handlers(app)
    # The OpenAI-compatible gateway, outside /api/v1: open on loopback until a key is set.
    # Mounted first: routes are tried in order, and its requests are the hot path.
    install_gateway(app)

    api = APIRouter(prefix=API_PREFIX, dependencies=[Depends(require_token)])
    api.include_router(daemon.router)
    api.include_router(hardware.router)
    api.include_router(installs.router)
    api.include_router(engines.router)
    api.include_router(instances.router)
    api.include_router(ollama.router)
    api.include_router(chats_router)
    api.include_router(gateway_admin_router)
    api.include_router(gateway_control_router)
    api.include_router(hub_router)
    api.include_router(downloads_router)
    api.include_router(library_router)
    api.include_router(fit_router)
    api.include_router(bench_router)
    api.include_router(metrics_router)
    api.include_router(starters_router)
    api.include_router(disk_router)
    api.include_router(updates_router)
    api.include_router(events_router)
    api.include_router(jobs_router)
    api.include_router(peers_router)
    api.include_router(rpc_servers_router)
    app.include_router(api)
    app.include_router(prometheus_router)

    # Inner first. /v1 and Ollama's /api/... routes need the gateway key once one is set,
    # and every path needs it from a peer beyond loopback; the daemon's token, which the app
    # and the CLI hold, works too.
    # CORS before the key, so a preflight needs none; the request guard before both, so a
    # web page's request (a foreign Origin, a text/plain POST) or an oversize body is
    # refused before anything else looks at it (docs/adr/0022-listener-guards.md).
    origins = origins_for(services)
    app.add_middleware(
        KeyGuard,
        key=lambda: services.gateway_key.current,
        also=lambda: services.token,
        prefix=GATEWAY_PATHS,
    )
    app.add_middleware(GatewayCors, origins=origins, prefix=GATEWAY_PATHS)
    app.add_middleware(RequestGuard, origins=origins, control_prefixes=CONTROL_PREFIXES)
    app.add_middleware(HostGuard, allowed=LOOPBACK_HOSTS | {h.lower() for h in hosts})
    return app
