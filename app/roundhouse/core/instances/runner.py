"""A started instance's life in a task: launch, wait for its end, restart transient failures."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

from roundhouse.api.engines import LaunchParams
from roundhouse.api.instances import InstanceStatus
from roundhouse.base.tasks import cancel_and_wait
from roundhouse.core.engines.launch import keyless
from roundhouse.core.errors import NotFoundError, RoundhouseError
from roundhouse.core.infra.ports import free_port
from roundhouse.core.infra.thread_touch import ThreadTouch
from roundhouse.core.instances.entries import InstanceEntry, InstanceTable
from roundhouse.core.instances.manager import InstanceManager
from roundhouse.core.instances.memory import InventoryGetter, MemoryReader
from roundhouse.core.instances.modalities import read_vision
from roundhouse.core.supervise import (
    EngineExitedError,
    EngineNotReadyError,
    EngineProcess,
    Phase,
    Progress,
)

log = logging.getLogger(__name__)


class InstanceRunner:
    """Runs the instances the daemon started and stops them; once `closing`, none restarts."""

    def __init__(
        self,
        manager: InstanceManager,
        table: InstanceTable,
        inventory: InventoryGetter | None = None,
    ) -> None:
        self._manager = manager
        self._table = table
        self._memory = MemoryReader(inventory)
        self.closing = False

    def launch(self, entry: InstanceEntry, *, fixed_port: bool) -> None:
        """Run the entry in its own task, kept on the entry."""
        entry.task = asyncio.create_task(
            self._run(entry, fixed_port=fixed_port), name=f"instance-{entry.id}"
        )

    async def _run(self, entry: InstanceEntry, *, fixed_port: bool) -> None:
        """Start, wait for the end, restart transient failures; the entry's life in a task."""
        assert entry.spec is not None and entry.detected is not None
        assert entry.options is not None
        while True:
            entry.status = InstanceStatus.STARTING
            entry.progress = None
            entry.memory = None
            entry.vision = None
            self._table.changes.touch()
            hardware = self._memory.snapshot(entry.engine)
            params = LaunchParams(**entry.options.model_dump(), host=entry.host, port=entry.port)
            try:
                try:
                    instance = await self._manager.start(
                        entry.spec,
                        entry.detected,
                        params,
                        instance_id=entry.id,
                        on_progress=lambda p: self._progressed(entry, p),
                        on_spawn=lambda p: self.spawned(entry, p),
                    )
                except BaseException:
                    # No load to compare with: the inventory read for it is not needed.
                    if hardware is not None:
                        hardware.cancel()
                    raise
            except EngineExitedError as exc:
                outcome = exc.outcome
            except EngineNotReadyError as exc:
                self._table.fail(entry, exc.detail)
                return
            except RoundhouseError as exc:
                self._table.fail(entry, exc.detail)
                return
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a bug must show as a failed instance, not vanish
                log.exception("Starting instance %s failed", entry.id)
                self._table.fail(entry, f"Roundhouse could not start the engine: {exc}")
                return
            else:
                entry.instance = instance
                # Read before READY shows, so whoever waits for READY sees whether it sees.
                key = await asyncio.to_thread(self._manager.engine_key, entry.id)
                entry.vision = await read_vision(entry.engine, entry.base_url, key)
                entry.status = InstanceStatus.READY
                entry.ready_at = time.time()
                self._table.changes.touch()
                # The manager answers a start with its engine running.
                assert instance.engine is not None
                entry.models = instance.engine.identity.model_ids
                entry.memory = await self._memory.read(
                    entry.engine, entry.options, instance.engine.process.log, hardware
                )
                self._table.changes.touch()
                outcome = await instance.engine.process.wait()
                entry.instance = None
                if outcome.by_us:
                    return
                await self._manager.forget(entry.id)
            entry.last_exit = outcome
            decision = entry.policy.decide(outcome)
            log.warning(
                "Instance %s (%s) ended: %s; %s",
                entry.id,
                entry.engine.value,
                outcome.message,
                decision.reason,
            )
            if not decision.restart or self.closing:
                self._table.fail(entry, f"The engine {outcome.message}.")
                return
            entry.status = InstanceStatus.RESTARTING
            entry.restarts += 1
            self._table.changes.touch()
            await asyncio.sleep(decision.delay_s)
            if not fixed_port:
                entry.port = free_port(entry.host, browser_blocked=keyless(entry.engine))

    async def stop(self, entry: InstanceEntry) -> None:
        """Stop the entry's engine, or its start if it is still starting; keep how it ended."""
        entry.status = InstanceStatus.STOPPING
        self._table.changes.touch()
        task, entry.task = entry.task, None
        if task is not None and not task.done() and entry.instance is None:
            # Still starting (or waiting to restart): start_engine stops what it spawned.
            await cancel_and_wait(task)
        with contextlib.suppress(NotFoundError):
            outcome = await self._manager.stop(entry.id)
            if outcome is not None:
                entry.last_exit = outcome
        if task is not None and not task.done():
            await task
        if entry.process is not None and entry.last_exit is None:
            entry.last_exit = entry.process.outcome()
        entry.pid = None
        self._table.changes.touch()

    def _progressed(self, entry: InstanceEntry, progress: Progress) -> None:
        _on_progress(entry, progress)
        self._table.changes.touch()

    def spawned(self, entry: InstanceEntry, process: EngineProcess) -> None:
        """The entry's engine process started: its pid and log are the entry's."""
        _on_spawn(entry, process)
        # Its output is read by a thread: each burst of lines is heard on the loop.
        process.log.on_lines = ThreadTouch(self._table.log_changes, asyncio.get_running_loop())
        self._table.changes.touch()


def _on_progress(entry: InstanceEntry, progress: Progress) -> None:
    entry.progress = progress
    if progress.phase == Phase.LOADING and entry.status == InstanceStatus.STARTING:
        entry.status = InstanceStatus.LOADING


def _on_spawn(entry: InstanceEntry, process: EngineProcess) -> None:
    entry.process = process
    entry.generation += 1
    entry.pid = process.pid
    entry.log_path = str(process.log.path)
