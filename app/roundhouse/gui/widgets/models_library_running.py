"""The Library's running models: each row's engine state, with Chat and Stop in the row."""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QTableView, QWidget

from roundhouse.api.instances import InstanceInfo, InstanceStatus
from roundhouse.api.library import LibraryModel
from roundhouse.gui.call import Failure
from roundhouse.gui.calls.op import Ops
from roundhouse.gui.daemon_bridge import DaemonBridge
from roundhouse.gui.widgets.keyed_table_model import KeyedTableModel

STATUS_WORDS = {
    InstanceStatus.STARTING: "starting…",
    InstanceStatus.LOADING: "loading…",
    InstanceStatus.READY: "running",
    InstanceStatus.UNHEALTHY: "not answering",
    InstanceStatus.RESTARTING: "restarting…",
    InstanceStatus.STOPPING: "stopping…",
    InstanceStatus.FAILED: "failed",
}
# When several instances run one model, the row speaks of the one most in use.
_RANK = {
    InstanceStatus.READY: 0,
    InstanceStatus.LOADING: 1,
    InstanceStatus.STARTING: 2,
    InstanceStatus.RESTARTING: 3,
    InstanceStatus.UNHEALTHY: 4,
    InstanceStatus.STOPPING: 5,
    InstanceStatus.FAILED: 6,
}


def instance_of(model: LibraryModel, instances: list[InstanceInfo]) -> InstanceInfo | None:
    """The instance that runs `model` (started with its file, folder or tag), if one does."""
    names = {n for n in (model.path, model.id, model.name, *model.paths) if n}
    runs = [
        info
        for info in instances
        if info.model in names or (info.options is not None and info.options.model in names)
    ]
    return min(runs, key=lambda info: _RANK.get(info.status, 9), default=None)


def chat_name(model: LibraryModel) -> str:
    """The name the gateway serves the model by, as the Chat page lists it (ADR 24)."""
    return model.served_id or model.id


