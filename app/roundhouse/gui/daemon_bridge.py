"""The GUI's one link to the daemon: runs client calls on qasync and reports by signals."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import weakref
from collections.abc import AsyncGenerator, Awaitable, Callable, Coroutine
from typing import Any, TypeVar

from PySide6.QtCore import QObject, QTimer, Signal

from roundhouse.api.daemon import DaemonStatus
from roundhouse.api.engines import EnginesOverview
from roundhouse.api.hardware import HardwareInventory
from roundhouse.api.instances import (
    AddEndpointRequest,
    InstanceInfo,
    InstanceList,
    InstanceLogs,
    Preset,
    PresetList,
    StartRequest,
)
from roundhouse.api.settings import UiSettings
from roundhouse.base.paths import Home
from roundhouse.base.tasks import cancel_and_wait
from roundhouse.client import ClientError, DaemonClient, DaemonNotRunningError, lifecycle
from roundhouse.gui.call import NOT_CONNECTED, Call, Failure, Follow
from roundhouse.gui.connection_state import ConnectionState
from roundhouse.gui.daemon_calls import InstallCalls, OllamaCalls, SettingsCalls

log = logging.getLogger(__name__)

__all__ = ["Backoff", "Call", "ConnectionState", "DaemonBridge", "Failure", "Follow"]

T = TypeVar("T")

# The instance list is polled this often while someone watches it (the Engines page, a log
# view): one small GET a second. Nobody watching: it is fetched on connect and after actions.
INSTANCES_PERIOD_S = 1.0
# A daemon that fails to answer is asked less and less often, down to this.
INSTANCES_MAX_DELAY_S = 10.0
# Closing the bridge (the app quitting) waits this long for a task that will not end.
CLOSE_GRACE_S = 10.0


class Backoff:
    """Waits between reconnection attempts: doubling from `first_s` up to `max_s`."""

    def __init__(self, first_s: float = 0.5, max_s: float = 10.0) -> None:
        self.first_s = first_s
        self.max_s = max_s
        self._next = first_s

    def next_delay(self) -> float:
        delay = self._next
        self._next = min(self._next * 2, self.max_s)
        return delay

    def reset(self) -> None:
        self._next = self.first_s


class DaemonBridge(QObject):
    """Owns the DaemonClient; widgets connect to these signals, never to the client."""

    state_changed = Signal(str)  # a ConnectionState value
    connected = Signal()
    disconnected = Signal(str)  # why, in words
    ui_settings_changed = Signal(object)  # UiSettings
    inventory_changed = Signal(object)  # HardwareInventory
    history_loaded = Signal(object)  # list[HardwareSample], oldest first
    sample_received = Signal(object)  # HardwareSample
    refresh_failed = Signal(str)
    engines_changed = Signal(object)  # EnginesOverview
    engines_failed = Signal(str)  # why the engines were not loaded, in words
    instances_changed = Signal(object)  # list[InstanceInfo], the daemon's order
    instances_failed = Signal(str)  # why the instances were not listed, in words

    def __init__(
        self, home: Home, *, auto_start: bool = True, backoff: Backoff | None = None
    ) -> None:
        super().__init__()
        self.home = home
        self.auto_start = auto_start
        self._backoff = backoff or Backoff()
        self._client: DaemonClient | None = None
        self._session: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._state = ConnectionState.DISCONNECTED
        self._last_message = ""
        self._last_sample_t: float | None = None
        self.status: DaemonStatus | None = None
        self.inventory: HardwareInventory | None = None
        self.engines: EnginesOverview | None = None
        self.instances: list[InstanceInfo] | None = None
        self.ui_settings = UiSettings()
        self._instance_watchers: weakref.WeakSet[QObject] = weakref.WeakSet()
        self._instances_poller: asyncio.Task[None] | None = None
        self._instances_poke: asyncio.Event | None = None
        # Bumped by every change made here (a start, a stop): a listing that was asked for
        # before it is older than what is shown, and is dropped.
        self._instances_generation = 0
        self._instances_error = ""
        # The calls of each concern, by name: `bridge.installs.start(...)`, `bridge.ollama...`.
        self.installs = InstallCalls(self)
        self.ollama = OllamaCalls(self)
        self.settings = SettingsCalls(self)

    @property
    def state(self) -> ConnectionState:
        return self._state

    @property
    def message(self) -> str:
        """Why the bridge is not connected ('' when it is)."""
        return self._last_message

    # Commands from widgets: each returns at once and works in the background.

    def start(self) -> None:
        """Connect, starting the daemon first when `auto_start` allows it."""
        self._restart_session(spawn=self.auto_start)

    def retry(self) -> None:
        self._restart_session(spawn=False)

    def start_daemon(self) -> None:
        self._restart_session(spawn=True)

    def refresh_inventory(self) -> None:
        self._spawn(self._refresh_inventory())

    def refresh_engines(self) -> None:
        """Ask the daemon to look for engines again; answers by engines_changed/_failed."""
        self._spawn(self._load_engines(refresh=True))

    def reload_engines(self) -> None:
        """Fetch what the daemon knows of the engines now (after an install it detected)."""
        self._spawn(self._load_engines(refresh=False))

    def set_ui_settings(self, ui: UiSettings) -> None:
        self.ui_settings = ui
        self.ui_settings_changed.emit(ui)

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

    async def stop_daemon(self) -> str | None:
        """Stop the daemon and disconnect; the failure in words, or None."""
        await self._end_session()
        try:
            await lifecycle.stop_daemon(self.home)
        except ClientError as exc:
            return str(exc)
        return None

    async def aclose(self) -> None:
        """End every task and close the client; the bridge cannot be used afterwards."""
        await self._end_session()
        tasks = list(self._tasks)
        await asyncio.gather(
            *(cancel_and_wait(t, reraise=False, give_up_s=CLOSE_GRACE_S) for t in tasks)
        )

    # The connection session: connect, load, stream; on loss wait and reconnect.

    def _restart_session(self, *, spawn: bool) -> None:
        previous = self._session
        if previous is not None:
            previous.cancel()
        self._session = self._spawn(self._run_session(spawn, previous))
        if self._instances_poller is None or self._instances_poller.done():
            self._instances_poke = asyncio.Event()
            self._instances_poller = self._spawn(self._poll_instances(self._instances_poke))

    async def _end_session(self) -> None:
        session, self._session = self._session, None
        if session is not None:
            await cancel_and_wait(session, give_up_s=CLOSE_GRACE_S)
        await self._close_client()

    async def _run_session(self, spawn: bool, previous: asyncio.Task[None] | None) -> None:
        if previous is not None:
            # The old session must be gone (and its client closed) before a new one starts;
            # this one, cancelled meanwhile, ends here rather than connect.
            await asyncio.wait({previous})
        self._backoff.reset()
        first = True
        while True:
            try:
                await self._connect(spawn, announce=first)
                await self._pump_samples()
                message = "The daemon ended the live stream (it may be stopping or restarting)."
            except (ClientError, OSError) as exc:
                message = str(exc)
            except Exception as exc:
                # Anything else (a library failing as a stream breaks) must not end the
                # session for good: the app would never reconnect. Say it and retry.
                log.exception("The connection to the daemon failed unexpectedly")
                message = f"The connection to the daemon failed ({type(exc).__name__}: {exc})."
            finally:
                await self._close_client()
            # Only the first attempt may start a daemon: one the user stopped stays stopped.
            spawn = first = False
            delay = self._backoff.next_delay()
            self._set_disconnected(message)
            await asyncio.sleep(delay)

    async def _connect(self, spawn: bool, *, announce: bool) -> None:
        # Quiet automatic retries: the banner and the tray keep the last failure shown.
        if announce:
            self._set_state(ConnectionState.CONNECTING)
        status = await lifecycle.probe_status(self.home)
        if not status.running and spawn:
            self._set_state(ConnectionState.STARTING)
            status = await lifecycle.ensure_daemon(self.home)
        if not status.running:
            raise DaemonNotRunningError(status.message or "The daemon is not running.")
        # A connection per request: the app's requests are few, a loopback connect costs
        # a tenth of a millisecond, and a request cancelled while it connected (the page
        # closed) can then never leave a shared connection locked for the others.
        client = DaemonClient.for_home(self.home, reuse_connections=False)
        self._client = client
        settings = await client.settings()
        inventory = await client.hardware()
        history = await client.samples(since=self._last_sample_t)
        self.status = status
        self._backoff.reset()
        self._last_message = ""
        self._set_state(ConnectionState.CONNECTED)
        self.connected.emit()
        self.ui_settings = settings.ui
        self.ui_settings_changed.emit(settings.ui)
        self._set_inventory(inventory)
        # Engine detection can take seconds (it asks each tool its version): it loads on its
        # own, and a daemon that cannot list engines still serves everything else.
        self._spawn(self._load_engines(refresh=False))
        self.poll_instances_now()
        fresh = [s for s in history.samples if self._is_new(s.t)]
        if fresh:
            self._last_sample_t = fresh[-1].t
            self.history_loaded.emit(fresh)

    async def _pump_samples(self) -> None:
        assert self._client is not None
        async with contextlib.aclosing(self._client.stream_samples()) as stream:
            async for sample in stream:
                if self._is_new(sample.t):
                    self._last_sample_t = sample.t
                    self.sample_received.emit(sample)

    async def _refresh_inventory(self) -> None:
        client = self._client
        if client is None:
            self.refresh_failed.emit("Not connected to the daemon, so nothing was refreshed.")
            return
        try:
            inventory = await client.hardware(refresh=True)
        except ClientError as exc:
            self.refresh_failed.emit(str(exc))
            return
        self._set_inventory(inventory)

    async def _load_engines(self, *, refresh: bool) -> None:
        client = self._client
        if client is None:
            self.engines_failed.emit("Not connected to the daemon, so nothing was refreshed.")
            return
        try:
            engines = await client.engines(refresh=refresh)
        except ClientError as exc:
            self.engines_failed.emit(str(exc))
            return
        self._set_engines(engines)

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

    def call(
        self,
        what: str,
        request: Callable[[DaemonClient], Awaitable[T]],
        on_success: Callable[[T], None] | None = None,
    ) -> Call:
        """Run one client request in the background (for the calls in daemon_calls)."""
        return self._call(what, request, on_success)

    def follow(
        self, what: str, stream: Callable[[DaemonClient], AsyncGenerator[T, None]]
    ) -> Follow:
        """Follow a stream of the client in the background; `Follow.cancel()` closes it.

        It always answers from the loop, never before this returns: the caller connects first.
        """
        follow = Follow(what)

        async def run() -> None:
            client = self._client
            if client is None or self._state != ConnectionState.CONNECTED:
                follow.fail(NOT_CONNECTED)
                return
            try:
                async with contextlib.aclosing(stream(client)) as items:
                    async for item in items:
                        follow.receive(item)
            except ClientError as exc:
                follow.fail(Failure.from_error(exc))
                return
            except asyncio.CancelledError:
                follow.mark_cancelled()
                raise
            follow.end()

        task = self._try_spawn(run())
        if task is None:
            QTimer.singleShot(0, lambda: follow.fail(NOT_CONNECTED))
            return follow
        # Cancelled before it first ran, `run` never sees the cancellation: the follower
        # still hears that it ended (ends come once, so this is a no-op otherwise).
        task.add_done_callback(lambda t: follow.mark_cancelled() if t.cancelled() else None)
        follow.bind_cancel(task.cancel)
        return follow

    def _call(
        self,
        what: str,
        request: Callable[[DaemonClient], Awaitable[T]],
        on_success: Callable[[T], None] | None = None,
    ) -> Call:
        """Run `request` with the client in the background; the Call answers once.

        It always answers from the loop, never before this returns: the caller connects first.
        """
        call = Call(what)

        async def run() -> None:
            client = self._client
            if client is None or self._state != ConnectionState.CONNECTED:
                call.fail(NOT_CONNECTED)
                return
            try:
                result = await request(client)
            except ClientError as exc:
                call.fail(Failure.from_error(exc))
                return
            if on_success is not None:
                on_success(result)
            call.succeed(result)

        if self._try_spawn(run()) is None:
            QTimer.singleShot(0, lambda: call.fail(NOT_CONNECTED))
        return call

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

    async def _close_client(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            try:
                await client.aclose()
            except Exception:
                # Closing what already broke may fail too; nothing is left to do with it.
                log.debug("Closing the daemon client failed", exc_info=True)

    # Helpers.

    def _is_new(self, t: float) -> bool:
        return self._last_sample_t is None or t > self._last_sample_t

    def _set_inventory(self, inventory: HardwareInventory) -> None:
        self.inventory = inventory
        self.inventory_changed.emit(inventory)

    def _set_instances(self, instances: list[InstanceInfo]) -> None:
        # Emitted on every listing, changed or not: uptimes move and views repaint per second.
        self.instances = instances
        self.instances_changed.emit(instances)

    def _report_instances_failure(self, message: str) -> None:
        if message != self._instances_error:
            self._instances_error = message
            self.instances_failed.emit(message)

    def _set_engines(self, engines: EnginesOverview) -> None:
        self.engines = engines
        self.engines_changed.emit(engines)

    def _set_state(self, state: ConnectionState) -> None:
        if state != self._state:
            self._state = state
            self.state_changed.emit(state.value)

    def _set_disconnected(self, message: str) -> None:
        # The same failure on every quiet retry is reported once, not every few seconds;
        # an attempt the user asked for always gets its answer.
        changed = message != self._last_message or self._state != ConnectionState.DISCONNECTED
        self._set_state(ConnectionState.DISCONNECTED)
        if changed:
            self._last_message = message
            self.disconnected.emit(message)

    def _try_spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any] | None:
        """Like `_spawn`, but None when no asyncio loop runs any more (the app is closing; a
        widget's timer fired after its loop ended): the request is dropped, and its Call
        answers "not connected" from Qt's own loop, which still runs."""
        try:
            return self._spawn(coro)
        except RuntimeError:
            coro.close()
            return None

    def _spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._on_task_done)
        return task

    def _on_task_done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("A background task of the GUI failed", exc_info=task.exception())
