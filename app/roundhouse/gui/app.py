"""Start the desktop app: the window at once, the daemon connection in the background."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from PySide6.QtCore import QEvent, QObject, QSettings, QTimer
from PySide6.QtWidgets import QApplication, QSystemTrayIcon, QWidget

from roundhouse.base.paths import Home
from roundhouse.gui.connection_state import ConnectionState
from roundhouse.gui.icons import app_icon
from roundhouse.gui.main_window import MainWindow
from roundhouse.gui.pyside_tax import skip_feature_source_scan
from roundhouse.gui.theme.manager import current_stylesheet, theme_manager
from roundhouse.gui.theme.tokens import Scheme

# Only Qt and the window shell load before the first paint; asyncio, qasync, the HTTP
# client (httpx, pydantic) and the charts (pyqtgraph, numpy) load right after it (~0.4 s).
if TYPE_CHECKING:
    from roundhouse.gui.active_model import ActiveModel
    from roundhouse.gui.daemon_bridge import DaemonBridge
    from roundhouse.gui.first_run.launcher import FirstRunLauncher
    from roundhouse.gui.notify import Notifier
    from roundhouse.gui.quick_chat import QuickChat
    from roundhouse.gui.quit_flow import QuitController
    from roundhouse.gui.tray import Tray

APP_NAME = "Roundhouse"
# ROUNDHOUSE_SMOKE_TEST=1: the self-check of an installed or frozen build. The app opens as
# usual but starts no daemon, prints `smoke: first paint` at the window's first paint, then
# checks that its icons and stylesheet load, prints `smoke: ok ...` and quits (exit 1 and
# the problem on stderr when a check fails).
SMOKE_TEST_ENV = "ROUNDHOUSE_SMOKE_TEST"


@dataclass
class Ui:
    """Everything the composition root builds; tests and the screenshot script use it too."""

    bridge: DaemonBridge
    window: MainWindow
    quitter: QuitController
    tray: Tray | None
    active_model: ActiveModel | None = None
    quick_chat: QuickChat | None = None
    first_run: FirstRunLauncher | None = None
    notifier: Notifier | None = None


def application() -> QApplication:
    """The process's QApplication, named and styled (created on first use)."""
    skip_feature_source_scan()
    existing = QApplication.instance()
    app = existing if isinstance(existing, QApplication) else QApplication(sys.argv[:1])
    app.setApplicationName(APP_NAME)
    app.setOrganizationName(APP_NAME)
    app.setDesktopFileName("roundhouse")
    app.setWindowIcon(app_icon())
    # The palette of the last theme chosen on this machine (or the OS's): the first paint is
    # in its colours before the daemon's settings come. Fusion and the stylesheet follow in
    # build_ui, after the paint.
    theme_manager(app, QSettings(), palette_only=True)
    return app


