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
    QComboBox,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QMessageBox,
    QPushButton,
    QSpinBox,
    QSplitter,
    QStackedWidget,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from roundhouse.api.engines import EngineId
from roundhouse.api.instances import InstanceInfo
from roundhouse.api.ollama import (
    OllamaLoadedList,
    OllamaLoadedModel,
    OllamaLoadRequest,
    OllamaModel,
    OllamaModelList,
    OllamaShownModel,
)
from roundhouse.gui.call import Call, Failure
from roundhouse.gui.daemon_bridge import ConnectionState, DaemonBridge
from roundhouse.gui.dialogs.ollama_show_dialog import OllamaShowDialog
from roundhouse.gui.widgets.confirm import ask_to_confirm
from roundhouse.gui.widgets.engine_card import installer_for
from roundhouse.gui.widgets.keyed_table_model import KeyedTableModel
from roundhouse.gui.widgets.ollama_absent_view import OllamaAbsentView
from roundhouse.gui.widgets.ollama_pull_view import OllamaPullView
from roundhouse.gui.widgets.ollama_tables import (
    LOADED_HEADERS,
    MODEL_HEADERS,
    loaded_row,
    model_row,
    table_view,
)

# While shown: both lists every 2 s (what is loaded expires on its own).
POLL_MS = 2000
# While no Ollama answers, or a listing failed: look again this often.
RETRY_MS = 5000
KEEP_ALIVE_CHOICES: tuple[tuple[str, str | int], ...] = (
    ("5 minutes", "5m"),
    ("30 minutes", "30m"),
    ("1 hour", "1h"),
    ("forever", -1),
)
ANY_OLLAMA = "the first one serving"
_WAITING, _ABSENT, _MAIN = 0, 1, 2


def _selected(view: QTableView, model: KeyedTableModel) -> object | None:
    rows = view.selectionModel().selectedRows()
    return model.row(rows[0].row()).item if rows else None


