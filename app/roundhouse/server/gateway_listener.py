"""The gateway's other listeners: its routes alone (/v1, Ollama's /api/...), on the address
the settings name for other apps, and on Ollama's own port for apps that cannot change it.

It shares the daemon's services (the same Gateway, instances and key) and runs as a second
uvicorn server in the daemon's loop. It starts, stops and moves when the settings or the
key change; what keeps it from listening (no key beyond loopback, a taken port) is kept as
words in its status, never raised: the daemon itself keeps serving.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass

import httpx
from fastapi import FastAPI

from roundhouse.api.gateway import GatewayListener
from roundhouse.core.gateway.key import GatewayKeyStore
from roundhouse.server.http_limits import listener_config
from roundhouse.server.listener_run import ListenerRun
from roundhouse.server.problems import install_problem_handlers
from roundhouse.server.request_guard import RequestGuard, origins_for
from roundhouse.server.routes.gateway import GATEWAY_PREFIX, install_gateway
from roundhouse.server.routes.gateway_ollama import GATEWAY_PATHS, root_router
from roundhouse.server.security import (
    GatewayCors,
    HostGuard,
    KeyGuard,
    is_loopback,
    machine_hosts,
)
from roundhouse.server.services import DaemonServices, DaemonState

log = logging.getLogger(__name__)

NEEDS_KEY = (
    "Not listening: an address beyond loopback needs the gateway API key. Set one (Generate "
    "on the Settings page, or `roundhouse gateway key --generate`) and it starts."
)


def create_gateway_app(services: DaemonServices, allowed_hosts: frozenset[str]) -> FastAPI:
    """An app with the gateway's routes alone (/v1, Ollama's /api/...): no control API, no
    docs, no OpenAPI schema."""
    app = FastAPI(title="Roundhouse gateway", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.services = services
    install_problem_handlers(app)
    install_gateway(app)
    # Added inner first: Host check, then the request guard (Origin, JSON, body size), then
    # CORS (so a preflight needs no key), then the key, which a peer beyond loopback needs
    # even where the listener itself is on loopback (behind a local proxy that says so).
    origins = origins_for(services)
    app.add_middleware(KeyGuard, key=lambda: services.gateway_key.current)
    app.add_middleware(GatewayCors, origins=origins, prefix=GATEWAY_PATHS)
    app.add_middleware(RequestGuard, origins=origins)
    app.add_middleware(
        HostGuard,
        allowed=allowed_hosts,
        answers="the gateway answers only to this machine's names and addresses and to "
        "gateway.allowed_hosts",
    )
    return app


@dataclass(frozen=True)
class _Plan:
    host: str
    port: int
    allowed_hosts: tuple[str, ...]


def _url(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}{GATEWAY_PREFIX}"


class SecondListener:
    """Follows the settings' `gateway` and the key; `apply()` after either changes."""

    # The setting that names the port: said when the port is taken.
    port_setting = "gateway.listen_port"

    def __init__(
        self,
        state: DaemonState,
        key: GatewayKeyStore,
        app: Callable[[frozenset[str]], FastAPI],
    ) -> None:
        self._state = state
        self._key = key
        # Makes the gateway's app over the daemon's services, for the hosts it answers to.
        self._make_app = app
        self._plan: _Plan | None = None
        # Why it does not listen before it binds (no key, the port's occupant); the run
        # says what binding and serving did.
        self._error: str | None = None
        self._run = ListenerRun("Gateway listener", self.port_setting)
        self._lock = asyncio.Lock()

    def status(self) -> GatewayListener | None:
        """None when no second address is set."""
        if self._plan is None:
            return None
        return GatewayListener(
            url=self._url(self._plan.host, self._plan.port),
            needs_key=self._key.is_set,
            error=self._error or self._run.error,
        )

    def _url(self, host: str, port: int) -> str:
        return _url(host, port)

    async def _occupied(self, plan: _Plan) -> str | None:
        """Why not to bind `plan` although the port may be free to bind; None: go on."""
        return None

    def _app(self, plan: _Plan) -> FastAPI:
        return self._make_app(machine_hosts(plan.host, plan.allowed_hosts))

    def _wanted(self) -> _Plan | None:
        gateway = self._state.settings.gateway
        host = (gateway.listen_host or "").strip()
        if not host:
            return None
        return _Plan(host, gateway.listen_port, tuple(gateway.allowed_hosts))

    async def apply(self) -> None:
        """Listen as the settings and the key say now: unchanged, moved, started or stopped."""
        async with self._lock:
            plan = self._wanted()
            keyless = plan is not None and not is_loopback(plan.host)
            keyless = keyless and not self._key.is_set
            if plan == self._plan and self._run.running() and not keyless:
                return
            await self._run.stop()
            self._plan, self._error = plan, None
            if plan is None:
                return
            if keyless:
                self._error = NEEDS_KEY
                if self._key.error:
                    self._error += f" (The keyring: {self._key.error})"
                log.warning("Gateway on %s:%d: %s", plan.host, plan.port, self._error)
                return
            self._error = await self._occupied(plan)
            if self._error is not None:
                log.warning("Gateway listener not started: %s", self._error)
                return
            self._start(plan)

    def _start(self, plan: _Plan) -> None:
        if self._run.start(
            plan.host, plan.port, lambda: listener_config(self._app(plan), plan.host)
        ):
            assert self._run.bound is not None
            log.info("Gateway also serving %s", self._url(*self._run.bound))

    async def close(self) -> None:
        """Stop listening, with the daemon."""
        async with self._lock:
            await self._run.stop()


OLLAMA_HOST = "127.0.0.1"
# How long the port's present occupant has to say what it is.
_PROBE_TIMEOUT_S = 1.0


class OllamaPortListener(SecondListener):
    """Ollama's own address (127.0.0.1:11434, `gateway.ollama_port`), for apps that cannot be
    pointed elsewhere: the gateway's routes there, Ollama's API among them, while
    `gateway.ollama_port_enabled` is on. Loopback only. While Ollama itself (or anything
    else) holds the port, it does not listen, and its status says why in words."""

    port_setting = "gateway.ollama_port"

    def _url(self, host: str, port: int) -> str:
        return f"http://{host}:{port}"

    def _wanted(self) -> _Plan | None:
        gateway = self._state.settings.gateway
        if not gateway.ollama_port_enabled:
            return None
        return _Plan(OLLAMA_HOST, gateway.ollama_port, tuple(gateway.allowed_hosts))

    def _app(self, plan: _Plan) -> FastAPI:
        app = super()._app(plan)
        app.include_router(root_router)
        return app

    async def _occupied(self, plan: _Plan) -> str | None:
        """Ollama answering on the port (where a wildcard bind of its own would let ours
        succeed beside it on some systems, and take half its clients)."""
        url = f"http://{plan.host}:{plan.port}/api/version"
        try:
            async with httpx.AsyncClient(timeout=_PROBE_TIMEOUT_S, trust_env=False) as client:
                reply = await client.get(url)
            answer = reply.json() if reply.status_code == 200 else None
        except (httpx.HTTPError, ValueError):
            return None  # nothing answers as Ollama does: the bind says the rest
        if not isinstance(answer, dict):
            return None
        version = answer.get("version")
        if not isinstance(version, str) or "roundhouse" in answer:
            return None  # not Ollama (a Roundhouse's own listener): the bind says whose
        return (
            f"Not listening: Ollama {version} itself holds {plan.host}:{plan.port}. Quit "
            "Ollama (or move it with OLLAMA_HOST), then turn this setting off and on again; "
            "or point the app at Roundhouse's own address."
        )
