"""Just-in-time starts: one start per model however many requests ask, room made first."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from roundhouse.api.instances import InstanceInfo, InstanceStatus
from roundhouse.api.settings import Settings
from roundhouse.core.errors import NotFoundError, RoundhouseError
from roundhouse.core.gateway.errors import QueueFull, QueueTimeout, StartFailed
from roundhouse.core.gateway.library import Startable
from roundhouse.core.gateway.residency import least_recently_used_idle, resident
from roundhouse.core.gateway.scheduler import RETRY_AFTER_S, Scheduler
from roundhouse.core.instances.service import InstanceService

log = logging.getLogger(__name__)

# The instance service has no readiness event: its status is read this often while waiting.
POLL_S = 0.1
# The engine's own ready timeout fails the instance; waiting gives up a little after it.
READY_MARGIN_S = 30.0
# Waiting for room rechecks this often too, for instances stopped from elsewhere.
ROOM_RECHECK_S = 1.0


@dataclass(eq=False)
class _Start:
    startable: Startable
    task: asyncio.Task[InstanceInfo] | None = None
    instance_id: str | None = None
    waiters: int = field(default=0)


class Starter:
    """Starts library models for the gateway and remembers which instances it started."""

    def __init__(
        self,
        instances: InstanceService,
        scheduler: Scheduler,
        settings: Callable[[], Settings],
        poll_s: float = POLL_S,
    ) -> None:
        self._instances = instances
        self._scheduler = scheduler
        self._settings = settings
        self._poll_s = poll_s
        self._by_key: dict[tuple[object, str], _Start] = {}
        # Starts with requests still waiting on them, finished ones included: the instance
        # they wait for must not be unloaded before they reach it.
        self._active: set[_Start] = set()
        self._room = asyncio.Lock()
        self.started: set[str] = set()

    def busy(self) -> frozenset[str]:
        """Instances that requests wait for (being started, or just ready)."""
        return frozenset(s.instance_id for s in self._active if s.instance_id and s.waiters)

    def waiting_for(self, instance_id: str) -> int:
        return sum(s.waiters for s in self._active if s.instance_id == instance_id)

    def loading(self, startable: Startable) -> bool:
        start = self._by_key.get(startable.key)
        return start is not None and start.task is not None and not start.task.done()

    async def ensure(
        self, startable: Startable, deadline: float, *, limit: int | None = None
    ) -> InstanceInfo:
        """The ready instance started for `startable`, starting it unless a start for it
        runs already; waits until `deadline` (the start itself goes on after that)."""
        start = self._by_key.get(startable.key)
        if start is None or start.task is None or start.task.done():
            start = _Start(startable)
            start.task = asyncio.create_task(self._run(start), name=f"jit-{startable.id}")
            start.task.add_done_callback(lambda _: self._finished(start))
            self._by_key[startable.key] = start
        if limit is not None and start.waiters >= limit:
            raise QueueFull(
                f"'{startable.id}' is loading and {start.waiters} requests wait for it already, "
                "the most the gateway queues (settings max_concurrent and queue_size). Retry "
                "shortly.",
                headers={"retry-after": str(RETRY_AFTER_S)},
            )
        assert start.task is not None
        start.waiters += 1
        self._active.add(start)
        try:
            timeout = max(0.0, deadline - self._scheduler.clock())
            done, _ = await asyncio.wait({start.task}, timeout=timeout)
        finally:
            start.waiters -= 1
            if start.task.done():
                self._finished(start)
        if not done:
            raise QueueTimeout(
                f"'{startable.id}' is still loading on {startable.engine.value}; the request "
                "waited the longest the gateway allows (setting queue_timeout_s). Retry in a "
                "moment: the start goes on."
            )
        return start.task.result()

    def _finished(self, start: _Start) -> None:
        assert start.task is not None
        if not start.task.cancelled():
            # A start whose waiters all gave up ends in an error nobody reads: mark it
            # read; waiters still there get it from `result()`.
            start.task.exception()
        if self._by_key.get(start.startable.key) is start:
            del self._by_key[start.startable.key]
        if start.waiters == 0:
            self._active.discard(start)

    async def _run(self, start: _Start) -> InstanceInfo:
        entry = start.startable
        async with self._room:
            await self._make_room(entry)
            launch = await entry.launch()
            request = launch.request.model_copy(update={"launch_note": launch.why})
            try:
                info = await self._instances.start(request)
            except RoundhouseError as exc:
                how = f"its preset '{entry.preset}'" if entry.preset else f"({launch.why})"
                raise StartFailed(
                    f"Roundhouse could not start '{entry.id}' on {entry.engine.value} with "
                    f"{how}: {exc.detail}"
                ) from exc
            start.instance_id = info.id
            self.started.add(info.id)
            log.info("Started %s just in time as %s: %s", entry.id, info.id, launch.why)
        return await self._until_ready(entry, info.id)

    async def _make_room(self, entry: Startable) -> None:
        """Unload least recently used idle instances until one more fits; wait for one to
        become idle (bounded by queue_timeout_s) when all are busy."""
        clock = self._scheduler.clock
        deadline = clock() + self._settings().gateway.queue_timeout_s
        while True:
            limit = self._settings().gateway.max_resident
            instances = self._instances.all(memory=False)
            held = resident(instances)
            if len(held) < limit:
                return
            victim = least_recently_used_idle(held, self._scheduler, self.busy())
            if victim is not None:
                await self.unload(victim, f"to make room for {entry.id} (max_resident {limit})")
                continue
            if clock() >= deadline:
                names = ", ".join(f"{i.id} ({i.engine.value})" for i in held)
                raise StartFailed(
                    f"Roundhouse cannot start '{entry.id}': {len(held)} instances are resident "
                    f"(the most setting max_resident allows: {limit}) and all of them are busy "
                    f"answering or loading: {names}. Retry when one is idle, stop one, or "
                    "raise max_resident."
                )
            await self._scheduler.wait_change(min(ROOM_RECHECK_S, deadline - clock()))

    async def unload(self, info: InstanceInfo, why: str) -> None:
        log.info("Stopping instance %s (%s) %s", info.id, info.engine.value, why)
        try:
            await self._instances.stop(info.id)
        except NotFoundError:
            pass  # stopped from elsewhere meanwhile
        except RoundhouseError as exc:
            raise StartFailed(
                f"Roundhouse could not stop instance {info.id}: {exc.detail}"
            ) from exc
        finally:
            self.started.discard(info.id)

    async def _until_ready(self, entry: Startable, instance_id: str) -> InstanceInfo:
        clock = self._scheduler.clock
        give_up = clock() + self._settings().engines.ready_timeout_s + READY_MARGIN_S
        while True:
            try:
                info = self._instances.info(instance_id, memory=False)
            except NotFoundError:
                self.started.discard(instance_id)
                raise StartFailed(
                    f"The instance {instance_id} starting '{entry.id}' was stopped before it "
                    "was ready."
                ) from None
            if info.status == InstanceStatus.READY:
                self._scheduler.touch(instance_id)
                return info
            if info.status == InstanceStatus.FAILED:
                self.started.discard(instance_id)
                raise StartFailed(
                    f"The {entry.engine.value} instance {instance_id} for '{entry.id}' failed to "
                    f"start: {info.error or 'no reason given'} (see its log: `roundhouse engines "
                    f"logs {instance_id}`)."
                )
            if clock() > give_up:
                raise StartFailed(
                    f"The instance {instance_id} for '{entry.id}' is still {info.status.value} "
                    "after the engines' ready timeout."
                )
            await asyncio.sleep(self._poll_s)

    async def aclose(self) -> None:
        tasks = [s.task for s in self._by_key.values() if s.task and not s.task.done()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
