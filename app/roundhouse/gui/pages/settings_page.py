"""The Settings page: where models live, Hugging Face's token, the gateway, the engines, the
desktop app, the daemon's port and the update check, each a section widget.

The daemon owns the settings and validates them: Save sends the whole Settings, read again
just before and changed by each section, and a refusal is shown in words. The token and the
gateway's key are the daemon's own calls, made at once.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QScrollArea, QVBoxLayout, QWidget

from roundhouse.api.settings import Settings, UiSettings
from roundhouse.gui.call import Failure
from roundhouse.gui.calls.op import Ops
from roundhouse.gui.calls.settings import patch_settings
from roundhouse.gui.daemon_bridge import ConnectionState, DaemonBridge
from roundhouse.gui.widgets.appearance_settings import AppearanceSection
from roundhouse.gui.widgets.desktop_settings import DesktopSettingsSection
from roundhouse.gui.widgets.gateway_settings import GatewaySettingsSection
from roundhouse.gui.widgets.settings_daemon import AT_NEXT_START, DaemonSettingsSection
from roundhouse.gui.widgets.settings_engines import EngineSettingsSection
from roundhouse.gui.widgets.settings_hub_token import HubTokenSection
from roundhouse.gui.widgets.settings_models import ModelsPlacesSection
from roundhouse.gui.widgets.settings_notifications import NotificationsSection
from roundhouse.gui.widgets.settings_peers import PeersSettingsSection
from roundhouse.gui.widgets.settings_quick_chat import QuickChatKeySection
from roundhouse.gui.widgets.settings_updates import UpdatesSection


class SettingsPage(QWidget):
    """Save sends the form; Revert shows what the daemon has again."""

    title = "Settings"

    def __init__(self, bridge: DaemonBridge, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._bridge = bridge
        self.settings: Settings | None = None
        self._ops = Ops(self, on_busy=self._update_actions)
        heading = QLabel(self.title)
        heading.setObjectName("pageTitle")

        self.models = ModelsPlacesSection(bridge)
        self.hub_token = HubTokenSection(bridge)
        self.gateway = GatewaySettingsSection(bridge)
        self.engines = EngineSettingsSection()
        self.desktop = DesktopSettingsSection()
        # Saved and applied as it is changed, with the key's state: not part of Save.
        self.quick_chat_key = QuickChatKeySection(bridge)
        # Saved as it is picked, like the tray's switches: not part of Save.
        self.appearance = AppearanceSection(bridge)
        self.daemon = DaemonSettingsSection()
        self.peers = PeersSettingsSection(bridge)
        self.updates = UpdatesSection(bridge)
        # Saved as each switch is flipped: not part of Save.
        self.notifications = NotificationsSection(bridge)
        saved = (self.models, self.gateway, self.engines, self.desktop, self.daemon, self.peers)
        for section in saved:
            section.changed.connect(self._on_form_changed)
        self.updates.changed.connect(self._on_form_changed)

        self.save_button = QPushButton("Save")
        self.save_button.setProperty("primary", True)  # the accent's colours (app.qss)
        self.save_button.clicked.connect(self.save)
        self.revert_button = QPushButton("Revert")
        self.revert_button.setToolTip("Show the settings the daemon has again")
        self.revert_button.clicked.connect(self.reload)
        self.message = QLabel()
        self.message.setWordWrap(True)
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.error = QLabel()
        self.error.setObjectName("dialogError")
        self.error.setWordWrap(True)
        self.error.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.error.hide()
        buttons = QHBoxLayout()
        buttons.addWidget(self.save_button)
        buttons.addWidget(self.revert_button)
        buttons.addWidget(self.message, 1)

        # The sections scroll; the heading, the error and Save stay in view.
        sections = QWidget()
        sections_layout = QVBoxLayout(sections)
        sections_layout.setContentsMargins(0, 0, 0, 0)
        for widget in (
            self.models,
            self.hub_token,
            self.gateway,
            self.engines,
            self.appearance,
            self.desktop,
            self.quick_chat_key,
            self.daemon,
            self.peers,
            self.updates,
            self.notifications,
        ):
            sections_layout.addWidget(widget)
        sections_layout.addStretch(1)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        scroll.setWidget(sections)
        layout = QVBoxLayout(self)
        layout.addWidget(heading)
        layout.addWidget(scroll, 1)
        layout.addWidget(self.error)
        layout.addLayout(buttons)
        bridge.when_connected(self._on_bridge_connected)
        bridge.ui_settings_changed.connect(self._on_bridge_ui_settings_changed)
        bridge.state_changed.connect(self._update_actions)
        self._update_actions()

    # -- the form -----------------------------------------------------------------------

    def form(self, current: Settings) -> Settings:
        """`current` with every section's part as the form has it, unchecked: the daemon
        validates the whole."""
        settings = self.daemon.apply(self.engines.apply(self.models.apply(current)))
        settings = self.peers.apply(settings)
        return settings.model_copy(
            update={"gateway": self.gateway.form(), "ui": self.form_ui(settings.ui)}
        )

    def form_ui(self, ui: UiSettings) -> UiSettings:
        return self.updates.form(self.desktop.form(ui))

    def changed(self) -> bool:
        return self.settings is not None and self.form(self.settings) != self.settings

    def show_settings(self, settings: Settings) -> None:
        self.settings = settings
        self.models.show_settings(settings)
        self.engines.show_settings(settings)
        self.gateway.show_settings(settings.gateway)
        self.desktop.show_settings(settings.ui)
        status = self._bridge.status
        self.daemon.show_settings(settings, status.url if status else None)
        self.peers.show_settings(settings)
        self.updates.show_settings(settings.ui)
        self.updates.refresh()
        if self.hub_token.status is None:
            self.hub_token.refresh()
        self._on_form_changed()

    # -- talking to the daemon ----------------------------------------------------------

    def reload(self) -> None:
        if self._ops.busy:
            return
        self._begin("Reading the settings…")
        self._ops.run(
            self._bridge.settings.get(),
            self._on_get_succeeded,
            on_failure=lambda failure: self._fail("The settings were not read", failure),
            busy=True,
        )

    def save(self) -> None:
        if self.settings is None or self._ops.busy:
            return
        before = self.settings
        # Onto the settings as they are now, not as this page read them: the tray or the
        # quick chat may have changed the active model in between.
        self._begin("Saving…")
        call = patch_settings(self._bridge, "save the settings", self.form)

        def saved(result: Settings) -> None:
            self.show_settings(result)
            notes = []
            if result.engines.python_paths != before.engines.python_paths:
                # The daemon looks for engines in the Pythons again as it saves them; what
                # it finds comes by the change feed.
                notes.append("looking for engines in the Pythons again")
            if result.daemon.port != before.daemon.port:
                notes.append(AT_NEXT_START)
            self.message.setText(("Saved; " + "; ".join(notes) + ".") if notes else "Saved.")

        self._ops.run(
            call,
            saved,
            on_failure=lambda failure: self._fail("The daemon did not save them", failure),
            busy=True,
        )

    def error_text(self) -> str:
        return self.error.text() if not self.error.isHidden() else ""

    def _on_get_succeeded(self, settings: Settings) -> None:
        self.show_settings(settings)
        self.message.setText("")

    def _begin(self, text: str) -> None:
        self.error.hide()
        self.message.setText(text)

    def _fail(self, what: str, failure: Failure) -> None:
        self.message.setText("")
        self.error.setText(f"{what}: {failure}")
        self.error.show()

    # -- following the form and the daemon ----------------------------------------------

    def _on_form_changed(self, *_: Any) -> None:
        self._update_actions()

    def _update_actions(self, *_: object) -> None:
        connected = self._bridge.state == ConnectionState.CONNECTED
        idle = connected and not self._ops.busy
        self.save_button.setEnabled(idle and self.changed())
        self.revert_button.setEnabled(idle)
        for section in (self.gateway, self.hub_token, self.updates):
            section.set_connected(connected)

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        if self.settings is None or not self.changed():
            self.reload()

    def _on_bridge_ui_settings_changed(self, ui: UiSettings) -> None:
        # The tray flips the desktop switches at once: follow, unless they are being edited.
        if self.settings is None or self.settings.ui == ui:
            return
        editing = self.form_ui(self.settings.ui) != self.settings.ui
        self.settings = self.settings.model_copy(update={"ui": ui})
        if not editing:
            self.desktop.show_settings(ui)
            self.updates.show_settings(ui)
        self._update_actions()

    def _on_bridge_connected(self) -> None:
        if self.isVisible() and not self.changed():
            self.reload()