def build_ui(
    app: QApplication,
    home: Home,
    *,
    auto_start: bool = True,
    tray_available: bool | None = None,
    geometry_store: QSettings | None = None,
    window: MainWindow | None = None,
    first_run_guide: bool = False,
) -> Ui:
    """Build the bridge, window, pages and tray; nothing talks to the daemon yet.

    `first_run_guide`: open the first-run guide once connected, unless it was done."""
    from roundhouse.gui.active_model import ActiveModel
    from roundhouse.gui.daemon_bridge import DaemonBridge
    from roundhouse.gui.first_run.launcher import FirstRunLauncher
    from roundhouse.gui.notify import Notifier
    from roundhouse.gui.pages.hardware_page import HardwarePage
    from roundhouse.gui.quick_chat import QuickChat
    from roundhouse.gui.quit_flow import QuitController
    from roundhouse.gui.tray import Tray

    # Here, not at the top: it uses PySide's Qt namespace, whose first use costs ~25 ms,
    # and nothing before the first paint needs it.
    from roundhouse.gui.wheel_guard import install_wheel_guard

    # Before the pages: the wheel scrolls them, never a field's value as it passes over.
    install_wheel_guard(app)
    theme = theme_manager(app)
    # After the first paint: the OS's light or dark, and its changes.
    theme.follow_os()
    if tray_available is None:
        tray_available = QSystemTrayIcon.isSystemTrayAvailable()
    if window is None:
        window = MainWindow(geometry_store=geometry_store)
    bridge = DaemonBridge(home, auto_start=auto_start)
    # The theme chosen in Settings, applied as soon as the daemon says it (and changed).
    bridge.ui_settings_changed.connect(lambda ui: theme.set_choice(ui.theme))
    window.attach(bridge)
    window.add_page(HardwarePage(bridge), HardwarePage.title)

    # The other pages are built when first shown (MainWindow.add_page), and their modules
    # imported then: the Hardware page is the one on screen at start.
    def engines() -> QWidget:
        from roundhouse.gui.pages.engines_page import EnginesPage

        return EnginesPage(bridge)

    def models() -> QWidget:
        from roundhouse.gui.pages.models_page import ModelsPage

        page = ModelsPage(bridge)
        # The Library's Chat button, and its start dialog's "open the chat", open the Chat page.
        page.chat_requested.connect(lambda model: window.show_chat(model=model))
        return page

    def ollama() -> QWidget:
        from roundhouse.gui.pages.ollama_page import OllamaPage

        return OllamaPage(bridge)

    def chat() -> QWidget:
        from roundhouse.gui.pages.chat_page import ChatPage

        return ChatPage(bridge, active_model)

    def bench() -> QWidget:
        from roundhouse.gui.pages.bench_page import BenchPage

        return BenchPage(bridge)

    def monitor() -> QWidget:
        from roundhouse.gui.pages.monitor_page import MonitorPage

        return MonitorPage(bridge)

    def machines() -> QWidget:
        from roundhouse.gui.pages.machines_page import MachinesPage

        return MachinesPage(bridge)

    def settings() -> QWidget:
        from roundhouse.gui.pages.settings_page import SettingsPage

        return SettingsPage(bridge)

    # One active model for the chat page, quick chat and the tray.
    active_model = ActiveModel(bridge)
    for build, title in (
        (engines, "Engines"),
        (models, "Models"),
        (ollama, "Ollama"),
        (chat, "Chat"),
        (bench, "Benchmark"),
        (monitor, "Monitor"),
        (machines, "Machines"),
        (settings, "Settings"),
    ):
        window.add_page(build, title)
    # exit(), not quit(): Qt's quit first asks every window to close, and one that only
    # hides on close (quick chat) or hides to the tray cancels it: the app lived on, with
    # the daemon it was asked to stop. shutdown() closes the windows after the loop.
    quitter = QuitController(bridge, lambda: app.exit(0), window)
    window.quit_requested.connect(quitter.request_quit)
    # The quick chat window is built on first use; its shortcut (Ctrl+Shift+Space) now.
    quick_chat = QuickChat(bridge, window, active_model, geometry_store=geometry_store)
    first_run = FirstRunLauncher(bridge, window, automatic=first_run_guide)
    window.first_run_requested.connect(first_run.open)
    tray = (
        Tray(
            bridge,
            window,
            quitter,
            # The panel is the OS's, whatever theme the app's own windows have.
            dark_panel=theme.os_scheme == Scheme.DARK,
            active_model=active_model,
            open_quick_chat=quick_chat.open,
            open_first_run=first_run.open,
        )
        if tray_available
        else None
    )
    window.hides_to_tray = lambda: tray is not None and not quitter.quitting
    # With a tray, closing the window hides it; without one, closing it quits.
    app.setQuitOnLastWindowClosed(tray is None)
    # Downloads ended, engines that stopped, models loaded, updates: through the OS.
    notifier = Notifier.for_platform(bridge, window, tray)
    return Ui(bridge, window, quitter, tray, active_model, quick_chat, first_run, notifier)


async def shutdown(ui: Ui) -> None:
    """After the Qt loop ends: stop the daemon if the user chose to, then close the client."""
    if ui.tray is not None:
        ui.tray.icon.hide()
    if ui.quick_chat is not None:
        ui.quick_chat.close()
    # Closed, not hidden: the window keeps its place for the next launch; quitting, it does
    # not hide to the tray (however the loop ended). Closing the last window must not also
    # end the loop this runs on (without a tray Qt quits then): the app is leaving anyway.
    ui.quitter.quitting = True
    app = QApplication.instance()
    if isinstance(app, QApplication):
        app.setQuitOnLastWindowClosed(False)
    ui.window.close()
    if ui.quitter.stop_daemon_on_exit and ui.bridge.state == ConnectionState.CONNECTED:
        problem = await ui.bridge.stop_daemon()
        if problem:
            # The window is gone by now: the log (and the terminal) is the place left to say it.
            import logging

            logging.getLogger(__name__).error("The daemon was not stopped: %s", problem)
    await ui.bridge.aclose()


