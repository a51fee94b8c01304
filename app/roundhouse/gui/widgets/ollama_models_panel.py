"""The Ollama page's main panel: pull, the models and what is loaded; show, load, unload, delete."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QMessageBox,
    QPushButton,
    QSpinBox,
    QSplitter,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from roundhouse.api.ollama import (
    OllamaLoadedModel,
    OllamaLoadRequest,
    OllamaModel,
    OllamaShownModel,
)
from roundhouse.gui.call import Call
from roundhouse.gui.calls.op import Ops
from roundhouse.gui.daemon_bridge import ConnectionState, DaemonBridge
from roundhouse.gui.dialogs.ollama_show_dialog import OllamaShowDialog
from roundhouse.gui.widgets.confirm import ask_to_confirm
from roundhouse.gui.widgets.keyed_table_model import KeyedTableModel
from roundhouse.gui.widgets.ollama_pull_view import OllamaPullView
from roundhouse.gui.widgets.ollama_tables import LOADED_HEADERS, MODEL_HEADERS
from roundhouse.gui.widgets.table_view import table_view

KEEP_ALIVE_CHOICES: tuple[tuple[str, str | int], ...] = (
    ("5 minutes", "5m"),
    ("30 minutes", "30m"),
    ("1 hour", "1h"),
    ("forever", -1),
)


def _selected(view: QTableView, model: KeyedTableModel) -> object | None:
    rows = view.selectionModel().selectedRows()
    return model.row(rows[0].row()).item if rows else None


class OllamaModelsPanel(QWidget):
    """The page fills the tables; each action here answers in the message line."""

    action_finished = Signal()  # a load, unload or delete ended: time to list again

    def __init__(
        self,
        bridge: DaemonBridge,
        instance: Callable[[], str | None],
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self._ops = Ops(self)
        self._bridge = bridge
        self._instance = instance
        self._action: Call | None = None
        self._show_call: Call | None = None
        self.show_dialog: OllamaShowDialog | None = None
        self.confirm_box: QMessageBox | None = None

        self.pull_view = OllamaPullView(bridge, instance)

        self.models = KeyedTableModel(MODEL_HEADERS, frozenset({1}), self)
        self.models_view = table_view(self.models)
        self.models_view.doubleClicked.connect(lambda _: self.show_selected())
        self.models_view.selectionModel().selectionChanged.connect(self.update_actions)
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
        self.loaded_view.selectionModel().selectionChanged.connect(self.update_actions)
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
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.pull_view)
        layout.addWidget(splitter, 1)
        layout.addWidget(self.message_label)

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

    # -- actions ------------------------------------------------------------------------

    def show_selected(self) -> None:
        model = _selected(self.models_view, self.models)
        if not isinstance(model, OllamaModel) or self._show_call is not None:
            return
        self._say(f"Asking Ollama about {model.name}…")
        self._show_call = call = self._bridge.ollama.show(model.name, self._instance())
        self._ops.run(
            call,
            self._on_show_succeeded,
            on_failure=lambda failure: self._say(f"Not shown: {failure}"),
        )
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
        call = self._bridge.ollama.load(request, self._instance())
        self._act(f"Loading {model.name}…", f"Loaded {model.name}.", call)

    def unload_selected(self) -> None:
        model = _selected(self.loaded_view, self.loaded)
        if not isinstance(model, OllamaLoadedModel):
            return
        call = self._bridge.ollama.unload(model.name, self._instance())
        self._act(f"Unloading {model.name}…", f"Unloaded {model.name}.", call)

    def delete_selected(self) -> None:
        model = _selected(self.models_view, self.models)
        if not isinstance(model, OllamaModel) or self._action is not None:
            return

        def delete() -> None:
            call = self._bridge.ollama.delete(model.name, self._instance())
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
        self._ops.run(
            call,
            lambda _: self._say(done),
            on_failure=lambda failure: self._say(f"{doing.rstrip('…')} failed: {failure}"),
        )
        call.finished.connect(self._on_action_finished)
        self.update_actions()

    def _on_action_finished(self) -> None:
        self._action = None
        self.update_actions()
        self.action_finished.emit()

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

    def _say(self, text: str) -> None:
        self.message_label.setText(text)

    def update_actions(self) -> None:
        connected = self._bridge.state == ConnectionState.CONNECTED
        idle = connected and self._action is None
        model = _selected(self.models_view, self.models) is not None
        self.show_button.setEnabled(connected and model and self._show_call is None)
        self.delete_button.setEnabled(idle and model)
        self.load_button.setEnabled(idle and model)
        self.unload_button.setEnabled(idle and _selected(self.loaded_view, self.loaded) is not None)
        self.pull_view.set_enabled(connected)
