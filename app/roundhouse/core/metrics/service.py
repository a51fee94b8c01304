"""Samples every instance once a second into bounded history and streams it to watchers."""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import AsyncIterator, Awaitable, Callable

from roundhouse.api.engines import EngineId
from roundhouse.api.hardware import GpuVendor, HardwareInventory
from roundhouse.api.instances import InstanceInfo, InstanceStatus
from roundhouse.api.metrics import SERIES, InstanceSeries, MetricsHistory, MetricsSnapshot
from roundhouse.base.fanout import Fanout
from roundhouse.base.tasks import cancel_and_wait, run_every
from roundhouse.core.gateway.gateway import Gateway
from roundhouse.core.metrics.engine_figures import EngineFigures, Scrape
from roundhouse.core.metrics.ollama_figures import scrape_ollama
from roundhouse.core.metrics.point import Inputs, Previous, build_point, row_of
from roundhouse.core.metrics.process import (
    SLOW_EVERY_S,
    ProcessReading,
    ProcessSampler,
    footprint_for,
)
from roundhouse.core.metrics.ring import TieredRing

log = logging.getLogger(__name__)

# Someone who read the figures this recently still counts as watching.
WATCH_GRACE_S = 30.0
# History of instances that are gone is kept, but for no more than this many.
MAX_RINGS = 64

# pid -> bytes of GPU memory it holds (NVML); blocking, so it runs in a worker thread.
GpuProcesses = Callable[[], dict[int, int]]


