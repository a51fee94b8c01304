"""What the routes need from the daemon, passed in by the composition root."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from roundhouse.api.engines import EnginesOverview
from roundhouse.api.fit import FitQuery, FitReport
from roundhouse.api.hardware import GpuSample, HardwareInventory
from roundhouse.api.settings import Settings
from roundhouse.base.paths import Home
from roundhouse.core.chat.store import ChatStore
from roundhouse.core.engines.install.jobs import InstallJobs
from roundhouse.core.errors import ServiceUnavailableError
from roundhouse.core.gateway.gateway import Gateway
from roundhouse.core.gateway.launch import FitFor
from roundhouse.core.gateway.library import LibraryStartables
from roundhouse.core.gateway_key import GatewayKeyStore
from roundhouse.core.instances.service import InstanceService
from roundhouse.core.metrics.service import MetricsService
from roundhouse.core.sampler import Sampler
from roundhouse.core.settings import save_settings
from roundhouse.core.updates import UpdateChecker

if TYPE_CHECKING:
    # Imported when first used: the models' libraries (huggingface_hub, gguf, numpy) would
    # add a third of a second to every daemon start.
    from roundhouse.core.bench.service import BenchService
    from roundhouse.core.models.downloads.service import DownloadService
    from roundhouse.core.models.hub.service import HubService
    from roundhouse.core.models.library.service import LibraryService
    from roundhouse.core.models.model_fit import ModelFitter
    from roundhouse.core.models.ollama_pulls.service import OllamaPulls
    from roundhouse.server.gateway_listener import SecondListener

# Called with the settings in force, so a changed list of Pythons counts at the next refresh.
EngineDetector = Callable[[Settings], EnginesOverview]


class HardwareSource(Protocol):
    """The hardware probe as the server sees it (blocking calls: run them in a thread)."""

    def inventory(self) -> HardwareInventory: ...

    def sample_gpus(self) -> list[GpuSample]: ...

    def close(self) -> None: ...


@dataclass
class DaemonServices:
    home: Home
    settings: Settings
    token: str
    hardware: HardwareSource
    sampler: Sampler
    version: str
    request_shutdown: Callable[[], None]
    detect_engines: EngineDetector
    # Set by the composition root once the services exist (it resolves engines through them).
    instances: InstanceService | None = None
    installs: InstallJobs | None = None
    chats: ChatStore | None = None
    hub: HubService | None = None
    downloads: DownloadService | None = None
    downloads_error: str | None = None
    ollama_pulls: OllamaPulls | None = None
    library: LibraryService | None = None
    fitter: ModelFitter | None = None
    # Opening the model services runs beside the server's start; their routes wait for it.
    models_opening: asyncio.Task[None] | None = None
    # Made on first use, over the instance service.
    gateway_state: Gateway | None = None
    # Made on first use: benchmarks go through this daemon's own gateway.
    bench: BenchService | None = None
    # The 1 Hz metrics of every instance (set by the composition root).
    metrics: MetricsService | None = None
    # The gateway's API key, read from the keyring at start and cached for every request.
    gateway_key: GatewayKeyStore = field(default_factory=GatewayKeyStore)
    # The gateway's second address, when the settings name one (set by the composition root).
    second_listener: SecondListener | None = None
    # Ollama's port (gateway.ollama_port_enabled): the same listener kind on 127.0.0.1:11434.
    ollama_listener: SecondListener | None = None
    # The update check, asleep unless ui.check_updates is on (set by the composition root).
    updates: UpdateChecker | None = None
    started_at: float = field(default_factory=time.time)
    url: str = ""
    pid: int = 0
    # Set when the daemon begins to stop, so long-lived streams end promptly.
    stopping: asyncio.Event = field(default_factory=asyncio.Event)
    _inventory: HardwareInventory | None = None
    _inventory_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    _engines: EnginesOverview | None = None
    _engines_lock: asyncio.Lock = field(default_factory=asyncio.Lock)

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
            return self._engines

    def instance_service(self) -> InstanceService:
        if self.instances is None:
            raise RuntimeError("the daemon was built without an instance service")
        return self.instances

    def install_jobs(self) -> InstallJobs:
        if self.installs is None:
            raise RuntimeError("the daemon was built without install jobs")
        return self.installs

    def chat_store(self) -> ChatStore:
        if self.chats is None:
            raise RuntimeError("the daemon was built without a chat store")
        return self.chats

    async def models_ready(self) -> None:
        """Wait until the model services are open (at once, after the daemon's start)."""
        if self.models_opening is not None:
            await asyncio.shield(self.models_opening)

    def hub_service(self) -> HubService:
        if self.hub is None:
            from roundhouse.core.models.hub.service import HubService

            # The endpoint is HF_ENDPOINT's (huggingface_hub reads it), else huggingface.co.
            self.hub = HubService()
        return self.hub

    def download_service(self) -> DownloadService:
        if self.downloads is None:
            raise ServiceUnavailableError(self.downloads_error or "The download queue is not open.")
        return self.downloads

    def ollama_pull_service(self) -> OllamaPulls:
        if self.ollama_pulls is None:
            raise ServiceUnavailableError(
                self.downloads_error or "The queue of Ollama pulls is not open."
            )
        return self.ollama_pulls

    def library_service(self) -> LibraryService:
        if self.library is None:
            raise RuntimeError("the daemon was built without a library")
        return self.library

    def model_fitter(self) -> ModelFitter:
        if self.fitter is None:
            from roundhouse.core.models.model_fit import ModelFitter

            self.fitter = ModelFitter(self.hub_service(), self.library_service(), self.inventory)
        return self.fitter

    def gateway(self) -> Gateway:
        if self.gateway_state is None:
            # Every model of the library is served by name, read from its last scan (the
            # library opens after the daemon's start: until then it offers nothing).
            local = LibraryStartables(lambda: self.library, self._fit_for, self.models_ready)
            # Settings read live: PUT /api/v1/settings replaces `self.settings`.
            self.gateway_state = Gateway(
                self.instance_service(), settings=lambda: self.settings, local=local
            )
        return self.gateway_state

    def _fit_for(self) -> FitFor | None:
        """The fit estimate a library model's first start chooses its settings by."""
        if self.library is None:
            return None

        async def fit(query: FitQuery) -> FitReport:
            return (await self.model_fitter().fit(query)).report

        return fit

    def bench_service(self) -> BenchService:
        if self.bench is None:
            from roundhouse.core.bench.service import BenchService

            self.bench = BenchService(self.home.data_dir / "bench", self.url + "/v1", self.token)
        return self.bench

    def metrics_service(self) -> MetricsService:
        if self.metrics is None:
            raise RuntimeError("the daemon was built without metrics")
        return self.metrics

    def update_checker(self) -> UpdateChecker:
        if self.updates is None:
            raise RuntimeError("the daemon was built without an update check")
        return self.updates

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
        if self.updates is not None:
            self.updates.settings_changed()
        await self.apply_listeners()

    async def apply_listeners(self) -> None:
        """Start, move or stop the gateway's other listeners as the settings and key say."""
        for listener in (self.second_listener, self.ollama_listener):
            if listener is not None:
                await listener.apply()

    async def close_gateway(self) -> None:
        if self.gateway_state is not None:
            await self.gateway_state.aclose()
