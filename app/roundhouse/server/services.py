"""What the routes need from the daemon, passed in by the composition root."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from roundhouse.api.engines import EnginesOverview
from roundhouse.api.hardware import GpuSample, HardwareInventory
from roundhouse.api.settings import Settings
from roundhouse.base.paths import Home
from roundhouse.core.engines.install.jobs import InstallJobs
from roundhouse.core.gateway.gateway import Gateway
from roundhouse.core.instances.service import InstanceService
from roundhouse.core.sampler import Sampler

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
    # Made on first use, over the instance service.
    gateway_state: Gateway | None = None
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

    def gateway(self) -> Gateway:
        if self.gateway_state is None:
            self.gateway_state = Gateway(self.instance_service())
        return self.gateway_state

    async def close_gateway(self) -> None:
        if self.gateway_state is not None:
            await self.gateway_state.aclose()
