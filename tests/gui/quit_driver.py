"""The desktop app as `roundhouse` runs it (`run_app`), driven like a user who chooses
Quit, then "Stop and quit", as soon as the app shows a running engine.

Run as `python -m tests.gui.quit_driver HOME_ROOT`; the exit status is the app's own."""

from __future__ import annotations

import sys
from pathlib import Path

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QMessageBox

from roundhouse.api.instances import InstanceStatus
from roundhouse.base.paths import resolve_home
from roundhouse.gui import app as gui_app
from roundhouse.gui.app import Ui
from roundhouse.gui.daemon_bridge import ConnectionState

STOP_AND_QUIT = "Stop and quit"


def drive(ui: Ui) -> None:
    """Quit once the app lists a ready engine, with the Monitor following its stream and
    quick chat open; answer the question with Stop and quit."""
    asked: list[bool] = []
    timer = QTimer(ui.window)
    timer.setInterval(20)
    # Quitting is not closing to the tray: no "still running in the tray" then.
    ui.window.hidden_to_tray.connect(
        lambda: asked and sys.stderr.write("driver: the window hid to the tray on Quit\n")
    )

    def step() -> None:
        box = ui.quitter.dialog
        if isinstance(box, QMessageBox) and box.isVisible():
            # The user's Enter: the default button is what a user who chose Quit gets.
            default = box.defaultButton()
            if default is None or default.text() != STOP_AND_QUIT:
                sys.stderr.write(f"driver: the default button is not {STOP_AND_QUIT}\n")
                sys.exit(3)
            timer.stop()
            default.click()
            return
        ready = any(i.status == InstanceStatus.READY for i in ui.bridge.instances or [])
        if not asked and ui.bridge.state == ConnectionState.CONNECTED and ready:
            page = ui.window.show_page("Monitor")
            if not getattr(page, "following", False):
                return  # its stream open, as when the user watched it
            if ui.quick_chat is not None:
                ui.quick_chat.open()
            asked.append(True)
            ui.window.quit_requested.emit()

    timer.timeout.connect(step)
    timer.start()


def main(root: str) -> int:
    build_ui = gui_app.build_ui

    def build_and_drive(*args: object, **kwargs: object) -> Ui:
        # A desktop with a tray, where closing the window only hides it.
        ui = build_ui(*args, **{**kwargs, "tray_available": True})  # type: ignore[arg-type]
        drive(ui)
        return ui

    # run_app builds the app with this module-level function: the driver gets the Ui it built.
    gui_app.build_ui = build_and_drive  # type: ignore[assignment]
    return gui_app.run_app(resolve_home(Path(root)))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
