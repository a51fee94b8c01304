"""The Ollama page: its models and what it holds in memory; pull, load, unload, show, delete.

It works on the Ollama the daemon runs or attached to (or OLLAMA_HOST's). When none answers
it says so, with how to start one, and looks again every few seconds: never a dialog storm.
"""

from __future__ import annotations

import platform
from datetime import UTC, datetime

from PySide6.QtCore import Qt, QTimer, QUrl
from PySide6.QtGui import QDesktopServices, QHideEvent, QShowEvent
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QMessageBox,
    QPushButton,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from roundhouse.api.engines import EngineId
from roundhouse.api.instances import InstanceInfo
from roundhouse.api.ollama import OllamaLoadedList, OllamaModelList
from roundhouse.gui.call import Call, Failure
from roundhouse.gui.daemon_bridge import ConnectionState, DaemonBridge
from roundhouse.gui.dialogs.ollama_show_dialog import OllamaShowDialog
from roundhouse.gui.icons import set_icon
from roundhouse.gui.widgets.engine_card import installer_for
from roundhouse.gui.widgets.ollama_absent_view import OllamaAbsentView
from roundhouse.gui.widgets.ollama_instance_combo import OllamaInstanceCombo
from roundhouse.gui.widgets.ollama_models_panel import OllamaModelsPanel
from roundhouse.gui.widgets.ollama_tables import loaded_row, model_row

# While shown: both lists every 2 s (what is loaded expires on its own).
POLL_MS = 2000
# While no Ollama answers, or a listing failed: look again this often.
RETRY_MS = 5000
_WAITING, _ABSENT, _MAIN = 0, 1, 2


