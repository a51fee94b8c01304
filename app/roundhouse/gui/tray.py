"""The tray icon: idle, serving N instances or an error at a glance, and a menu to act.

The menu is rebuilt each time it opens, from the bridge's store: the change feed keeps the
instance list current, so the tray asks the daemon nothing to stay up to date.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from PySide6.QtCore import QObject
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import QMenu, QMessageBox, QSystemTrayIcon

from roundhouse.api.instances import InstanceInfo, InstanceOrigin, InstanceStatus
from roundhouse.gui.active_model import ActiveModel
from roundhouse.gui.call import Failure
from roundhouse.gui.calls.settings import patch_settings, with_ui
from roundhouse.gui.daemon_bridge import ConnectionState, DaemonBridge
from roundhouse.gui.icons import TrayState, tray_icon
from roundhouse.gui.main_window import MainWindow
from roundhouse.gui.quit_flow import QuitController
from roundhouse.gui.tray_status import (
    STATE_WORDS,
    instance_label,
    instance_menu_text,
    tray_status,
)
from roundhouse.gui.widgets.active_model_menu import ActiveModelMenu
from roundhouse.gui.widgets.confirm import ask_to_confirm
from roundhouse.gui.widgets.instances_words import is_endpoint


class Tray(QObject):
    """Built only where the platform has a tray; the menu is rebuilt each time it opens."""

    def __init__(
        self,
        bridge: DaemonBridge,
        window: MainWindow,
        quitter: QuitController,
        *,
        dark_panel: bool,
        active_model: ActiveModel | None = None,
        open_quick_chat: Callable[[], object] | None = None,
        open_first_run: Callable[[], object] | None = None,
    ) -> None:
        super().__init__()
        self._bridge = bridge
        self._window = window
        self._quitter = quitter
        self._dark_panel = dark_panel
        self._active_model = active_model or ActiveModel(bridge)
        self._open_quick_chat = open_quick_chat
        self._open_first_run = open_first_run
        self._told_hidden = False
        self.confirm_box: QMessageBox | None = None
        # The last failure of a tray action, in words (also shown as a notification).
        self.last_problem = ""
        self.menu = QMenu()
        self.menu.aboutToShow.connect(self._on_menu_about_to_show)
        # Submenus of the instances, made anew at each opening: deleted with the next one.
        self._instance_menus: list[QMenu] = []
        self.models_menu = ActiveModelMenu(self._active_model)
        self.models_menu.chosen.connect(self._choose_model)
        self.models_menu.engines_requested.connect(lambda: self._show_page("Engines"))
        self.status = tray_status(bridge.state, bridge.message, bridge.instances)
        self.icon = QSystemTrayIcon(tray_icon(self.status.state, dark_panel=dark_panel), self)
        self.icon.setToolTip(self.status.tooltip)
        self.icon.setContextMenu(self.menu)
        self.icon.activated.connect(self._on_icon_activated)
        bridge.state_changed.connect(self._update_icon)
        bridge.instances_changed.connect(self._update_icon)
        # The state changes before the message is set: the error's words come with this.
        bridge.disconnected.connect(self._update_icon)
        window.hidden_to_tray.connect(self._on_window_hidden_to_tray)
        self._update_icon()
        self._on_menu_about_to_show()

    def show(self) -> None:
        self.icon.show()

    @property
    def tray_state(self) -> TrayState:
        return self.status.state

    def _update_icon(self, *_: object) -> None:
        status = tray_status(self._bridge.state, self._bridge.message, self._bridge.instances)
        if status.state != self.status.state:
            self.icon.setIcon(tray_icon(status.state, dark_panel=self._dark_panel))
        if status.tooltip != self.status.tooltip:
            self.icon.setToolTip(status.tooltip)
        self.status = status

    # -- the menu ---------------------------------------------------------------------------

    def _on_menu_about_to_show(self) -> None:
        self.menu.clear()
        connected = self._bridge.state == ConnectionState.CONNECTED
        state = self.menu.addAction(f"Roundhouse: {STATE_WORDS[self._bridge.state]}")
        state.setEnabled(False)
        self.menu.addSeparator()
        if connected:
            self._add_instances()
            self.menu.addMenu(self.models_menu)
            self.models_menu.fill()
            if not self._active_model.loaded:
                # Listed once; the change feed keeps the list current from then on.
                self._active_model.refresh()
            self.menu.addSeparator()
            quick = self.menu.addAction("Quick chat…", self._on_quick_chat_triggered)
            # The key the settings chose (Settings › Quick chat key), shown beside the entry.
            key = self._bridge.ui_settings.quick_chat_key
            quick.setShortcut(
                QKeySequence.fromString(key, QKeySequence.SequenceFormat.PortableText)
            )
            quick.setEnabled(self._open_quick_chat is not None)
        self.menu.addAction("Open Roundhouse", self._window.bring_to_front)
        if connected and self._open_first_run is not None:
            # The guide works through the daemon: offered while connected.
            self.menu.addAction("First-run guide…", self._open_first_run)
        if self._bridge.state == ConnectionState.DISCONNECTED:
            self.menu.addAction("Start the daemon", self._bridge.start_daemon)
        self.menu.addSeparator()
        if connected:
            ui = self._bridge.ui_settings
            self._add_toggle(
                "Keep serving when windows close", "keep_serving_on_close", ui.keep_serving_on_close
            )
            self._add_toggle("Start at login", "start_at_login", ui.start_at_login)
            self.menu.addSeparator()
        self.menu.addAction("Quit Roundhouse…", self._quitter.request_quit)

    def _add_instances(self) -> None:
        for old in self._instance_menus:
            old.deleteLater()
        self._instance_menus = []
        instances = self._bridge.instances or []
        if not instances:
            self.menu.addAction("No model is being served").setEnabled(False)
        for info in instances:
            submenu = self.menu.addMenu(instance_menu_text(info))
            self._instance_menus.append(submenu)
            if info.status == InstanceStatus.FAILED:
                word = "Dismiss"
            elif is_endpoint(info):
                word = "Detach"
            else:
                word = "Stop"
            submenu.addAction(word, partial(self.stop_instance, info))

    def _add_toggle(self, text: str, field: str, checked: bool) -> None:
        action = self.menu.addAction(text)
        action.setCheckable(True)
        action.setChecked(checked)
        action.toggled.connect(lambda on: self._save_ui(text, field, on))

    # -- actions ----------------------------------------------------------------------------

    def stop_instance(self, info: InstanceInfo) -> None:
        """Stop it (dismiss a failed one, detach a server); an engine not ours asks first."""
        if info.origin == InstanceOrigin.EXTERNAL and info.status != InstanceStatus.FAILED:
            endpoint = is_endpoint(info)
            self.confirm_box = ask_to_confirm(
                self._window,
                title="Detach a server" if endpoint else "Stop an engine Roundhouse did not start",
                text=f"{'Detach' if endpoint else 'Stop'} {instance_label(info)}?",
                detail=(
                    "The server keeps running; Roundhouse forgets it."
                    if endpoint
                    else "Roundhouse found this engine running but did not start it: another "
                    "program or person may rely on it."
                ),
                action="Detach" if endpoint else "Stop it",
                on_confirm=lambda: self._stop(info, force=not endpoint),
                on_closed=self._forget_confirm_box,
            )
            return
        self._stop(info, force=False)

    def _stop(self, info: InstanceInfo, *, force: bool) -> None:
        call = self._bridge.stop_instance(info.id, force=force)
        call.failed.connect(
            lambda failure: self._tell(f"{instance_label(info)} was not stopped", failure)
        )

    def _choose_model(self, model_id: str) -> None:
        self._active_model.choose(model_id).failed.connect(
            lambda failure: self._tell("The active model was not changed", failure)
        )

    def _save_ui(self, text: str, field: str, on: bool) -> None:
        call = patch_settings(self._bridge, f"change “{text}”", with_ui(**{field: on}))
        call.failed.connect(lambda failure: self._tell(f"“{text}” was not changed", failure))

    def _on_quick_chat_triggered(self) -> None:
        if self._open_quick_chat is not None:
            self._open_quick_chat()

    def _show_page(self, title: str) -> None:
        self._window.show_page(title)
        self._window.bring_to_front()

    def _tell(self, title: str, failure: Failure) -> None:
        """A failure of a tray action: a notification, the window may well be hidden."""
        self.last_problem = f"{title}: {failure}"
        if self.icon.supportsMessages():
            self.icon.showMessage(title, str(failure), QSystemTrayIcon.MessageIcon.Warning, 8000)
        else:
            self._window.statusBar().showMessage(self.last_problem, 15000)

    def _forget_confirm_box(self) -> None:
        self.confirm_box = None

    # -- the icon and the window ------------------------------------------------------------

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
