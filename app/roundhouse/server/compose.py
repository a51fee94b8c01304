"""The daemon's composition root: every service built once at start, started, and closed in order.

A new service is one field of `DaemonServices` (server/services.py), one line in
`build_services`, and where it has them, one line in `start_services` and `close_services`;
routes take it by name through server/deps.py. Nothing is built on first use or by a route.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable
from pathlib import Path

from fastapi import FastAPI

from roundhouse import __version__
from roundhouse.api.engines import DetectedEngine, EngineId, EngineSpec
from roundhouse.api.fit import FitQuery, FitReport
from roundhouse.api.settings import LeftoverAction, Settings
from roundhouse.core.bench.ab import AbService
from roundhouse.core.bench.service import BenchService
from roundhouse.core.chat.store import CHAT_FILE, ChatStore
from roundhouse.core.chat.turns import ChatTurns
from roundhouse.core.engines.exo import NOT_STARTED_HERE
from roundhouse.core.engines.install.jobs import InstallJobs
from roundhouse.core.errors import InvalidInputError, NotFoundError
from roundhouse.core.gateway.gateway import Gateway
from roundhouse.core.gateway.key import GatewayKeyStore
from roundhouse.core.gateway.launch import FitFor
from roundhouse.core.gateway.library import LibraryStartables, ModelLibrary
from roundhouse.core.hardware.sampler import Sampler
from roundhouse.core.infra.jobs import JobBoard
from roundhouse.core.instances.endpoints import EndpointStore
from roundhouse.core.instances.manager import InstanceManager
from roundhouse.core.instances.modalities import model_sees
from roundhouse.core.instances.presets import PresetStore
from roundhouse.core.instances.service import EngineResolver, InstanceService
from roundhouse.core.models.library.places import hub_cache_dir
from roundhouse.core.peers.watch import PeerWatch
from roundhouse.core.system.updates import UpdateChecker
from roundhouse.server.feed_wiring import ChangeFeed
from roundhouse.server.gateway_listener import (
    OllamaPortListener,
    SecondListener,
    create_gateway_app,
)
from roundhouse.server.metrics_wiring import build_metrics
from roundhouse.server.models_wiring import ModelsOpening
from roundhouse.server.peer_listener import PeerListener, create_peer_app
from roundhouse.server.peer_service import PeerService
from roundhouse.server.rpc_across import remote_rpc_workers
from roundhouse.server.rpc_lending import RpcLending
from roundhouse.server.services import DaemonServices, DaemonState

log = logging.getLogger(__name__)

GATEWAY_PATH = "/v1"


def models_dir(settings: Settings) -> Path:
    """Where models are stored: the setting, else the Hugging Face cache."""
    return hub_cache_dir(settings.models_dir)


def engine_resolver(state: DaemonState) -> EngineResolver:
    """Find the installed engine to start: detected once, detected again on a miss (it may
    have been installed since)."""

    async def resolve(engine: EngineId) -> tuple[EngineSpec, DetectedEngine]:
        if engine == EngineId.EXO:
            raise InvalidInputError(NOT_STARTED_HERE)
        overview = await state.engines()
        for refresh in (False, True):
            if refresh:
                overview = await state.engines(refresh=True)
            found = [d for d in overview.detection.found if d.id == engine]
            if found:
                return overview.catalog.spec(engine), found[0]
        why = next((m.why for m in overview.detection.missing if m.id == engine), "not found")
        raise NotFoundError(
            f"{engine.value} is not installed on this machine ({why}). Install it with "
            f"`roundhouse engines install {engine.value}` or from the Engines page."
        )

    return resolve


def instance_service(state: DaemonState) -> InstanceService:
    home, settings = state.home, state.settings
    manager = InstanceManager(
        home.state_dir,
        home.log_dir / "engines",
        on_leftover="reap" if settings.engines.on_leftover == LeftoverAction.REAP else "adopt",
        # Read at each start, so a changed setting applies without a restart.
        ready_timeout_s=lambda: state.settings.engines.ready_timeout_s,
        hf_hub_cache=models_dir(settings),
        media_domains=lambda: state.settings.gateway.media_domains,
    )
    return InstanceService(
        manager,
        PresetStore(home.config_dir),
        engine_resolver(state),
        endpoints=EndpointStore(home.config_dir),
        inventory=state.inventory,
    )


def _gateway(
    state: DaemonState, instances: InstanceService, models: ModelsOpening, remote: PeerWatch
) -> Gateway:
    def library() -> ModelLibrary | None:
        opened = models.now()
        return None if opened is None else opened.library

    def fit_for() -> FitFor | None:
        """The fit estimate a library model's first start chooses its settings by."""
        opened = models.now()
        if opened is None:
            return None
        fitter = opened.fitter

        async def fit(query: FitQuery) -> FitReport:
            return (await fitter.fit(query)).report

        return fit

    # Every model of the library is served by name, read from its last scan (the library
    # opens after the daemon's start: until then it offers nothing).
    local = LibraryStartables(library, fit_for, models.wait)
    # Settings read live: PUT /api/v1/settings replaces `state.settings`.
    return Gateway(instances, settings=lambda: state.settings, local=local, remote=remote)


