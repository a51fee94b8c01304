"""Start the desktop app: the window at once, the daemon connection in the background."""

from __future__ import annotations

import signal
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QApplication, QSystemTrayIcon

from roundhouse.base.paths import Home
from roundhouse.gui.connection_state import ConnectionState
from roundhouse.gui.icons import app_icon, is_dark, stylesheet
from roundhouse.gui.main_window import MainWindow
from roundhouse.gui.pyside_tax import skip_feature_source_scan

# Only Qt and the window shell load before the first paint; asyncio, qasync, the HTTP
# client (httpx, pydantic) and the charts (pyqtgraph, numpy) load right after it (~0.4 s).
if TYPE_CHECKING:
    from roundhouse.gui.active_model import ActiveModel
    from roundhouse.gui.daemon_bridge import DaemonBridge
    from roundhouse.gui.quick_chat import QuickChat
    from roundhouse.gui.quit_flow import QuitController
    from roundhouse.gui.tray import Tray

APP_NAME = "Roundhouse"


@dataclass
class Ui:
    """Everything the composition root builds; tests and the screenshot script use it too."""

    bridge: DaemonBridge
    window: MainWindow
    quitter: QuitController
    tray: Tray | None
    active_model: ActiveModel | None = None
    quick_chat: QuickChat | None = None


def application() -> QApplication:
    """The process's QApplication, named and styled (created on first use)."""
    skip_feature_source_scan()
    existing = QApplication.instance()
    app = existing if isinstance(existing, QApplication) else QApplication(sys.argv[:1])
    app.setApplicationName(APP_NAME)
    app.setOrganizationName(APP_NAME)
    app.setDesktopFileName("roundhouse")
    app.setWindowIcon(app_icon())
    app.setStyleSheet(stylesheet())
    return app


def build_ui(
    app: QApplication,
    home: Home,
    *,
    auto_start: bool = True,
    tray_available: bool | None = None,
    geometry_store: QSettings | None = None,
    window: MainWindow | None = None,
) -> Ui:
    """Build the bridge, window, pages and tray; nothing talks to the daemon yet."""
    from roundhouse.gui.active_model import ActiveModel
    from roundhouse.gui.daemon_bridge import DaemonBridge
    from roundhouse.gui.pages.bench_page import BenchPage
    from roundhouse.gui.pages.chat_page import ChatPage
    from roundhouse.gui.pages.engines_page import EnginesPage
    from roundhouse.gui.pages.hardware_page import HardwarePage
    from roundhouse.gui.pages.models_page import ModelsPage
    from roundhouse.gui.pages.monitor_page import MonitorPage
    from roundhouse.gui.pages.ollama_page import OllamaPage
    from roundhouse.gui.pages.settings_page import SettingsPage
    from roundhouse.gui.quick_chat import QuickChat
    from roundhouse.gui.quit_flow import QuitController
    from roundhouse.gui.tray import Tray

    if tray_available is None:
        tray_available = QSystemTrayIcon.isSystemTrayAvailable()
    if window is None:
        window = MainWindow(geometry_store=geometry_store)
    bridge = DaemonBridge(home, auto_start=auto_start)
    window.attach(bridge)
    window.add_page(HardwarePage(bridge), HardwarePage.title)
    window.add_page(EnginesPage(bridge), EnginesPage.title)
    window.add_page(ModelsPage(bridge), ModelsPage.title)
    window.add_page(OllamaPage(bridge), OllamaPage.title)
    window.add_page(ChatPage(bridge), ChatPage.title)
    window.add_page(BenchPage(bridge), BenchPage.title)
    window.add_page(MonitorPage(bridge), MonitorPage.title)
    window.add_page(SettingsPage(bridge), SettingsPage.title)
    quitter = QuitController(bridge, app.quit, window)
    window.quit_requested.connect(quitter.request_quit)
    active_model = ActiveModel(bridge)
    # The quick chat window is built on first use; its shortcut (Ctrl+Shift+Space) now.
    quick_chat = QuickChat(bridge, window, active_model, geometry_store=geometry_store)
    tray = (
        Tray(
            bridge,
            window,
            quitter,
            dark_panel=is_dark(app.palette()),
            active_model=active_model,
            open_quick_chat=quick_chat.open,
        )
        if tray_available
        else None
    )
    window.hides_to_tray = lambda: tray is not None
    # With a tray, closing the window hides it; without one, closing it quits.
    app.setQuitOnLastWindowClosed(tray is None)
    return Ui(bridge, window, quitter, tray, active_model, quick_chat)


async def shutdown(ui: Ui) -> None:
    """After the Qt loop ends: stop the daemon if the user chose to, then close the client."""
    if ui.tray is not None:
        ui.tray.icon.hide()
    if ui.quick_chat is not None:
        ui.quick_chat.close()
    ui.window.hide()
    if ui.quitter.stop_daemon_on_exit and ui.bridge.state == ConnectionState.CONNECTED:
        problem = await ui.bridge.stop_daemon()
        if problem:
            # The window is gone by now: the log (and the terminal) is the place left to say it.
            import logging

            logging.getLogger(__name__).error("The daemon was not stopped: %s", problem)
    await ui.bridge.aclose()


def run_app(home: Home, *, tray: bool = False) -> int:
    """Run the desktop app until the user quits; the daemon it started serves on.

    `tray` (Start at login) shows only the tray icon, where the platform has a tray."""
    app = application()
    window = MainWindow(geometry_store=QSettings())
    hidden = tray and QSystemTrayIcon.isSystemTrayAvailable()
    if not hidden:
        window.show()
        # Paint the window before the client, qasync and the charting library are imported.
        app.processEvents()
    import asyncio

    import qasync

    from roundhouse.gui.event_loop import install_asyncgen_hooks

    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    restore_hooks = install_asyncgen_hooks(loop)
    try:
        ui = build_ui(app, home, window=window, geometry_store=QSettings())
        if ui.tray is not None:
            ui.tray.show()
        ui.bridge.start()
        # Ctrl+C in the terminal (or a plain kill) quits like the menu, leaving the daemon.
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, lambda *_: ui.quitter.quit(stop_daemon=False))
        loop.run_forever()
        loop.run_until_complete(shutdown(ui))
        loop.run_until_complete(loop.shutdown_asyncgens())
    finally:
        restore_hooks()
        asyncio.set_event_loop(None)
        loop.close()
    return 0