class OllamaPage(QWidget):
    """Lists refresh while the page shows; each action answers in the message line."""

    title = "Ollama"

    def __init__(self, bridge: DaemonBridge, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._bridge = bridge
        self._pending: list[Call] = []
        self._again = False
        self.base_url: str | None = None

        heading = QLabel(self.title)
        heading.setObjectName("pageTitle")
        self.status_label = QLabel("Waiting for the daemon…")
        self.status_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.instance_combo = OllamaInstanceCombo()
        self.instance_combo.currentIndexChanged.connect(self._on_instance_combo_changed)
        self.refresh_button = QPushButton("Refresh")
        set_icon(self.refresh_button, "refresh-cw")
        self.refresh_button.clicked.connect(self.refresh)
        header = QHBoxLayout()
        header.addWidget(heading)
        header.addSpacing(16)
        header.addWidget(self.status_label, 1)
        header.addWidget(self.instance_combo)
        header.addWidget(self.refresh_button)

        self.stack = QStackedWidget()
        waiting = QLabel("Waiting for the daemon…")
        waiting.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.stack.addWidget(waiting)
        self.absent_view = OllamaAbsentView()
        self.absent_view.retry_clicked.connect(self.refresh)
        self.absent_view.get_clicked.connect(self.open_installer)
        self.stack.addWidget(self.absent_view)
        self.panel = OllamaModelsPanel(bridge, self.instance)
        self.panel.action_finished.connect(self._on_panel_action_finished)
        self.panel.pull_view.pulled.connect(self._on_pull_view_pulled)
        self.stack.addWidget(self.panel)
        # The panel's parts, reached through the page by the tests and the screenshots.
        self.pull_view = self.panel.pull_view
        self.models, self.loaded = self.panel.models, self.panel.loaded
        self.keep_alive, self.context = self.panel.keep_alive, self.panel.context
        self.show_button, self.delete_button = self.panel.show_button, self.panel.delete_button
        self.load_button, self.unload_button = self.panel.load_button, self.panel.unload_button
        self.message_label = self.panel.message_label

        layout = QVBoxLayout(self)
        layout.addLayout(header)
        layout.addWidget(self.stack, 1)

        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.timeout.connect(self.refresh)
        bridge.when_connected(self._on_bridge_connected)
        bridge.state_changed.connect(self._on_bridge_state_changed)
        bridge.instances_changed.connect(self._on_bridge_instances_changed)
        self._update_actions()

    # -- what tests and the screenshots use ---------------------------------------------

    @property
    def absent(self) -> bool:
        return self.stack.currentIndex() == _ABSENT

    @property
    def show_dialog(self) -> OllamaShowDialog | None:
        return self.panel.show_dialog

    @property
    def confirm_box(self) -> QMessageBox | None:
        return self.panel.confirm_box

    def instance(self) -> str | None:
        """The Ollama instance chosen; None: the daemon picks the first one serving."""
        return self.instance_combo.instance()

    def select_model(self, name: str) -> bool:
        return self.panel.select_model(name)

    def select_loaded(self, name: str) -> bool:
        return self.panel.select_loaded(name)

    # -- listing ------------------------------------------------------------------------

    def refresh(self) -> None:
        """List the models and what is loaded; answers repaint the page."""
        self._timer.stop()
        if self._bridge.state != ConnectionState.CONNECTED:
            return
        if self._pending:
            # An action just changed something: list again once this listing answered.
            self._again = True
            return
        self._again = False
        instance = self.instance()
        models = self._bridge.ollama.models(instance)
        loaded = self._bridge.ollama.loaded(instance)
        self._pending = [models, loaded]
        models.succeeded.connect(self._on_models_succeeded)
        loaded.succeeded.connect(self._on_loaded_succeeded)
        for call in (models, loaded):
            call.finished.connect(self._on_listing_finished)

    def _on_models_succeeded(self, listed: OllamaModelList) -> None:
        self.base_url = listed.base_url
        self.models.set_rows([model_row(m) for m in listed.models])

    def _on_loaded_succeeded(self, listed: OllamaLoadedList) -> None:
        now = datetime.now(UTC)
        self.loaded.set_rows([loaded_row(m, now) for m in listed.models])

    def _on_listing_finished(self) -> None:
        if any(not call.done for call in self._pending):
            return
        failures = [call.failure for call in self._pending if call.failure is not None]
        self._pending = []
        if not failures:
            self.stack.setCurrentIndex(_MAIN)
            self._say_status()
            self._schedule(POLL_MS)
        elif failures[0].status == 503:
            self._show_absent(failures[0])
            self._schedule(RETRY_MS)
        elif failures[0].status is None:
            # The daemon itself is gone: the bridge reconnects, and `connected` lists again.
            self.status_label.setText(f"Not listed: {failures[0]}")
        else:
            self.stack.setCurrentIndex(_MAIN)
            self.status_label.setText(f"Not listed: {failures[0]}")
            self._schedule(RETRY_MS)
        self._update_actions()
        if self._again:
            self.refresh()

    def _say_status(self) -> None:
        count = self.models.rowCount()
        models = "1 model" if count == 1 else f"{count} models"
        self.status_label.setText(
            f"Ollama at {self.base_url} · {models} · {self.loaded.rowCount()} loaded"
        )

    def _show_absent(self, failure: Failure) -> None:
        self.stack.setCurrentIndex(_ABSENT)
        installer = self.installer_url() is not None
        self.absent_view.show_reason(failure.title, failure.detail, installer=installer)
        self.status_label.setText("No Ollama answers; looking again every few seconds.")

    def _schedule(self, delay_ms: int) -> None:
        if self.isVisible() and self._bridge.state == ConnectionState.CONNECTED:
            self._timer.start(delay_ms)

    # -- getting Ollama -----------------------------------------------------------------

    def installer_url(self) -> str | None:
        overview = self._bridge.engines
        if overview is None:
            return None
        inventory = self._bridge.inventory
        system = inventory.os if inventory is not None else platform.system()
        spec = next((s for s in overview.catalog.engines if s.id == EngineId.OLLAMA), None)
        link = installer_for(spec, system) if spec is not None else None
        return link.url if link is not None else None

    def open_installer(self) -> None:
        url = self.installer_url()
        if url is not None:
            QDesktopServices.openUrl(QUrl(url))

    # -- following the page, the panel and the daemon -----------------------------------

    def _update_actions(self) -> None:
        connected = self._bridge.state == ConnectionState.CONNECTED
        self.panel.update_actions()
        self.refresh_button.setEnabled(connected)
        self.absent_view.retry_button.setEnabled(connected)

    def _on_panel_action_finished(self) -> None:
        self.refresh()

    def _on_pull_view_pulled(self, _model: str) -> None:
        self.refresh()

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        self.refresh()

    def hideEvent(self, event: QHideEvent) -> None:
        super().hideEvent(event)
        self._timer.stop()

    def _on_bridge_connected(self) -> None:
        if self.isVisible():
            self.refresh()

    def _on_bridge_state_changed(self, value: str) -> None:
        if ConnectionState(value) != ConnectionState.CONNECTED:
            self._timer.stop()
            if self.stack.currentIndex() == _WAITING:
                self.status_label.setText("Waiting for the daemon…")
            else:
                self.status_label.setText("Showing the last known lists: not connected.")
        self._update_actions()

    def _on_bridge_instances_changed(self, instances: list[InstanceInfo]) -> None:
        if self.instance_combo.follow(instances):
            self.refresh()

    def _on_instance_combo_changed(self, _index: int) -> None:
        self.models.set_rows([])
        self.loaded.set_rows([])
        self.refresh()