def _peer_watch(peers: PeerService) -> PeerWatch:
    """The paired machines' instances, followed for the gateway; again on each pairing."""
    watch = PeerWatch(peers.store.list, peers.client, peers.key_for, peers.context_for)
    peers.listeners.append(watch.sync)
    return watch


def build_services(
    state: DaemonState,
    *,
    token: str,
    url: str,
    request_shutdown: Callable[[], None],
    stopping: asyncio.Event,
) -> DaemonServices:
    """Every service of the daemon, built once (in the running loop: some start tasks)."""
    home, settings = state.home, state.settings
    sampler = Sampler(
        state.hardware.sample_gpus,
        interval_s=settings.daemon.sample_interval_s,
        history_s=settings.daemon.sample_history_s,
    )
    instances = instance_service(state)
    jobs = JobBoard()
    installs = InstallJobs(
        home.data_dir / "engines", state.inventory, lambda: state.engines(refresh=True), jobs=jobs
    )
    # Opened on first use: a damaged chat file costs the chat routes, not the daemon's start.
    chats = ChatStore(home.data_dir / CHAT_FILE, lambda: state.settings.chat.max_conversations)
    # Opened beside the server's start; their routes wait for it.
    models = ModelsOpening(state, jobs)
    peers = PeerService(home, lambda: state.settings, __version__)
    peer_watch = _peer_watch(peers)
    # A machine unpaired (from either side) runs no more nodes here (ADR 39).
    peers.listeners.append(
        lambda: instances.hosted_nodes.keep_only({p.id for p in peers.store.list()})
    )
    # llama.cpp RPC across paired machines (ADR 40): borrowed for instances here, lent to them.
    instances.borrow_rpc_with(remote_rpc_workers(peers, models))
    rpc_lending = RpcLending()
    peers.listeners.append(lambda: rpc_lending.forget_unpaired(services))
    gateway = _gateway(state, instances, models, peer_watch)
    # Benchmarks go through this daemon's own gateway.
    bench = BenchService(home.data_dir / "bench", url + GATEWAY_PATH, token, jobs=jobs)
    gateway_key = GatewayKeyStore.with_marker_in(home.state_dir)

    def gateway_app(hosts: frozenset[str]) -> FastAPI:
        # The listeners serve these same services: made when one starts listening, which is
        # after `services` below exists.
        return create_gateway_app(services, hosts)

    def peer_app(hosts: frozenset[str]) -> FastAPI:
        return create_peer_app(services, hosts)

    services = DaemonServices(
        state=state,
        token=token,
        sampler=sampler,
        version=__version__,
        url=url,
        pid=os.getpid(),
        request_shutdown=request_shutdown,
        gateway_key=gateway_key,
        instances=instances,
        jobs=jobs,
        installs=installs,
        chats=chats,
        chat_turns=ChatTurns(
            chats, sees=lambda model: model_sees(instances.all(memory=False), model)
        ),
        models=models,
        gateway=gateway,
        bench=bench,
        ab=AbService(bench, instances, jobs=jobs),
        metrics=build_metrics(state, instances, gateway),
        second_listener=SecondListener(state, gateway_key, gateway_app),
        ollama_listener=OllamaPortListener(state, gateway_key, gateway_app),
        updates=UpdateChecker(
            __version__, home.state_dir / "updates.json", lambda: state.settings.ui.check_updates
        ),
        peers=peers,
        peer_watch=peer_watch,
        peer_listener=PeerListener(state, peers, peer_app),
        rpc_lending=rpc_lending,
        feed=ChangeFeed(),
        stopping=stopping,
    )
    return services


async def start_services(services: DaemonServices) -> None:
    """What runs from the start: the key before the first request (/v1 must not answer
    unguarded while it loads), the listeners, the sampler, the metrics, the update check."""
    await services.gateway_key.load()
    await services.peers.load()
    services.peer_watch.sync()
    await services.apply_listeners()
    services.sampler.start()
    services.metrics.start()
    services.updates.start()
    services.feed.start(services)


async def close_services(services: DaemonServices) -> None:
    """Everything stopped and closed, in the order that leaves nothing running unseen."""
    # The feed's followers ended when the daemon began to stop: its relays go first.
    await services.feed.close()
    await services.second_listener.close()
    await services.ollama_listener.close()
    await services.peer_listener.close()
    await services.peer_watch.aclose()
    await services.updates.stop()
    # Benchmarks end first: their requests would otherwise fail against stopping engines.
    await services.ab.aclose()
    await services.bench.aclose()
    # A daemon that stops takes its engines with it: nothing is left running unseen.
    await services.instances.stop_all()
    await services.rpc_lending.stop_all(services)
    await services.installs.close()
    await services.jobs.close()
    await services.models.close()
    await services.chats.close()
    await services.metrics.stop()
    await services.gateway.aclose()
    await services.sampler.stop()
    await asyncio.to_thread(services.hardware.close)
