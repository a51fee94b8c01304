"""The tray icon: the connection state at a glance, and Open and Quit."""

from __future__ import annotations

from PySide6.QtCore import QObject
from PySide6.QtWidgets import QMenu, QSystemTrayIcon

from roundhouse.gui.daemon_bridge import ConnectionState, DaemonBridge
from roundhouse.gui.icons import TrayState, tray_icon
from roundhouse.gui.main_window import MainWindow
from roundhouse.gui.quit_flow import QuitController

STATE_WORDS = {
    ConnectionState.CONNECTED: "connected to the daemon",
    ConnectionState.CONNECTING: "looking for the daemon…",
    ConnectionState.STARTING: "starting the daemon…",
    ConnectionState.DISCONNECTED: "not connected to the daemon",
}


class Tray(QObject):
    """Built only where the platform has a tray; the menu is rebuilt each time it opens."""

    def __init__(
        self,
        bridge: DaemonBridge,
        window: MainWindow,
        quitter: QuitController,
        *,
        dark_panel: bool,
    ) -> None:
        super().__init__()
        self._bridge = bridge
        self._window = window
        self._quitter = quitter
        self._dark_panel = dark_panel
        self._told_hidden = False
        self.menu = QMenu()
        self.menu.aboutToShow.connect(self._on_menu_about_to_show)
        self.icon = QSystemTrayIcon(self)
        self.icon.setContextMenu(self.menu)
        self.icon.activated.connect(self._on_icon_activated)
        bridge.state_changed.connect(self._on_bridge_state_changed)
        window.hidden_to_tray.connect(self._on_window_hidden_to_tray)
        self._on_bridge_state_changed(bridge.state.value)
        self._on_menu_about_to_show()

    def show(self) -> None:
        self.icon.show()

    @property
    def tray_state(self) -> TrayState:
        state = self._bridge.state
        if state == ConnectionState.CONNECTED:
            return TrayState.CONNECTED
        if state == ConnectionState.DISCONNECTED and self._bridge.message:
            return TrayState.ERROR
        return TrayState.IDLE

    def _on_bridge_state_changed(self, _value: str) -> None:
        self.icon.setIcon(tray_icon(self.tray_state, dark_panel=self._dark_panel))
        tip = f"Roundhouse: {STATE_WORDS[self._bridge.state]}"
        if self.tray_state == TrayState.ERROR:
            tip += f"\n{self._bridge.message}"
        self.icon.setToolTip(tip)

    def _on_menu_about_to_show(self) -> None:
        self.menu.clear()
        state = self.menu.addAction(f"Roundhouse: {STATE_WORDS[self._bridge.state]}")
        state.setEnabled(False)
        self.menu.addSeparator()
        self.menu.addAction("Open Roundhouse", self._window.bring_to_front)
        if self._bridge.state == ConnectionState.DISCONNECTED:
            self.menu.addAction("Start the daemon", self._bridge.start_daemon)
        self.menu.addSeparator()
        self.menu.addAction("Quit Roundhouse…", self._quitter.request_quit)

    def _on_icon_activated(self, reason: QSystemTrayIcon.ActivationReason) -> None:
        if reason != QSystemTrayIcon.ActivationReason.Trigger:
            return
        if self._window.isVisible():
            self._window.hide()
        else:
            self._window.bring_to_front()

    def _on_window_hidden_to_tray(self) -> None:
        if not self._told_hidden and self.icon.supportsMessages():
            self._told_hidden = True
            self.icon.showMessage(
                "Roundhouse is still running",
                "It lives in the tray; choose Quit in its menu to leave.",
                self.icon.icon(),
                4000,
            )
