"""The peer listener: the address paired machines reach this daemon at, over TLS with its
identity. It serves the gateway's routes (a peer's key accepted beside the gateway key) and
/peer/v1 (pairing, state, start and stop, unpairing, the change feed), nothing else: no
control API, so a peer's key reaches neither the settings nor the chats.

A third uvicorn server in the daemon's loop, off unless `peers.listen_host` is set; it
starts, stops and moves when the settings change, and what keeps it from listening is kept
as words in its status, never raised.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass

import uvicorn
from fastapi import FastAPI
from starlette.types import ASGIApp, Receive, Scope, Send

from roundhouse.api.peers import PeerListenerStatus
from roundhouse.core.errors import RoundhouseError
from roundhouse.core.peers.client import PEER_PREFIX
from roundhouse.core.peers.discovery import Advertiser, service_info
from roundhouse.server.http_limits import listener_config
from roundhouse.server.listener_run import ListenerRun
from roundhouse.server.peer_service import PeerService, reachable_addresses
from roundhouse.server.problems import install_problem_handlers, problem_response
from roundhouse.server.request_guard import RequestGuard
from roundhouse.server.routes.gateway import install_gateway
from roundhouse.server.routes.peer_api import PAIR_PATH
from roundhouse.server.routes.peer_api import router as peer_router
from roundhouse.server.routes.peer_metrics import router as peer_metrics_router
from roundhouse.server.routes.peer_nodes import router as peer_nodes_router
from roundhouse.server.routes.peer_rpc import router as peer_rpc_router
from roundhouse.server.security import (
    ANTHROPIC_PREFIX,
    HostGuard,
    anthropic_auth_error,
    is_ollama_path,
    key_accepted,
    machine_hosts,
    ollama_auth_error,
    openai_auth_error,
    presented_keys,
    under_prefix,
)
from roundhouse.server.services import DaemonServices, DaemonState

log = logging.getLogger(__name__)

# What a stop or a move waits for open requests before it cuts them.
_GRACE_S = 2

# Where a route finds the paired machine that made the request (request.state.peer).
PEER_STATE = "peer"


class NoBrowserGuard:
    """Refuse every request a browser marks as a page's (Origin, Sec-Fetch-Site): paired
    daemons never send them, so no web page on the LAN drives a peer's models."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            for name, _ in scope["headers"]:
                if name in (b"origin", b"sec-fetch-site"):
                    if scope["type"] == "websocket":
                        await send({"type": "websocket.close", "code": 1008})
                        return
                    refusal = problem_response(
                        403,
                        "Forbidden origin",
                        "The peer listener answers paired Roundhouse daemons only, never a "
                        "web page.",
                    )
                    await refusal(scope, receive, send)
                    return
        await self.app(scope, receive, send)


class PeerKeyGuard:
    """Every request needs a paired machine's key, except the pairing request itself (the
    code is its credential); the gateway's own key works on the gateway's routes too. The
    peer found is put in the request's state for the routes."""

    def __init__(self, app: ASGIApp, peers: PeerService, gateway_key: Callable[[], str | None]):
        self.app = app
        self.peers = peers
        self.gateway_key = gateway_key

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        path = scope["path"]
        if path == PAIR_PATH and scope.get("method") == "POST":
            await self.app(scope, receive, send)
            return
        offered = presented_keys(scope)
        for value in offered:
            peer = self.peers.caller(value.decode("latin-1"))
            if peer is not None:
                scope.setdefault("state", {})[PEER_STATE] = peer.id
                await self.app(scope, receive, send)
                return
        peer_path = under_prefix(path, PEER_PREFIX)
        if not peer_path and key_accepted(offered, (self.gateway_key() or "",)):
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        message = (
            "This is a Roundhouse peer listener: it needs the key of a paired machine"
            + ("" if peer_path else " or the gateway key")
            + ". Pair the machines (`roundhouse peers code` on one, `roundhouse peers add` on "
            "the other)."
        )
        if peer_path:
            await problem_response(401, "Key refused", message)(scope, receive, send)
        elif under_prefix(path, ANTHROPIC_PREFIX):
            await anthropic_auth_error(message)(scope, receive, send)
        elif is_ollama_path(path):
            await ollama_auth_error(message)(scope, receive, send)
        else:
            await openai_auth_error(message)(scope, receive, send)


