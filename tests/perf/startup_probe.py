"""Child process for the start-up benchmark: prints when the first window is painted.

Usage: startup_probe.py bare | startup_probe.py app HOME
Prints `painted` at the first paint of the main window, and for `app` also `ready` when the
hardware page has its inventory from the daemon; then quits.
"""

from __future__ import annotations

import sys
from typing import Any


def _paint_watcher(app: Any, window_type: type, on_paint: Any) -> Any:
    from PySide6.QtCore import QEvent, QObject

    class Watcher(QObject):
        fired = False

        def eventFilter(self, obj: QObject, event: QEvent) -> bool:
            if (
                not self.fired
                and event.type() == QEvent.Type.Paint
                and hasattr(obj, "window")
                and isinstance(obj.window(), window_type)
            ):
                self.fired = True
                on_paint()
            return False

    watcher = Watcher()
    app.installEventFilter(watcher)
    return watcher


def _say(word: str) -> None:
    sys.stdout.write(word + "\n")
    sys.stdout.flush()


def bare() -> None:
    from PySide6.QtWidgets import QApplication, QMainWindow

    app = QApplication(sys.argv[:1])
    window = QMainWindow()
    window.resize(1100, 760)
    keep = _paint_watcher(app, QMainWindow, lambda: (_say("painted"), app.quit()))
    window.show()
    app.exec()
    del keep


def real_app(home: str) -> None:
    import roundhouse.gui.app as gui_app
    from roundhouse.cli.launch import main
    from roundhouse.gui.main_window import MainWindow

    original_application = gui_app.application
    original_build_ui = gui_app.build_ui
    keep: list[Any] = []

    def application() -> Any:
        app = original_application()
        keep.append(_paint_watcher(app, MainWindow, lambda: _say("painted")))
        return app

    def build_ui(app: Any, *args: Any, **kwargs: Any) -> Any:
        ui = original_build_ui(app, *args, **kwargs)
        ui.bridge.inventory_changed.connect(lambda _inv: (_say("ready"), app.quit()))
        return ui

    gui_app.application = application
    gui_app.build_ui = build_ui
    sys.argv = ["roundhouse", "--home", home]
    try:
        main()
    except SystemExit as done:
        assert done.code == 0, done.code


if __name__ == "__main__":
    if sys.argv[1] == "bare":
        bare()
    else:
        real_app(sys.argv[2])
