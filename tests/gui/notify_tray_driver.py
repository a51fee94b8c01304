"""The desktop app as `roundhouse --tray` runs it (`run_app`: only the tray icon, the window
hidden), on a real X display with a tray: it prints, as lines of JSON, "ready" once connected
with its notifier's route, each notification the notifier hands over ("told"), and each
balloon the tray shows ("balloon": the texts of Qt's balloon as drawn). SIGTERM quits it.

Run as `python -m tests.gui.notify_tray_driver HOME_ROOT` with DISPLAY and QT_QPA_PLATFORM=xcb.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QLabel, QSystemTrayIcon

from roundhouse.base.paths import resolve_home
from roundhouse.gui import app as gui_app
from roundhouse.gui.app import Ui
from roundhouse.gui.daemon_bridge import ConnectionState

TRAY_WAIT_S = 15.0


def say(**what: object) -> None:
    sys.stdout.write(json.dumps(what) + "\n")
    sys.stdout.flush()


def watch(ui: Ui) -> None:
    """Report readiness, what the notifier tells, and the balloons the tray draws."""
    assert ui.notifier is not None
    ui.notifier.told.connect(lambda route, title, text: say(told=[route, title, text]))
    shown: list[list[str]] = []
    ready: list[bool] = []
    timer = QTimer(ui.window)
    timer.setInterval(50)

    def look() -> None:
        if (
            not ready
            and ui.bridge.state == ConnectionState.CONNECTED
            and ui.bridge.instances is not None
        ):
            ready.append(True)
            assert ui.notifier is not None
            say(ready=ui.notifier.route.value, window_visible=ui.window.isVisible())
        for widget in QApplication.topLevelWidgets():
            if widget.metaObject().className() != "QBalloonTip" or not widget.isVisible():
                continue
            texts = [label.text() for label in widget.findChildren(QLabel) if label.text()]
            if texts and (not shown or shown[-1] != texts):
                shown.append(texts)
                say(balloon=texts)

    timer.timeout.connect(look)
    timer.start()


def main(root: str) -> int:
    app = gui_app.application()
    deadline = time.monotonic() + TRAY_WAIT_S
    # trayer may still be taking the tray's selection: wait for it as a session would.
    while not QSystemTrayIcon.isSystemTrayAvailable():
        if time.monotonic() > deadline:
            say(error="no system tray on this display")
            return 2
        app.processEvents()
        time.sleep(0.1)
    build_ui = gui_app.build_ui

    def build_and_watch(*args: object, **kwargs: object) -> Ui:
        ui = build_ui(*args, **kwargs)  # type: ignore[arg-type]
        watch(ui)
        return ui

    # run_app builds the app with this module-level function: the driver gets the Ui it built.
    gui_app.build_ui = build_and_watch  # type: ignore[assignment]
    return gui_app.run_app(resolve_home(Path(root)), tray=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
