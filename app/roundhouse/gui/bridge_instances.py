"""The bridge's engine instances: the list it polls while watched, one Call per action."""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from collections.abc import Awaitable
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject

from roundhouse.api.instances import (
    AddEndpointRequest,
    InstanceInfo,
    InstanceList,
    InstanceLogs,
    Preset,
    PresetList,
    StartRequest,
)
from roundhouse.client import ClientError, DaemonClient
from roundhouse.gui.bridge_tasks import TasksMixin
from roundhouse.gui.call import Call, Failure
from roundhouse.gui.connection_state import ConnectionState

if TYPE_CHECKING:
    from PySide6.QtCore import SignalInstance

# The instance list is polled this often while someone watches it (the Engines page, a log
# view): one small GET a second. Nobody watching: it is fetched on connect and after actions.
INSTANCES_PERIOD_S = 1.0
# A daemon that fails to answer is asked less and less often, down to this.
INSTANCES_MAX_DELAY_S = 10.0


class InstancesMixin(TasksMixin):
    """Lists the daemon's instances and acts on them (mixed into DaemonBridge)."""

    if TYPE_CHECKING:
        # Provided by DaemonBridge.
        instances_changed: SignalInstance
        instances_failed: SignalInstance
        instances: list[InstanceInfo] | None

    def _init_instances(self) -> None:
        """The poller's state, none running yet (called by DaemonBridge.__init__)."""
        self._instance_watchers: weakref.WeakSet[QObject] = weakref.WeakSet()
        self._instances_poller: asyncio.Task[None] | None = None
        self._instances_poke: asyncio.Event | None = None
        # Bumped by every change made here (a start, a stop): a listing that was asked for
        # before it is older than what is shown, and is dropped.
        self._instances_generation = 0
        self._instances_error = ""

    # Instances: a poller that lists them, and one Call per action.

    def watch_instances(self, watcher: QObject, watching: bool = True) -> None:
        """Poll the instance list every second while at least one watcher wants it."""
        if watching:
            self._instance_watchers.add(watcher)
            self.poll_instances_now()
        else:
            self._instance_watchers.discard(watcher)

    @property
    def watching_instances(self) -> bool:
        return len(self._instance_watchers) > 0

    def poll_instances_now(self) -> None:
        if self._instances_poke is not None:
            self._instances_poke.set()

    def start_instance(self, request: StartRequest) -> Call:
        """Answers with the new InstanceInfo (status "starting") once the daemon accepted it."""

        def accepted(info: InstanceInfo) -> None:
            self._put_instance(info)

        return self._call("start an engine", lambda c: c.start_instance(request), accepted)

    def stop_instance(self, instance_id: str, *, force: bool = False) -> Call:
        """Stop it (a failed one is dismissed, an endpoint detached); answers with its last
        InstanceInfo. `force` stops an engine Roundhouse did not start (the user agreed)."""

        def stopped(info: InstanceInfo) -> None:
            self._drop_instance(info.id)

        def stop(client: DaemonClient) -> Awaitable[InstanceInfo]:
            return client.stop_instance(instance_id, force=force)

        return self._call("stop an engine", stop, stopped)

    def scan_instances(self) -> Call:
        """Look for engines running without Roundhouse; answers with the whole InstanceList."""

        def scanned(listed: InstanceList) -> None:
            self._instances_generation += 1
            self._set_instances(listed.instances)

        return self._call("look for running engines", lambda c: c.scan_instances(), scanned)

    def add_endpoint(self, request: AddEndpointRequest) -> Call:
        """Attach an OpenAI-compatible server; answers with its InstanceInfo."""
        return self._call("attach a server", lambda c: c.add_endpoint(request), self._put_instance)

    def allow_presets(self, instance_id: str, allowed: bool) -> Call:
        """Let an engine Roundhouse did not start serve preset models, or not; answers with
        its InstanceInfo."""

        def change(client: DaemonClient) -> Awaitable[InstanceInfo]:
            return client.allow_presets(instance_id, allowed)

        return self._call("change what an engine serves", change, self._put_instance)

    def instance_metrics(self, instance_id: str) -> Call:
        """Answers with InstanceMetrics; a 404 problem for engines that serve none."""
        return self._call("read an engine's metrics", lambda c: c.instance_metrics(instance_id))

    def restart_instance(self, instance_id: str) -> Call:
        return self._call(
            "restart an engine", lambda c: c.restart_instance(instance_id), self._put_instance
        )

    def instance_logs(self, instance_id: str, since: int = 0, limit: int = 500) -> Call:
        """Answers with InstanceLogs: lines after `since`; pass its `next` to follow."""

        def fetch(client: DaemonClient) -> Awaitable[InstanceLogs]:
            return client.instance_logs(instance_id, since=since, limit=limit)

        return self._call("read an engine's log", fetch)

    def presets(self, engine: str, model: str) -> Call:
        """Answers with the PresetList saved for this engine and model."""

        def fetch(client: DaemonClient) -> Awaitable[PresetList]:
            return client.presets(engine=engine, model=model)

        return self._call("list presets", fetch)

    def save_preset(self, preset: Preset) -> Call:
        return self._call("save a preset", lambda c: c.save_preset(preset))

    def delete_preset(self, engine: str, model: str, name: str) -> Call:
        return self._call("delete a preset", lambda c: c.delete_preset(engine, model, name))

    # The poller, and the list as actions change it.

    def _ensure_instances_poller(self) -> None:
        """Start the poller unless it runs: it outlives sessions (it waits while disconnected)."""
        if self._instances_poller is None or self._instances_poller.done():
            self._instances_poke = asyncio.Event()
            self._instances_poller = self._spawn(self._poll_instances(self._instances_poke))

    async def _poll_instances(self, poke: asyncio.Event) -> None:
        """List the instances while connected: every second while watched, else when poked.

        Failures back off (1, 2, 4 ... 10 s) and are reported once until the answer changes;
        a lost connection is the session's to notice, and the poller waits for it then.
        """
        failures = 0
        while True:
            poke.clear()
            client = self._client
            if client is not None and self._state == ConnectionState.CONNECTED:
                generation = self._instances_generation
                try:
                    listed = await client.instances()
                except ClientError as exc:
                    failures += 1
                    self._report_instances_failure(str(Failure.from_error(exc)))
                else:
                    failures = 0
                    self._instances_error = ""
                    if generation == self._instances_generation:
                        self._set_instances(listed.instances)
            delay: float | None = None
            if self._instance_watchers and self._state == ConnectionState.CONNECTED:
                delay = min(INSTANCES_PERIOD_S * 2**failures, INSTANCES_MAX_DELAY_S)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(poke.wait(), delay)

    def _put_instance(self, info: InstanceInfo) -> None:
        """Show an instance as an action answered, without waiting for the next listing."""
        current = list(self.instances or [])
        for index, known in enumerate(current):
            if known.id == info.id:
                current[index] = info
                break
        else:
            current.append(info)
        self._instances_generation += 1
        self._set_instances(current)
        self.poll_instances_now()

    def _drop_instance(self, instance_id: str) -> None:
        self._instances_generation += 1
        self._set_instances([i for i in self.instances or [] if i.id != instance_id])
        self.poll_instances_now()

    def _set_instances(self, instances: list[InstanceInfo]) -> None:
        # Emitted on every listing, changed or not: uptimes move and views repaint per second.
        self.instances = instances
        self.instances_changed.emit(instances)

    def _report_instances_failure(self, message: str) -> None:
        if message != self._instances_error:
            self._instances_error = message
            self.instances_failed.emit(message)