class MetricsService:
    """The 1 Hz metrics tick; `snapshot`, `history` and `subscribe` read what it made."""

    def __init__(
        self,
        instances: Callable[[], list[InstanceInfo]],
        gateway: Callable[[], Gateway],
        scrape: Scrape,
        inventory: Callable[[], Awaitable[HardwareInventory]],
        gpu_processes: GpuProcesses | None = None,
        *,
        interval_s: float = 1.0,
        clock: Callable[[], float] = time.time,
        scrape_ollama: Scrape = scrape_ollama,
    ) -> None:
        self._instances = instances
        self._gateway = gateway
        self._inventory_source = inventory
        self._inventory: HardwareInventory | None = None
        self._gpu_processes = gpu_processes
        self._vram: dict[int, int] = {}
        self._vram_at = -math.inf
        self.interval_s = interval_s
        self._clock = clock
        self._processes = ProcessSampler(footprint=footprint_for())
        self._scrape = scrape
        self._scrape_ollama = scrape_ollama
        # Root URLs of the Ollama instances, as of the last tick: their figures come from
        # /api/ps, not from a /metrics they do not serve.
        self._ollama_urls: dict[str, str] = {}
        self._figures = EngineFigures(self._scrape_any)
        self._previous: dict[str, Previous] = {}
        self._rings: dict[str, TieredRing] = {}
        self._latest = MetricsSnapshot(t=clock(), instances=[])
        self._fanout: Fanout[MetricsSnapshot] = Fanout()
        self._read_at = -math.inf
        self._task: asyncio.Task[None] | None = None
        self._inventory_task: asyncio.Task[HardwareInventory] | None = None

    # -- reading --------------------------------------------------------------------------

    def watched(self) -> bool:
        return bool(len(self._fanout)) or time.monotonic() - self._read_at < WATCH_GRACE_S

    def snapshot(self) -> MetricsSnapshot:
        self._read_at = time.monotonic()
        return self._latest

    def history(self, window_s: float, instance: str | None = None) -> MetricsHistory:
        self._read_at = time.monotonic()
        now = self._clock()
        resolution = 1.0
        series = []
        for instance_id, ring in self._rings.items():
            if instance is not None and instance_id != instance:
                continue
            resolution, times, columns = ring.window(window_s, now)
            values = {
                name: [None if math.isnan(v) else v for v in column]
                for name, column in zip(SERIES, columns, strict=True)
            }
            series.append(InstanceSeries(instance=instance_id, t=times, values=values))
        return MetricsHistory(resolution_s=resolution, window_s=window_s, series=series)

    def subscribe(self) -> AsyncIterator[MetricsSnapshot]:
        """Each new snapshot until the caller stops; a slow reader loses the oldest."""
        return self._fanout.subscribe()

    # -- sampling -------------------------------------------------------------------------

    async def tick(self) -> MetricsSnapshot:
        """Take one reading of every instance now."""
        if self._inventory is None:
            self._load_inventory()
        now = self._clock()
        infos = [i for i in self._instances() if i.status != InstanceStatus.FAILED]
        self._ollama_urls = {i.id: i.url for i in infos if i.engine == EngineId.OLLAMA}
        gateway = self._gateway()
        pids = {i.id: i.pid for i in infos if i.pid is not None}
        readings, vram = await asyncio.to_thread(self._read_processes, pids)
        points = []
        for info in infos:
            live = gateway.live.get(info.id)
            point = build_point(
                Inputs(
                    info=info,
                    t=now,
                    live=live,
                    previous=self._previous.get(info.id),
                    running=gateway.scheduler.in_flight(info.id),
                    queued=gateway.scheduler.queued(info.id) + gateway.starter.waiting_for(info.id),
                    process=readings.get(info.id, ProcessReading(None, None, None)),
                    vram_bytes=vram.get(info.id),
                    figures=self._figures.get(info.id),
                    inventory=self._inventory,
                    scraped_rates=self._figures.rates.get(info.id),
                )
            )
            self._previous[info.id] = Previous(now, point.output_tokens, point.prompt_tokens)
            ring = self._rings.pop(info.id, None) or TieredRing(len(SERIES))
            self._rings[info.id] = ring  # re-inserted: the dict keeps the most recent last
            ring.append(now, row_of(point))
            points.append(point)
        self._forget(infos)
        ready = [i.id for i in infos if i.status == InstanceStatus.READY]
        self._figures.refresh_due(ready, time.monotonic(), self.watched())
        snapshot = MetricsSnapshot(t=now, instances=points)
        self._publish(snapshot)
        return snapshot

    async def _scrape_any(self, instance_id: str) -> dict[str, float]:
        url = self._ollama_urls.get(instance_id)
        if url is not None:
            return await self._scrape_ollama(url)
        return await self._scrape(instance_id)

    def _load_inventory(self) -> None:
        """The inventory (for the flags) loads beside the ticks: the first takes seconds."""
        if self._inventory_task is None:
            self._inventory_task = asyncio.ensure_future(self._inventory_source())
        elif self._inventory_task.done():
            task, self._inventory_task = self._inventory_task, None
            if not task.cancelled() and task.exception() is None:
                self._inventory = task.result()
            else:
                log.warning("The hardware inventory failed; the flags wait for the next try")

    def _read_processes(
        self, pids: dict[str, int]
    ) -> tuple[dict[str, ProcessReading], dict[str, int]]:
        readings = {iid: self._processes.read(pid) for iid, pid in pids.items()}
        self._processes.forget_except(set(pids.values()))
        vram: dict[str, int] = {}
        if self._gpu_processes is not None and self._has_nvidia():
            if time.monotonic() - self._vram_at >= SLOW_EVERY_S:
                self._vram_at = time.monotonic()
                try:
                    self._vram = self._gpu_processes()
                except Exception:  # a GPU reading that fails must not stop the tick
                    log.exception("Reading GPU memory per process failed")
                    self._vram = {}
            for iid, pid in pids.items():
                tree = self._processes.tree_pids(pid)
                vram[iid] = sum(self._vram.get(p, 0) for p in tree)
        return readings, vram

    def _has_nvidia(self) -> bool:
        gpus = self._inventory.gpus if self._inventory else []
        return any(g.vendor == GpuVendor.NVIDIA for g in gpus)

    def _forget(self, infos: list[InstanceInfo]) -> None:
        present = {i.id for i in infos}
        self._gateway().live.forget_except(present)
        self._figures.forget_except(present)
        for gone in self._previous.keys() - present:
            del self._previous[gone]
        while len(self._rings) > MAX_RINGS:
            oldest = next(iter(self._rings))
            del self._rings[oldest]

    def _publish(self, snapshot: MetricsSnapshot) -> None:
        self._latest = snapshot
        self._fanout.publish(snapshot)

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="metrics-sampler")

    async def stop(self) -> None:
        if self._task is not None:
            await cancel_and_wait(self._task)
            self._task = None
        await self._figures.aclose()
        if self._inventory_task is not None:
            await cancel_and_wait(self._inventory_task, reraise=False)

    async def _run(self) -> None:
        await run_every(self.interval_s, self._tick_logged)

    async def _tick_logged(self) -> None:
        try:
            await self.tick()
        except Exception:  # the tick must go on; a bug shows in the log
            log.exception("Sampling metrics failed")
