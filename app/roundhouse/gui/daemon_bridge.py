"""The GUI's one link to the daemon: runs client calls on qasync and reports by signals."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, QTimer, Signal

from roundhouse.api.daemon import DaemonStatus
from roundhouse.api.engines import EnginesOverview
from roundhouse.api.hardware import HardwareInventory
from roundhouse.api.instances import InstanceInfo
from roundhouse.api.settings import UiSettings
from roundhouse.base.paths import Home
from roundhouse.base.tasks import cancel_and_wait
from roundhouse.client import ClientError, DaemonClient, lifecycle
from roundhouse.gui.backoff import Backoff
from roundhouse.gui.bridge_feed import FeedMixin
from roundhouse.gui.bridge_instances import InstancesMixin
from roundhouse.gui.bridge_session import CLOSE_GRACE_S, SessionMixin
from roundhouse.gui.call import Call, Failure, Follow
from roundhouse.gui.calls.installs import InstallCalls
from roundhouse.gui.calls.ollama import OllamaCalls
from roundhouse.gui.calls.settings import SettingsCalls
from roundhouse.gui.connection_state import ConnectionState

__all__ = ["Backoff", "Call", "ConnectionState", "DaemonBridge", "Failure", "Follow"]


class DaemonBridge(SessionMixin, FeedMixin, InstancesMixin, QObject):
    """Owns the DaemonClient; widgets connect to these signals, never to the client.

    It is the app's store: what it holds (instances, settings, jobs, the gateway's models,
    engines, each engine's count of log lines, inventory) is kept current by the daemon's
    change feed, and each change is a signal; pages read it and listen instead of asking again.

    Its parts: the connection session (bridge_session), the store fed by the change feed
    (bridge_feed), the instance list and actions (bridge_instances), background calls and
    follows (bridge_tasks), and the calls of each concern by name (the calls package).
    """

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
    settings_changed = Signal(object)  # Settings, as saved by any client
    gateway_changed = Signal(object)  # GatewayModelList: served, loading, startable, active
    library_changed = Signal(object)  # LibraryList
    downloads_changed = Signal(object)  # DownloadQueueView
    jobs_changed = Signal(object)  # list[JobView]: every job the daemon keeps
    log_counts_changed = Signal(object)  # dict[str, LogCount]: lines each engine wrote, by id
    peers_changed = Signal(object)  # PeersView: the paired machines as each last told
    updates_changed = Signal(object)  # UpdateStatus: the update check answered or was turned on
    feed_reset = Signal()  # what was heard may be stale: followers load their kind again
    feed_applied = Signal(object)  # int: the seq of the event just applied (past 32 bits)

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
        self._borrowed: Counter[DaemonClient] = Counter()
        self._state = ConnectionState.DISCONNECTED
        self._last_message = ""
        self._last_sample_t: float | None = None
        self.status: DaemonStatus | None = None
        self.inventory: HardwareInventory | None = None
        self.engines: EnginesOverview | None = None
        self.instances: list[InstanceInfo] | None = None
        self.ui_settings = UiSettings()
        self._init_feed()
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

    @property
    def gateway_url(self) -> str | None:
        """The OpenAI-compatible base URL apps use (the daemon's /v1); None while offline."""
        return f"{self._client.base_url}/v1" if self._client is not None else None

    def when_connected(self, slot: Callable[[], object]) -> None:
        """Call `slot` on each connection, and once soon when already connected: a page built
        the first time it is shown (MainWindow.add_page) catches up with a connection made
        before it existed."""
        self.connected.connect(slot)
        if self.state == ConnectionState.CONNECTED:
            QTimer.singleShot(0, self, lambda: self._still_connected(slot))

    def _still_connected(self, slot: Callable[[], object]) -> None:
        if self.state == ConnectionState.CONNECTED:
            slot()

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

    def set_ui_settings(self, ui: UiSettings) -> None:
        self.ui_settings = ui
        self.ui_settings_changed.emit(ui)

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

    # What the daemon knows of the hardware and the engines, loaded on demand.

    async def _refresh_inventory(self) -> None:
        inventory = await self._load(lambda c: c.hardware(refresh=True), self.refresh_failed)
        if inventory is not None:
            self._set_inventory(inventory)

    async def _load_engines(self, *, refresh: bool) -> None:
        engines = await self._load(lambda c: c.engines(refresh=refresh), self.engines_failed)
        if engines is not None:
            self._set_engines(engines)

    def _set_inventory(self, inventory: HardwareInventory) -> None:
        self.inventory = inventory
        self.inventory_changed.emit(inventory)

    def _set_engines(self, engines: EnginesOverview) -> None:
        if engines == self.engines:
            # A refresh's answer and the change feed's event bring the same detection.
            return
        self.engines = engines
        self.engines_changed.emit(engines)
