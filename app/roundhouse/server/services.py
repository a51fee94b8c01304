"""The daemon's services, every one built at start by the composition root (server/compose.py)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from roundhouse.api.engines import EnginesOverview
from roundhouse.api.hardware import GpuSample, HardwareInventory
from roundhouse.api.settings import Settings
from roundhouse.base.paths import Home
from roundhouse.core.bench.ab import AbService
from roundhouse.core.bench.service import BenchService
from roundhouse.core.chat.store import ChatStore
from roundhouse.core.chat.turns import ChatTurns
from roundhouse.core.engines.install.jobs import InstallJobs
from roundhouse.core.gateway.gateway import Gateway
from roundhouse.core.gateway.key import GatewayKeyStore
from roundhouse.core.hardware.sampler import Sampler
from roundhouse.core.infra.changes import Changes
from roundhouse.core.infra.jobs import JobBoard
from roundhouse.core.infra.settings import save_settings
from roundhouse.core.instances.service import InstanceService
from roundhouse.core.metrics.service import MetricsService
from roundhouse.core.system.updates import UpdateChecker
from roundhouse.server.feed_wiring import ChangeFeed

if TYPE_CHECKING:
    from roundhouse.core.peers.watch import PeerWatch
    from roundhouse.server.gateway_listener import SecondListener
    from roundhouse.server.models_wiring import ModelsOpening
    from roundhouse.server.peer_listener import PeerListener
    from roundhouse.server.peer_service import PeerService
    from roundhouse.server.rpc_lending import RpcLending

log = logging.getLogger(__name__)

# Called with the settings in force, so a changed list of Pythons counts at the next refresh.
EngineDetector = Callable[[Settings], EnginesOverview]


class HardwareSource(Protocol):
    """The hardware probe as the server sees it (blocking calls: run them in a thread)."""

    def inventory(self) -> HardwareInventory: ...

    def sample_gpus(self) -> list[GpuSample]: ...

    def close(self) -> None: ...


@dataclass
class DaemonState:
    """What the services read as it is now: the settings in force (PUT /api/v1/settings
    replaces them), the hardware inventory and the engines detected, each cached until
    refreshed. Built first, so every service can be handed it."""

    home: Home
    settings: Settings
    hardware: HardwareSource
    detect_engines: EngineDetector
    _inventory: HardwareInventory | None = None
    _inventory_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    _engines: EnginesOverview | None = None
    _engines_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    # Touched each time the engines are detected (the change feed's engines kind).
    engines_changes: Changes = field(default_factory=Changes)
    _detections: set[asyncio.Task[EnginesOverview]] = field(default_factory=set)

    async def inventory(self, refresh: bool = False) -> HardwareInventory:
        """The inventory, collected once in a worker thread and cached until refreshed."""
        async with self._inventory_lock:
            if self._inventory is None or refresh:
                self._inventory = await asyncio.to_thread(self.hardware.inventory)
            return self._inventory

    async def engines(self, refresh: bool = False) -> EnginesOverview:
        """The engine catalog and detection, run in a worker thread (it runs `--version` of
        each tool it finds) and cached until refreshed."""
        async with self._engines_lock:
            if self._engines is None or refresh:
                self._engines = await asyncio.to_thread(self.detect_engines, self.settings)
                self.engines_changes.touch()
            return self._engines

    def detect_engines_soon(self) -> None:
        """Detect the engines again in the background (the settings name other Pythons);
        the change feed tells every client what was found."""
        task = asyncio.create_task(self.engines(refresh=True), name="engine-detection")
        self._detections.add(task)
        task.add_done_callback(self._detected)

    def _detected(self, task: asyncio.Task[EnginesOverview]) -> None:
        self._detections.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("Detecting the engines again failed", exc_info=task.exception())

    @property
    def engines_detected(self) -> EnginesOverview | None:
        """The engines as last detected; None while the first detection runs."""
        return self._engines


@dataclass
class DaemonServices:
    """Every service of the daemon, each built once at start; routes take them by name
    through server/deps.py."""

    state: DaemonState
    token: str
    sampler: Sampler
    version: str
    url: str
    pid: int
    request_shutdown: Callable[[], None]
    # The gateway's API key, read from the keyring at start and cached for every request.
    gateway_key: GatewayKeyStore
    instances: InstanceService
    # Every job of the daemon (installs, downloads, pulls, benchmarks, A/B runs), one board.
    jobs: JobBoard
    installs: InstallJobs
    chats: ChatStore
    chat_turns: ChatTurns
    # The library, the download queue, Ollama's pulls, the Hub and the fit estimate: the
    # object exists from the start, its services open beside the server's start and the
    # routes that use them wait for that.
    models: ModelsOpening
    gateway: Gateway
    bench: BenchService
    ab: AbService
    # The 1 Hz metrics of every instance.
    metrics: MetricsService
    # The gateway's second address, when the settings name one.
    second_listener: SecondListener
    # Ollama's port (gateway.ollama_port_enabled): the same listener kind on 127.0.0.1:11434.
    ollama_listener: SecondListener
    # The update check, asleep unless ui.check_updates is on.
    updates: UpdateChecker
    # Paired machines (pairing, their keys, this daemon's identity) and the TLS listener
    # they reach this daemon at (peers.listen_host).
    peers: PeerService
    # The paired machines' instances, followed from their change feeds for the gateway.
    peer_watch: PeerWatch
    peer_listener: PeerListener
    # The rpc-servers this machine lends to paired machines behind mutual-TLS relays (ADR 40).
    rpc_lending: RpcLending
    # The change feed (GET /api/v1/events) and the relays that publish each kind into it.
    feed: ChangeFeed
    # Set when the daemon begins to stop, so long-lived streams end promptly.
    stopping: asyncio.Event
    started_at: float = field(default_factory=time.time)

    @property
    def home(self) -> Home:
        return self.state.home

    @property
    def hardware(self) -> HardwareSource:
        return self.state.hardware

    @property
    def settings(self) -> Settings:
        return self.state.settings

    @settings.setter
    def settings(self, settings: Settings) -> None:
        self.state.settings = settings
        self.feed.settings_saved(settings)

    async def inventory(self, refresh: bool = False) -> HardwareInventory:
        return await self.state.inventory(refresh)

    async def engines(self, refresh: bool = False) -> EnginesOverview:
        return await self.state.engines(refresh)

    def remember_active_model(self, model: str | None) -> None:
        """Make `model` the active one (chat.active_model): the user started it or chatted
        with it. Saved only when it changes, so a chat's every reply writes nothing."""
        if not model or model == self.settings.chat.active_model:
            return
        chat = self.settings.chat.model_copy(update={"active_model": model})
        updated = self.settings.model_copy(update={"chat": chat})
        save_settings(self.home.settings_file, updated)
        self.settings = updated

    async def settings_changed(self) -> None:
        """Put what `self.settings` now says in force where it is not read per request."""
        self.updates.settings_changed()
        await self.apply_listeners()

    async def apply_listeners(self) -> None:
        """Start, move or stop the gateway's other listeners as the settings and key say."""
        for listener in (self.second_listener, self.ollama_listener):
            await listener.apply()
        await self.peer_listener.apply()
