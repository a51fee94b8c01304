"""The bridge's connection session: connect, load, follow the samples and the change feed;
on loss wait and reconnect (the feed resumes where it broke)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING

from roundhouse.base.tasks import cancel_and_wait
from roundhouse.client import ClientError, DaemonClient, DaemonNotRunningError, lifecycle
from roundhouse.gui.bridge_tasks import TasksMixin
from roundhouse.gui.connection_state import ConnectionState

if TYPE_CHECKING:
    from PySide6.QtCore import SignalInstance

    from roundhouse.api.daemon import DaemonStatus
    from roundhouse.api.hardware import HardwareInventory
    from roundhouse.api.settings import Settings, UiSettings
    from roundhouse.base.paths import Home
    from roundhouse.gui.backoff import Backoff

log = logging.getLogger(__name__)

# Closing the bridge (the app quitting) waits this long for a task that will not end.
CLOSE_GRACE_S = 10.0


class SessionMixin(TasksMixin):
    """Keeps one session task connected to the daemon (mixed into DaemonBridge)."""

    if TYPE_CHECKING:
        # Provided by DaemonBridge.
        state_changed: SignalInstance
        connected: SignalInstance
        disconnected: SignalInstance
        ui_settings_changed: SignalInstance
        settings_changed: SignalInstance
        history_loaded: SignalInstance
        sample_received: SignalInstance
        home: Home
        status: DaemonStatus | None
        ui_settings: UiSettings
        settings_full: Settings | None
        _backoff: Backoff
        _session: asyncio.Task[None] | None
        _last_message: str
        _last_sample_t: float | None

        def _set_inventory(self, inventory: HardwareInventory) -> None: ...

        # Provided by FeedMixin.
        async def _follow_feed(self) -> None: ...

    def _restart_session(self, *, spawn: bool) -> None:
        previous = self._session
        if previous is not None:
            previous.cancel()
        self._session = self._spawn(self._run_session(spawn, previous))

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
                await self._follow_streams()
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
        # The store's settings, kept from here by the change feed's settings events.
        self.settings_full = settings
        self.settings_changed.emit(settings)
        self.ui_settings = settings.ui
        self.ui_settings_changed.emit(settings.ui)
        self._set_inventory(inventory)
        fresh = [s for s in history.samples if self._is_new(s.t)]
        if fresh:
            self._last_sample_t = fresh[-1].t
            self.history_loaded.emit(fresh)

    async def _follow_streams(self) -> None:
        """Follow the hardware samples and the change feed until either ends or breaks; the
        other is ended with it, and the session reconnects both."""
        streams = [
            asyncio.ensure_future(self._pump_samples()),
            asyncio.ensure_future(self._follow_feed()),
        ]
        try:
            done, _ = await asyncio.wait(streams, return_when=asyncio.FIRST_COMPLETED)
        finally:
            # Both are cancelled before either is waited for: a session cancelled again
            # while it waits must not leave one running.
            for stream in streams:
                stream.cancel()
            await asyncio.gather(
                *(cancel_and_wait(s, reraise=False, give_up_s=CLOSE_GRACE_S) for s in streams)
            )
        for stream in done:
            stream.result()  # its failure (or its end) is the session's to report

    async def _pump_samples(self) -> None:
        assert self._client is not None
        async with contextlib.aclosing(self._client.stream_samples()) as stream:
            async for sample in stream:
                if self._is_new(sample.t):
                    self._last_sample_t = sample.t
                    self.sample_received.emit(sample)

    async def _close_client(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await self._retire(client)

    def _is_new(self, t: float) -> bool:
        return self._last_sample_t is None or t > self._last_sample_t

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
