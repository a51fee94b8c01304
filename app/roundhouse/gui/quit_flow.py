"""Quitting the app: leave the daemon serving or stop it, by the setting or by asking."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject
from PySide6.QtWidgets import QAbstractButton, QMessageBox, QWidget

from roundhouse.api.instances import InstanceOrigin, InstanceStatus
from roundhouse.api.settings import QuitAction, UiSettings
from roundhouse.gui.daemon_bridge import ConnectionState, DaemonBridge


class QuitController(QObject):
    """Decides `stop_daemon_on_exit`, then quits; the app stops the daemon after the loop."""

    def __init__(
        self, bridge: DaemonBridge, quit_app: Callable[[], None], window: QWidget | None = None
    ) -> None:
        super().__init__()
        self._bridge = bridge
        self._quit_app = quit_app
        self._window = window
        self.dialog: QMessageBox | None = None
        # Set once the user quits: the window closes then instead of hiding to the tray.
        self.quitting = False
        self._stop_button: QAbstractButton | None = None
        self._leave_button: QAbstractButton | None = None
        # Closing the last window without a tray quits: keep_serving_on_close decides then.
        self.stop_daemon_on_exit = not bridge.ui_settings.keep_serving_on_close
        bridge.ui_settings_changed.connect(self._on_bridge_ui_settings_changed)

    def request_quit(self) -> None:
        if self._bridge.state != ConnectionState.CONNECTED:
            self.quit(stop_daemon=False)
            return
        ui = self._bridge.ui_settings
        if ui.quit_action == QuitAction.STOP_DAEMON:
            self.quit(stop_daemon=True)
        elif ui.quit_action == QuitAction.LEAVE_SERVING:
            self.quit(stop_daemon=False)
        elif self._bridge.instances is not None and not self._running():
            # Nothing of ours runs: there is nothing to decide, so no question. The daemon
            # does as when the last window closes (Keep serving when windows close, on by
            # default): it holds no engine then, and keeps the API up for other programs.
            self.quit(stop_daemon=not ui.keep_serving_on_close)
        else:
            self._ask()

    def quit(self, *, stop_daemon: bool) -> None:
        self.stop_daemon_on_exit = stop_daemon
        self.quitting = True
        self._quit_app()

    def _running(self) -> int:
        """How many engines the daemon runs that stopping it would end (failed ones hold
        nothing; engines others started are only attached and keep running)."""
        return sum(
            i.origin != InstanceOrigin.EXTERNAL and i.status != InstanceStatus.FAILED
            for i in self._bridge.instances or []
        )

    def _ask(self) -> None:
        if self.dialog is not None and self.dialog.isVisible():
            self.dialog.raise_()
            return
        box = QMessageBox(self._window)
        box.setIcon(QMessageBox.Icon.Question)
        box.setWindowTitle("Quit Roundhouse")
        box.setText("Stop the Roundhouse daemon and its engines as well?")
        running = self._running()
        serving = f"{running} engine{'' if running == 1 else 's'} running now. " if running else ""
        box.setInformativeText(
            f"{serving}The daemon keeps engines and the local API running while the app is "
            "closed. Stop it if you do not need local models for now."
        )
        self._stop_button = box.addButton("Stop and quit", QMessageBox.ButtonRole.DestructiveRole)
        self._leave_button = box.addButton("Quit, keep serving", QMessageBox.ButtonRole.AcceptRole)
        box.addButton(QMessageBox.StandardButton.Cancel)
        # Enter means what the user asked for: Quit. Someone who quits expects Roundhouse to
        # be gone and its memory back, not engines holding GiBs of RAM in the background, so
        # the default stops them; nothing kept is lost (models, presets and chats stay, and
        # the next launch starts the daemon again). Keeping them serving is the deliberate
        # choice, one click away; Escape cancels the quit.
        box.setDefaultButton(self._stop_button)
        box.finished.connect(self._on_dialog_finished)
        self.dialog = box
        # open(), not exec(): a nested event loop would stall qasync's tasks.
        box.open()

    def _on_dialog_finished(self) -> None:
        box, self.dialog = self.dialog, None
        if box is None:
            return
        clicked = box.clickedButton()
        box.deleteLater()
        if clicked is self._stop_button:
            self.quit(stop_daemon=True)
        elif clicked is self._leave_button:
            self.quit(stop_daemon=False)

    def _on_bridge_ui_settings_changed(self, settings: UiSettings) -> None:
        self.stop_daemon_on_exit = not settings.keep_serving_on_close
