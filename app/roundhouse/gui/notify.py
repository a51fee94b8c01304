"""The app's notifications: what the change feed tells, said through the OS, once.

The notifier listens to the bridge's store (instances, downloads, the update check), lets
`FeedNotices` say what is news, and drops the kinds the user turned off and, unless the
user chose "always", everything while a Roundhouse window is on screen. What is heard
within a short while is told as one notification, and the same words are not told again
within a minute. It goes one way only: the tray's message where there is a tray that shows
messages, else org.freedesktop.Notifications on the session bus (Linux), else the window's
status bar.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from enum import StrEnum
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, QTimer, Signal
from PySide6.QtWidgets import QSystemTrayIcon

from roundhouse.api.settings import NotificationSettings, NotificationWhen
from roundhouse.gui.notify_dbus import NotifyError, notify, session_bus_address
from roundhouse.gui.notify_words import FeedNotices, Notice, coalesce

if TYPE_CHECKING:
    from roundhouse.api.downloads import DownloadQueueView
    from roundhouse.api.instances import InstanceInfo
    from roundhouse.api.updates import UpdateStatus
    from roundhouse.gui.daemon_bridge import DaemonBridge
    from roundhouse.gui.main_window import MainWindow
    from roundhouse.gui.tray import Tray

log = logging.getLogger(__name__)

APP_NAME = "Roundhouse"
# Notices heard within this many milliseconds are told together.
GATHER_MS = 1500
# The same words are not told again within this many seconds (an engine that crashes in a
# loop is told once a minute, not at every restart).
REPEAT_S = 60.0
SHOWN_MS = 10_000


class Route(StrEnum):
    TRAY = "tray"
    DBUS = "dbus"
    STATUS_BAR = "status bar"


class Notifier(QObject):
    """Built once by the composition root; `route` says where its notifications go."""

    # (route, title, text) of each notification as it is handed over.
    told = Signal(str, str, str)

    def __init__(
        self,
        bridge: DaemonBridge,
        window: MainWindow,
        tray: Tray | None,
        *,
        dbus_address: str | None = None,
        gather_ms: int = GATHER_MS,
    ) -> None:
        super().__init__()
        self._bridge = bridge
        self._window = window
        self._tray = tray
        self._dbus_address = dbus_address
        self._words = FeedNotices()
        self._pending: list[Notice] = []
        self._last_told: dict[str, float] = {}
        self._sending: set[asyncio.Task[None]] = set()
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(gather_ms)
        self._timer.timeout.connect(self._flush)
        bridge.instances_changed.connect(self._on_instances)
        bridge.downloads_changed.connect(self._on_downloads)
        bridge.updates_changed.connect(self._on_updates)
        if tray is not None:
            # The user clicked what was told: show what it is about.
            tray.icon.messageClicked.connect(window.bring_to_front)

    @staticmethod
    def for_platform(bridge: DaemonBridge, window: MainWindow, tray: Tray | None) -> Notifier:
        """The tray when there is one, else the session bus on Linux."""
        address = session_bus_address() if sys.platform.startswith("linux") else None
        return Notifier(bridge, window, tray, dbus_address=address)

    @property
    def route(self) -> Route:
        if self._tray is not None and self._tray.icon.supportsMessages():
            return Route.TRAY
        if self._dbus_address is not None:
            return Route.DBUS
        return Route.STATUS_BAR

    # -- what is news -------------------------------------------------------------------

    def _on_instances(self, instances: list[InstanceInfo]) -> None:
        self._hear(self._words.instances(instances))

    def _on_downloads(self, queue: DownloadQueueView) -> None:
        self._hear(self._words.downloads(queue))

    def _on_updates(self, status: UpdateStatus) -> None:
        self._hear(self._words.updates(status))

    def _settings(self) -> NotificationSettings:
        full = self._bridge.settings_full
        return full.notifications if full is not None else NotificationSettings()

    def _window_on_screen(self) -> bool:
        return self._window.isVisible() and not self._window.isMinimized()

    def _hear(self, notices: list[Notice]) -> None:
        # Read at each event, so a setting saved anywhere applies to the next one.
        settings = self._settings()
        if settings.when == NotificationWhen.HIDDEN and self._window_on_screen():
            return
        wanted = [n for n in notices if getattr(settings, n.kind.value)]
        if not wanted:
            return
        self._pending.extend(wanted)
        if not self._timer.isActive():
            self._timer.start()

    # -- telling ------------------------------------------------------------------------

    def _flush(self) -> None:
        now = time.monotonic()
        fresh = [
            n for n in self._pending if now - self._last_told.get(n.text, -REPEAT_S) >= REPEAT_S
        ]
        self._pending = []
        told = coalesce(fresh)
        if told is None:
            return
        for notice in fresh:
            self._last_told[notice.text] = now
        title, text = told
        route = self.route
        if route == Route.TRAY:
            assert self._tray is not None
            self._tray.icon.showMessage(
                title, text, QSystemTrayIcon.MessageIcon.Information, SHOWN_MS
            )
        elif route == Route.DBUS:
            assert self._dbus_address is not None
            task = asyncio.ensure_future(self._send_dbus(self._dbus_address, title, text))
            self._sending.add(task)
            task.add_done_callback(self._sending.discard)
        else:
            self._window.statusBar().showMessage(f"{title}: {text}", SHOWN_MS)
        self.told.emit(route.value, title, text)

    async def _send_dbus(self, address: str, title: str, text: str) -> None:
        try:
            await asyncio.to_thread(notify, address, APP_NAME, title, text, timeout_ms=SHOWN_MS)
        except NotifyError as exc:
            # Told where the user will see it later rather than lost.
            log.warning("Notification not shown: %s", exc)
            self._window.statusBar().showMessage(f"{title}: {text}", SHOWN_MS)
