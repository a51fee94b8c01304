"""Tray menu, close-to-tray and the quit question (offscreen, with no tray): its answers and
default without a daemon, and no question against a real daemon that runs nothing."""

from __future__ import annotations

from pathlib import Path

import qasync
from PySide6.QtWidgets import QApplication, QMessageBox
from pytestqt.qtbot import QtBot

from roundhouse.api.instances import InstanceOrigin
from roundhouse.api.settings import QuitAction, UiSettings
from roundhouse.base.paths import resolve_home
from roundhouse.gui.app import Ui, build_ui
from roundhouse.gui.daemon_bridge import ConnectionState, DaemonBridge
from roundhouse.gui.icons import TrayState
from roundhouse.gui.quit_flow import QuitController
from tests.daemon_process import DaemonProcess
from tests.gui.conftest import close_bridge, wait_until


def _texts(actions: list) -> list[str]:  # type: ignore[type-arg]
    return [action.text() for action in actions if not action.isSeparator()]


def test_tray_menu_when_not_connected(qapp: QApplication, home_root: Path, qtbot: QtBot) -> None:
    ui = build_ui(qapp, resolve_home(home_root), auto_start=False, tray_available=True)
    qtbot.addWidget(ui.window)
    assert ui.tray is not None
    ui.tray.menu.aboutToShow.emit()
    assert _texts(ui.tray.menu.actions()) == [
        "Roundhouse: not connected to the daemon",
        "Open Roundhouse",
        "Start the daemon",
        "Quit Roundhouse…",
    ]
    assert ui.tray.tray_state == TrayState.IDLE
    assert not qapp.quitOnLastWindowClosed()


def test_close_hides_to_the_tray_when_there_is_one(
    qapp: QApplication, home_root: Path, qtbot: QtBot
) -> None:
    ui = build_ui(qapp, resolve_home(home_root), auto_start=False, tray_available=True)
    qtbot.addWidget(ui.window)
    ui.window.show()
    with qtbot.waitSignal(ui.window.hidden_to_tray, timeout=1000):
        ui.window.close()
    assert not ui.window.isVisible()
    ui.tray.menu.aboutToShow.emit()  # type: ignore[union-attr]
    open_action = next(a for a in ui.tray.menu.actions() if a.text() == "Open Roundhouse")  # type: ignore[union-attr]
    open_action.trigger()
    assert ui.window.isVisible()


def test_close_quits_without_a_tray(qapp: QApplication, home_root: Path, qtbot: QtBot) -> None:
    ui = build_ui(qapp, resolve_home(home_root), auto_start=False, tray_available=False)
    qtbot.addWidget(ui.window)
    assert ui.tray is None
    assert qapp.quitOnLastWindowClosed()
    qapp.setQuitOnLastWindowClosed(False)  # the test process must not quit
    hidden: list[bool] = []
    ui.window.hidden_to_tray.connect(lambda: hidden.append(True))
    ui.window.show()
    assert ui.window.close()
    assert hidden == []


class _ConnectedBridge(DaemonBridge):
    """A bridge that says it is connected, for the quit decision only."""

    @property
    def state(self) -> ConnectionState:
        return ConnectionState.CONNECTED


def test_quit_asks_without_blocking_and_follows_the_answer(
    qapp: QApplication, home_root: Path, qtbot: QtBot
) -> None:
    bridge = _ConnectedBridge(resolve_home(home_root), auto_start=False)
    quits: list[bool] = []
    quitter = QuitController(bridge, lambda: quits.append(quitter.stop_daemon_on_exit))
    quitter.request_quit()
    # open(), not exec(): request_quit returned while the question is still on screen.
    box = quitter.dialog
    assert isinstance(box, QMessageBox) and box.isVisible()
    assert quits == []
    # Enter does what the user chose, Quit: the engines stop too (Escape cancels).
    default = box.defaultButton()
    assert default is not None and default.text() == "Stop and quit"
    stop = next(b for b in box.buttons() if b.text() == "Stop and quit")
    stop.click()
    qtbot.waitUntil(lambda: quits == [True], timeout=2000)

    quitter.request_quit()
    assert quitter.dialog is not None
    leave = next(b for b in quitter.dialog.buttons() if b.text() == "Quit, keep serving")
    leave.click()
    qtbot.waitUntil(lambda: quits == [True, False], timeout=2000)

    quitter.request_quit()
    assert quitter.dialog is not None
    quitter.dialog.reject()
    qtbot.wait(50)
    assert quits == [True, False]


def test_quit_follows_the_setting_without_asking(qapp: QApplication, home_root: Path) -> None:
    bridge = _ConnectedBridge(resolve_home(home_root), auto_start=False)
    quits: list[bool] = []
    quitter = QuitController(bridge, lambda: quits.append(quitter.stop_daemon_on_exit))
    bridge.ui_settings = UiSettings(quit_action=QuitAction.STOP_DAEMON)
    quitter.request_quit()
    bridge.ui_settings = UiSettings(quit_action=QuitAction.LEAVE_SERVING)
    quitter.request_quit()
    assert quits == [True, False]
    assert quitter.dialog is None


def test_quit_does_not_ask_when_nothing_runs(
    ui: Ui, qloop: qasync.QEventLoop, daemon: DaemonProcess
) -> None:
    """Against a real daemon with no engine: nothing to decide, so no question; the daemon
    does as when the last window closes (keeps serving, the default)."""
    quits: list[bool] = []
    quitter = QuitController(ui.bridge, lambda: quits.append(quitter.stop_daemon_on_exit))

    async def scenario() -> None:
        ui.bridge.start()
        await wait_until(lambda: ui.bridge.state == ConnectionState.CONNECTED, 20, "connected")
        await wait_until(lambda: ui.bridge.instances is not None, 10, "the instance list")
        # Engines of other test runs on this machine may be found (attached, not ours):
        # stopping the daemon would leave them running, so they are nothing to ask about.
        assert all(i.origin == InstanceOrigin.EXTERNAL for i in ui.bridge.instances or [])
        assert ui.bridge.ui_settings.quit_action == QuitAction.ASK
        quitter.request_quit()
        assert quitter.dialog is None, "asked though nothing runs"
        assert quits == [False] and quitter.quitting

    try:
        qloop.run_until_complete(scenario())
    finally:
        close_bridge(qloop, ui.bridge)