class _FirstPaint(QObject):
    """Calls `on_paint` once, when the main window is first painted (smoke test only)."""

    def __init__(self, app: QApplication, on_paint: Callable[[], object]) -> None:
        super().__init__(app)
        self._app = app
        self._on_paint = on_paint
        app.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if (
            event.type() == QEvent.Type.Paint
            and isinstance(watched, QWidget)
            and isinstance(watched.window(), MainWindow)
        ):
            self._app.removeEventFilter(self)
            self._on_paint()
        return False


def _smoke_check(app: QApplication, outcome: list[int]) -> None:
    """The smoke test's checks, once the loop runs: every icon renders, the style is set."""
    from roundhouse.base.resources import resources_dir
    from roundhouse.gui.icons import TrayState, tray_icon, ui_icon
    from roundhouse.gui.main_window import PAGE_ICONS

    icons = [app_icon()] + [tray_icon(s, dark_panel=d) for s in TrayState for d in (False, True)]
    # The sidebar's icons in both themes: the UI icons are recoloured SVGs (QtSvg).
    icons += [ui_icon(name, scheme) for name in PAGE_ICONS.values() for scheme in Scheme]
    # A null pixmap means the SVG icon engine (a Qt plugin) is missing from the build.
    blank = sum(icon.pixmap(32, 32).isNull() for icon in icons)
    sheet = current_stylesheet()
    if blank or not sheet or app.styleSheet() != sheet:
        sys.stderr.write(
            f"smoke: FAILED: {blank} of {len(icons)} icons did not render, or "
            f"the stylesheet did not load from {resources_dir()}\n"
        )
        outcome.append(1)
    else:
        sys.stdout.write(
            f"smoke: ok: {len(icons)} icons and the stylesheet from {resources_dir()}\n"
        )
        outcome.append(0)
    sys.stdout.flush()
    app.quit()


def run_app(home: Home, *, tray: bool = False, quick_chat: bool = False) -> int:
    """Run the desktop app until the user quits; the daemon it started serves on.

    `tray` (Start at login) shows only the tray icon, where the platform has a tray;
    `quick_chat` opens quick chat at once (`roundhouse quick-chat` with no app running)."""
    app = application()
    window = MainWindow(geometry_store=QSettings())
    smoke = os.environ.get(SMOKE_TEST_ENV) == "1"
    smoke_outcome: list[int] = []
    if smoke:
        _FirstPaint(app, lambda: (sys.stdout.write("smoke: first paint\n"), sys.stdout.flush()))
    hidden = tray and QSystemTrayIcon.isSystemTrayAvailable()
    if not hidden:
        window.show()
        # Paint the window before the client, qasync and the charting library are imported.
        app.processEvents()
    import asyncio

    from roundhouse.gui.event_loop import GuiEventLoop, install_asyncgen_hooks

    loop = GuiEventLoop(app)
    asyncio.set_event_loop(loop)
    restore_hooks = install_asyncgen_hooks(loop)
    try:
        ui = build_ui(
            app,
            home,
            window=window,
            geometry_store=QSettings(),
            auto_start=not smoke,
            first_run_guide=not (hidden or smoke),
        )
        if ui.tray is not None:
            ui.tray.show()
        from roundhouse.gui.quick_chat_key import QuickChatKey

        # The global key and `roundhouse quick-chat`'s channel (not in the smoke test).
        key = None
        if not smoke and ui.quick_chat is not None:
            key = QuickChatKey(ui.bridge, ui.quick_chat, home)
            key.start()
        if quick_chat and ui.quick_chat is not None:
            ui.quick_chat.open()
        ui.bridge.start()
        if smoke:
            QTimer.singleShot(0, lambda: _smoke_check(app, smoke_outcome))
        # Ctrl+C in the terminal (or a plain kill) quits like the menu, leaving the daemon.
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, lambda *_: ui.quitter.quit(stop_daemon=False))
        loop.run_forever()
        if key is not None:
            key.close()
        loop.run_until_complete(shutdown(ui))
        loop.run_until_complete(loop.shutdown_asyncgens())
    finally:
        restore_hooks()
        asyncio.set_event_loop(None)
        loop.close()
    return smoke_outcome[0] if smoke_outcome else 0