class OllamaPage(QWidget):
    """Lists refresh while the page shows; each action answers in the message line."""

    title = "Ollama"

    def __init__(self, bridge: DaemonBridge, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._bridge = bridge
        self._pending: list[Call] = []
        self._again = False
        self._action: Call | None = None
        self._show_call: Call | None = None
        self.base_url: str | None = None
        self.show_dialog: OllamaShowDialog | None = None
        self.confirm_box: QMessageBox | None = None

        heading = QLabel(self.title)
        heading.setObjectName("pageTitle")
        self.status_label = QLabel("Waiting for the daemon…")
        self.status_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.instance_combo = QComboBox()
        self.instance_combo.setToolTip("The Ollama to work on, when Roundhouse knows several")
        self.instance_combo.addItem(ANY_OLLAMA, None)
        self.instance_combo.hide()
        self.instance_combo.currentIndexChanged.connect(self._on_instance_combo_changed)
        self.refresh_button = QPushButton("Refresh")
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
        self.stack.addWidget(self._build_main_panel())

        layout = QVBoxLayout(self)
        layout.addLayout(header)
        layout.addWidget(self.stack, 1)

        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.timeout.connect(self.refresh)
        bridge.connected.connect(self._on_bridge_connected)
        bridge.state_changed.connect(self._on_bridge_state_changed)
        bridge.instances_changed.connect(self._on_bridge_instances_changed)
        self._update_actions()

    def _build_main_panel(self) -> QWidget:
        self.pull_view = OllamaPullView(self._bridge, self.instance)
        self.pull_view.pulled.connect(self._on_pull_view_pulled)

        self.models = KeyedTableModel(MODEL_HEADERS, frozenset({1}), self)
        self.models_view = table_view(self.models)
        self.models_view.doubleClicked.connect(lambda _: self.show_selected())
        self.models_view.selectionModel().selectionChanged.connect(self._update_actions)
        self.show_button = QPushButton("Show")
        self.show_button.setToolTip("Details, GGUF metadata, template and license")
        self.show_button.clicked.connect(self.show_selected)
        self.delete_button = QPushButton("Delete")
        self.delete_button.clicked.connect(self.delete_selected)
        self.keep_alive = QComboBox()
        for text, value in KEEP_ALIVE_CHOICES:
            self.keep_alive.addItem(text, value)
        self.keep_alive.setToolTip("How long Ollama keeps the model in memory after its last use")
        self.context = QSpinBox()
        self.context.setRange(0, 1_048_576)
        self.context.setSingleStep(1024)
        self.context.setSpecialValueText("model default")
        self.context.setToolTip("Context length in tokens (a bigger one needs more memory)")
        self.load_button = QPushButton("Load")
        self.load_button.setToolTip("Load the model into memory now, so the first answer is quick")
        self.load_button.clicked.connect(self.load_selected)
        model_actions = QHBoxLayout()
        model_actions.addWidget(self.show_button)
        model_actions.addWidget(self.delete_button)
        model_actions.addStretch(1)
        model_actions.addWidget(QLabel("Keep loaded:"))
        model_actions.addWidget(self.keep_alive)
        model_actions.addWidget(QLabel("Context:"))
        model_actions.addWidget(self.context)
        model_actions.addWidget(self.load_button)
        models_box = QGroupBox("Models")
        models_layout = QVBoxLayout(models_box)
        models_layout.addWidget(self.models_view, 1)
        models_layout.addLayout(model_actions)

        self.loaded = KeyedTableModel(LOADED_HEADERS, frozenset({1, 2, 3}), self)
        self.loaded_view = table_view(self.loaded)
        self.loaded_view.selectionModel().selectionChanged.connect(self._update_actions)
        self.unload_button = QPushButton("Unload")
        self.unload_button.setToolTip("Free the memory it holds")
        self.unload_button.clicked.connect(self.unload_selected)
        loaded_actions = QHBoxLayout()
        loaded_actions.addWidget(self.unload_button)
        loaded_actions.addStretch(1)
        loaded_box = QGroupBox("Loaded in memory")
        loaded_layout = QVBoxLayout(loaded_box)
        loaded_layout.addWidget(self.loaded_view, 1)
        loaded_layout.addLayout(loaded_actions)

        self.message_label = QLabel()
        self.message_label.setWordWrap(True)
        self.message_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        splitter = QSplitter(Qt.Orientation.Vertical)
        splitter.setChildrenCollapsible(False)
        splitter.addWidget(models_box)
        splitter.addWidget(loaded_box)
        splitter.setSizes([320, 200])
        panel = QWidget()
        layout = QVBoxLayout(panel)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.pull_view)
        layout.addWidget(splitter, 1)
        layout.addWidget(self.message_label)
        return panel

    # -- what tests and the screenshots use ---------------------------------------------

    @property
    def absent(self) -> bool:
        return self.stack.currentIndex() == _ABSENT

    def instance(self) -> str | None:
        """The Ollama instance chosen; None: the daemon picks the first one serving."""
        value = self.instance_combo.currentData()
        return value if isinstance(value, str) else None

    def select_model(self, name: str) -> bool:
        row = self.models.row_of(name)
        if row is not None:
            self.models_view.selectRow(row)
        return row is not None

    def select_loaded(self, name: str) -> bool:
        row = self.loaded.row_of(name)
        if row is not None:
            self.loaded_view.selectRow(row)
        return row is not None

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

    # -- actions ------------------------------------------------------------------------

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

    def show_selected(self) -> None:
        model = _selected(self.models_view, self.models)
        if not isinstance(model, OllamaModel) or self._show_call is not None:
            return
        self._say(f"Asking Ollama about {model.name}…")
        self._show_call = call = self._bridge.ollama.show(model.name, self.instance())
        call.succeeded.connect(self._on_show_succeeded)
        call.failed.connect(lambda failure: self._say(f"Not shown: {failure}"))
        call.finished.connect(self._on_show_finished)

    def load_selected(self) -> None:
        model = _selected(self.models_view, self.models)
        if not isinstance(model, OllamaModel):
            return
        request = OllamaLoadRequest(
            model=model.name,
            keep_alive=self.keep_alive.currentData(),
            context_length=self.context.value() or None,
        )
        call = self._bridge.ollama.load(request, self.instance())
        self._act(f"Loading {model.name}…", f"Loaded {model.name}.", call)

    def unload_selected(self) -> None:
        model = _selected(self.loaded_view, self.loaded)
        if not isinstance(model, OllamaLoadedModel):
            return
        call = self._bridge.ollama.unload(model.name, self.instance())
        self._act(f"Unloading {model.name}…", f"Unloaded {model.name}.", call)

    def delete_selected(self) -> None:
        model = _selected(self.models_view, self.models)
        if not isinstance(model, OllamaModel) or self._action is not None:
            return

        def delete() -> None:
            call = self._bridge.ollama.delete(model.name, self.instance())
            self._act(f"Deleting {model.name}…", f"Deleted {model.name}.", call)

        self.confirm_box = ask_to_confirm(
            self.window(),
            title="Delete an Ollama model",
            text=f"Delete {model.name} from Ollama?",
            detail="Its files are removed; pull it again to use it.",
            action="Delete",
            on_confirm=delete,
            on_closed=self._forget_confirm_box,
        )

    def _forget_confirm_box(self) -> None:
        self.confirm_box = None

    def _act(self, doing: str, done: str, call: Call) -> None:
        self._say(doing)
        self._action = call
        call.succeeded.connect(lambda _: self._say(done))
        call.failed.connect(lambda failure: self._say(f"{doing.rstrip('…')} failed: {failure}"))
        call.finished.connect(self._on_action_finished)
        self._update_actions()

    def _on_action_finished(self) -> None:
        self._action = None
        self._update_actions()
        self.refresh()

    def _on_show_succeeded(self, shown: OllamaShownModel) -> None:
        self._say("")
        if self.show_dialog is not None:
            self.show_dialog.close()
        dialog = OllamaShowDialog(shown, self.window())
        dialog.finished.connect(self._on_show_dialog_finished)
        self.show_dialog = dialog
        dialog.open()

    def _on_show_finished(self) -> None:
        self._show_call = None

    def _on_show_dialog_finished(self) -> None:
        dialog, self.show_dialog = self.show_dialog, None
        if dialog is not None:
            dialog.deleteLater()

    def _on_pull_view_pulled(self, _model: str) -> None:
        self.refresh()

    def _say(self, text: str) -> None:
        self.message_label.setText(text)

    def _update_actions(self) -> None:
        connected = self._bridge.state == ConnectionState.CONNECTED
        idle = connected and self._action is None
        model = _selected(self.models_view, self.models) is not None
        self.show_button.setEnabled(connected and model and self._show_call is None)
        self.delete_button.setEnabled(idle and model)
        self.load_button.setEnabled(idle and model)
        self.unload_button.setEnabled(idle and _selected(self.loaded_view, self.loaded) is not None)
        self.refresh_button.setEnabled(connected)
        self.absent_view.retry_button.setEnabled(connected)
        self.pull_view.set_enabled(connected)

    # -- following the page and the daemon ----------------------------------------------

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
        ollamas = [i for i in instances if i.engine == EngineId.OLLAMA]
        wanted = [(None, ANY_OLLAMA)] + [
            (i.id, f"{i.host}:{i.port} ({i.origin.value})") for i in ollamas
        ]
        present = [
            (self.instance_combo.itemData(i), self.instance_combo.itemText(i))
            for i in range(self.instance_combo.count())
        ]
        if wanted != present:
            chosen = self.instance()
            self.instance_combo.blockSignals(True)
            self.instance_combo.clear()
            for data, text in wanted:
                self.instance_combo.addItem(text, data)
            index = self.instance_combo.findData(chosen) if chosen else 0
            self.instance_combo.setCurrentIndex(max(0, index))
            self.instance_combo.blockSignals(False)
            if chosen is not None and index < 0:
                self.refresh()
        # One Ollama or none: nothing to choose.
        self.instance_combo.setVisible(len(ollamas) > 1)

    def _on_instance_combo_changed(self, _index: int) -> None:
        self.models.set_rows([])
        self.loaded.set_rows([])
        self.refresh()