class RowActions(QWidget):
    """The state in words, and Chat (once it serves) and Stop, in one cell of the row."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAutoFillBackground(True)
        self.state_label = QLabel()
        self.chat_button = QPushButton("Chat")
        self.chat_button.setToolTip("Open the Chat page on this model")
        self.stop_button = QPushButton("Stop")
        layout = QHBoxLayout(self)
        layout.setContentsMargins(4, 0, 4, 0)
        layout.addWidget(self.state_label, 1)
        layout.addWidget(self.chat_button)
        layout.addWidget(self.stop_button)

    def show_instance(self, info: InstanceInfo, stopping: bool) -> None:
        self.state_label.setText(STATUS_WORDS.get(info.status, info.status.value))
        self.chat_button.setEnabled(info.status == InstanceStatus.READY)
        self.chat_button.setToolTip(
            "Open the Chat page on this model"
            if info.status == InstanceStatus.READY
            else "Chat opens once the model is loaded"
        )
        failed = info.status == InstanceStatus.FAILED
        # Stopping a failed instance dismisses it (the daemon keeps it listed until then).
        self.stop_button.setText("Dismiss" if failed else "Stop")
        self.stop_button.setEnabled(not stopping and info.status != InstanceStatus.STOPPING)
        self.setToolTip(info.error or "")


class LibraryRunning(QObject):
    """Keeps the Status column's cells in step with the bridge's instances. `chat_requested`
    names the model to chat with; `said` is a sentence for the Library's message line."""

    chat_requested = Signal(str)
    said = Signal(str)

    def __init__(
        self,
        bridge: DaemonBridge,
        view: QTableView,
        table: KeyedTableModel,
        column: int,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self._ops = Ops(self)
        self._bridge = bridge
        self._view = view
        self._table = table
        self._column = column
        self.cells: dict[str, RowActions] = {}
        self._stopping: set[str] = set()
        # Starts made here, by instance id: the model's name for the message line, which says
        # how the start ended, and the name to chat with once it serves (the start dialog's
        # box), None to open no chat.
        self._followed: dict[str, tuple[str, str | None]] = {}

    def status_of(self, model: LibraryModel) -> str:
        """The row's Status text: '' when nothing runs the model."""
        info = instance_of(model, self._bridge.instances or [])
        return STATUS_WORDS.get(info.status, info.status.value) if info is not None else ""

    def follow(
        self, info: InstanceInfo, model: LibraryModel | None, name: str, *, open_chat: bool
    ) -> None:
        """Follow the start of `info` to its end: say it is running (or why it did not
        start) and, with `open_chat`, open the chat with its model once it serves."""
        chat = (chat_name(model) if model else (info.model or "")) if open_chat else None
        self._followed[info.id] = (name, chat)

    def update(self, models: list[LibraryModel]) -> None:
        """Each listed model's cell: the buttons where an instance runs it, none elsewhere."""
        instances = self._bridge.instances or []
        shown: set[str] = set()
        for model in models:
            info = instance_of(model, instances)
            row = self._table.row_of(model.id)
            if info is None or row is None:
                continue
            shown.add(model.id)
            cell = self.cells.get(model.id)
            if cell is None:
                cell = self._cell(model)
                self._view.setIndexWidget(self._table.index(row, self._column), cell)
            cell.show_instance(info, info.id in self._stopping)
        for model_id in set(self.cells) - shown:
            cell = self.cells.pop(model_id)
            row = self._table.row_of(model_id)
            if row is not None:
                # None removes (and deletes) the cell; the stubs only know a widget.
                self._view.setIndexWidget(self._table.index(row, self._column), None)  # type: ignore[arg-type]
            else:
                cell.deleteLater()
        self._view.resizeColumnToContents(self._column)
        self._follow_starts(instances)

    def _cell(self, model: LibraryModel) -> RowActions:
        cell = RowActions()
        self.cells[model.id] = cell
        model_id = model.id
        cell.chat_button.clicked.connect(lambda: self._chat(model_id))
        cell.stop_button.clicked.connect(lambda: self._stop(model_id))
        return cell

    def _model(self, model_id: str) -> LibraryModel | None:
        row = self._table.row_of(model_id)
        item = self._table.row(row).item if row is not None else None
        return item if isinstance(item, LibraryModel) else None

    def _chat(self, model_id: str) -> None:
        model = self._model(model_id)
        if model is not None:
            self.chat_requested.emit(chat_name(model))

    def _stop(self, model_id: str) -> None:
        model = self._model(model_id)
        info = instance_of(model, self._bridge.instances or []) if model else None
        if model is None or info is None:
            return
        self._stopping.add(info.id)
        self._followed.pop(info.id, None)
        self.said.emit(f"Stopping {model.name}…")
        call = self._bridge.stop_instance(info.id)
        self._ops.run(
            call,
            lambda _: self.said.emit(f"{model.name} stopped."),
            on_failure=lambda failure: self._on_stop_failed(info.id, model.name, failure),
        )
        call.finished.connect(lambda: self._stopping.discard(info.id))
        cell = self.cells.get(model_id)
        if cell is not None:
            cell.show_instance(info, True)

    def _on_stop_failed(self, instance_id: str, name: str, failure: Failure) -> None:
        self._stopping.discard(instance_id)
        self.said.emit(f"{name} was not stopped: {failure}")

    def _follow_starts(self, instances: list[InstanceInfo]) -> None:
        by_id = {info.id: info for info in instances}
        for instance_id, (name, chat) in list(self._followed.items()):
            info = by_id.get(instance_id)
            if info is None or info.status == InstanceStatus.STOPPING:
                del self._followed[instance_id]
            elif info.status == InstanceStatus.READY:
                del self._followed[instance_id]
                self.said.emit(f"{name} is running: Chat in its row talks to it.")
                if chat is not None:
                    self.chat_requested.emit(chat)
            elif info.status == InstanceStatus.FAILED:
                del self._followed[instance_id]
                why = f": {info.error}" if info.error else ""
                self.said.emit(f"{name} did not start{why}")
