"""Pull an Ollama model: a name, then progress per layer with bytes; Stop closes the stream."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from roundhouse.api.ollama import OllamaPullProgress
from roundhouse.base.units import format_bytes
from roundhouse.gui.call import Failure, Follow
from roundhouse.gui.daemon_bridge import DaemonBridge

REPAINT_MS = 250
BAR_STEPS = 1000


def layer_in_words(completed: int | None, total: int) -> str:
    """'4.1 MiB of 8.0 MiB (51%)', or 'done, 8.0 MiB'."""
    done = completed or 0
    if done >= total:
        return f"done, {format_bytes(total)}"
    return f"{format_bytes(done)} of {format_bytes(total)} ({done / total:.0%})"


def short_digest(digest: str) -> str:
    return digest.removeprefix("sha256:")[:12]


class OllamaPullView(QGroupBox):
    """One pull at a time; the layers stay listed once it ended, with how it ended."""

    pulled = Signal(str)  # the model, once Ollama has it

    def __init__(
        self,
        bridge: DaemonBridge,
        instance: Callable[[], str | None],
        parent: QWidget | None = None,
    ) -> None:
        super().__init__("Pull a model", parent)
        self._bridge = bridge
        self._instance = instance
        self.follow: Follow | None = None
        self._model = ""
        # digest -> (completed, total), in the order Ollama reported them.
        self.layers: dict[str, tuple[int | None, int]] = {}
        self._latest: OllamaPullProgress | None = None
        self.name_edit = QLineEdit()
        self.name_edit.setPlaceholderText("a model tag, such as qwen2.5:0.5b or llama3.2")
        self.name_edit.returnPressed.connect(lambda: self.pull())
        self.name_edit.textChanged.connect(self._update_actions)
        self.pull_button = QPushButton("Pull")
        self.pull_button.clicked.connect(lambda: self.pull())
        self.stop_button = QPushButton("Stop")
        self.stop_button.setToolTip("Stop the pull; Ollama keeps what it has and resumes next time")
        self.stop_button.clicked.connect(self.stop)
        self.status = QLabel()
        self.status.setWordWrap(True)
        self.status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.bar = QProgressBar()
        self.table = QTableWidget(0, 2)
        self.table.setHorizontalHeaderLabels(["Layer", "Progress"])
        self.table.verticalHeader().hide()
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        self.table.setMaximumHeight(120)
        self.table.verticalHeader().setDefaultSectionSize(22)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        row = QHBoxLayout()
        row.addWidget(self.name_edit, 1)
        row.addWidget(self.pull_button)
        row.addWidget(self.stop_button)
        layout = QVBoxLayout(self)
        layout.addLayout(row)
        layout.addWidget(self.status)
        layout.addWidget(self.bar)
        layout.addWidget(self.table)
        for widget in (self.status, self.bar, self.table):
            widget.hide()
        self._repaint = QTimer(self)
        self._repaint.setSingleShot(True)
        self._repaint.setInterval(REPAINT_MS)
        self._repaint.timeout.connect(self._paint)
        self._update_actions()

    @property
    def running(self) -> bool:
        return self.follow is not None and not self.follow.done

    def layer_texts(self) -> dict[str, str]:
        return {
            self.table.item(row, 0).text(): self.table.item(row, 1).text()
            for row in range(self.table.rowCount())
        }

    def pull(self, name: str | None = None) -> None:
        model = (name or self.name_edit.text()).strip()
        if not model or self.running:
            return
        self._model = model
        self.layers.clear()
        self._latest = None
        self.table.setRowCount(0)
        self.status.setText(f"Asking Ollama for {model}…")
        self.status.show()
        self.bar.setRange(0, 0)
        self.bar.show()
        self.follow = follow = self._bridge.ollama.pull(model, self._instance())
        follow.received.connect(self._on_follow_received)
        follow.ended.connect(self._on_follow_ended)
        follow.failed.connect(self._on_follow_failed)
        follow.cancelled.connect(self._on_follow_cancelled)
        follow.finished.connect(self._update_actions)
        self._update_actions()

    def stop(self) -> None:
        if self.follow is not None:
            self.follow.cancel()

    def set_enabled(self, enabled: bool) -> None:
        self.name_edit.setEnabled(enabled)
        self._update_actions()

    # -- progress -----------------------------------------------------------------------

    def _on_follow_received(self, step: OllamaPullProgress) -> None:
        self._latest = step
        if step.digest and step.total:
            self.layers[step.digest] = (step.completed, step.total)
        if not self._repaint.isActive():
            self._repaint.start()

    def _paint(self) -> None:
        step = self._latest
        if step is None:
            return
        self.table.setVisible(bool(self.layers))
        self.table.setRowCount(len(self.layers))
        for row, (digest, (completed, total)) in enumerate(self.layers.items()):
            for column, text in enumerate((short_digest(digest), layer_in_words(completed, total))):
                item = self.table.item(row, column)
                if item is None:
                    self.table.setItem(row, column, QTableWidgetItem(text))
                elif item.text() != text:
                    item.setText(text)
        if step.total:
            self.bar.setRange(0, BAR_STEPS)
            self.bar.setValue(int((step.fraction or 0.0) * BAR_STEPS))
            self.bar.setFormat(layer_in_words(step.completed, step.total))
        else:
            self.bar.setRange(0, 0)
        self.status.setText(f"{self._model}: {step.status}")

    def _on_follow_ended(self) -> None:
        self._repaint.stop()
        self._paint()
        self.bar.hide()
        self.status.setText(f"Pulled {self._model}.")
        self.pulled.emit(self._model)

    def _on_follow_failed(self, failure: Failure) -> None:
        self._repaint.stop()
        self._paint()
        self.bar.hide()
        self.status.setText(f"The pull of {self._model} failed: {failure}")

    def _on_follow_cancelled(self) -> None:
        self._repaint.stop()
        self._paint()
        self.bar.hide()
        self.status.setText(
            f"Stopped pulling {self._model}; Ollama keeps what it has and resumes next time."
        )

    def _update_actions(self) -> None:
        running = self.running
        self.pull_button.setEnabled(
            self.name_edit.isEnabled() and not running and bool(self.name_edit.text().strip())
        )
        self.stop_button.setVisible(running)