def create_peer_app(services: DaemonServices, allowed_hosts: frozenset[str]) -> FastAPI:
    """The peer listener's app: the gateway's routes and /peer/v1, guarded."""
    app = FastAPI(title="Roundhouse peer", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.services = services
    install_problem_handlers(app)
    install_gateway(app)
    app.include_router(peer_router)
    app.include_router(peer_metrics_router)
    app.include_router(peer_nodes_router)
    app.include_router(peer_rpc_router)
    # Inner first: the key, then the body checks, then no browser at all, then the Host.
    app.add_middleware(
        PeerKeyGuard, peers=services.peers, gateway_key=lambda: services.gateway_key.current
    )
    app.add_middleware(RequestGuard, origins=lambda: (), control_prefixes=(PEER_PREFIX,))
    app.add_middleware(NoBrowserGuard)
    app.add_middleware(
        HostGuard,
        allowed=allowed_hosts,
        answers="the peer listener answers only to this machine's names and addresses and "
        "to gateway.allowed_hosts",
    )
    return app


@dataclass(frozen=True)
class _Plan:
    host: str
    port: int
    allowed_hosts: tuple[str, ...]
    discovery: bool


def _url(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"https://{shown}:{port}"


class PeerListener:
    """Follows the settings' `peers`; `apply()` after they change."""

    def __init__(
        self,
        state: DaemonState,
        peers: PeerService,
        app: Callable[[frozenset[str]], FastAPI],
    ) -> None:
        self._state = state
        self._peers = peers
        self._make_app = app
        self._plan: _Plan | None = None
        # Why it does not listen before it binds (no identity); the run says the rest.
        self._error: str | None = None
        self._run = ListenerRun("Peer listener", "peers.port")
        self._lock = asyncio.Lock()
        self._advertiser = Advertiser()
        self._discovery: str | None = None
        peers.listener_status = self.status

    def status(self) -> PeerListenerStatus:
        fingerprint = self._peers.fingerprint
        if self._plan is None:
            return PeerListenerStatus(fingerprint=fingerprint)
        host, port = self._run.bound or (self._plan.host, self._plan.port)
        return PeerListenerStatus(
            url=_url(host, port),
            fingerprint=fingerprint,
            error=self._error or self._run.error,
            discovery=self._discovery,
        )

    def _wanted(self) -> _Plan | None:
        settings = self._state.settings
        host = settings.peers.listen_host.strip()
        if not host:
            return None
        return _Plan(
            host,
            settings.peers.port,
            tuple(settings.gateway.allowed_hosts),
            settings.peers.discovery,
        )

    async def apply(self) -> None:
        """Listen as the settings say now: unchanged, moved, started or stopped."""
        async with self._lock:
            plan = self._wanted()
            if plan == self._plan and self._run.running():
                return
            await self._stop()
            self._plan, self._error = plan, None
            if plan is not None:
                self._start(plan)
            if plan is not None and plan.discovery and self._run.running():
                await self._advertise(plan)

    async def _advertise(self, plan: _Plan) -> None:
        """Say on the LAN where this listener is (mDNS); what keeps it from it, in words."""
        addresses = reachable_addresses(plan.host)
        if not addresses:
            self._discovery = (
                f"Not advertised: the listener is on {plan.host}, which no other machine "
                "reaches. Set peers.listen_host to a LAN address or 0.0.0.0."
            )
            return
        assert self._run.bound is not None
        info = service_info(
            self._peers.name,
            self._run.bound[1],
            self._peers.fingerprint,
            self._peers.version,
            addresses,
        )
        try:
            await self._advertiser.start(info)
        except (RoundhouseError, OSError, ValueError) as exc:
            detail = exc.detail if isinstance(exc, RoundhouseError) else str(exc)
            self._discovery = f"Not advertised: {detail}"
            log.warning("mDNS advertising failed: %s", detail)
            return
        self._discovery = "advertised"

    def _start(self, plan: _Plan) -> None:
        if self._peers.unavailable is not None:
            self._error = f"Not listening: {self._peers.unavailable}"
            log.warning("Peer listener not started: %s", self._error)
            return
        identity = self._peers.identity

        def config() -> uvicorn.Config:
            app = self._make_app(machine_hosts(plan.host, plan.allowed_hosts))
            made = listener_config(
                app,
                plan.host,
                ssl_certfile=str(identity.cert_path),
                ssl_keyfile=str(identity.key_path),
            )
            # Paired machines hold the change feed open for as long as they run: waiting for
            # it to end would hold a move of this listener (a settings change) for the full
            # grace.
            made.timeout_graceful_shutdown = _GRACE_S
            return made

        if self._run.start(plan.host, plan.port, config):
            assert self._run.bound is not None
            log.info("Peer listener on %s", _url(*self._run.bound))

    async def _stop(self) -> None:
        self._discovery = None
        with contextlib.suppress(Exception):
            await self._advertiser.stop()
        await self._run.stop()

    async def close(self) -> None:
        """Stop listening, with the daemon."""
        async with self._lock:
            await self._stop()
