"""Pull an Ollama model: a name, queued in the daemon's download queue, then its progress.

The pull is a job of the queue (Models → Downloads shows it too): it goes on when the page
closes and after a daemon restart. Stop pauses it; Pull again resumes it.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from roundhouse.api.downloads import (
    DownloadQueueView,
    DownloadState,
    OllamaDownloadRequest,
    OllamaPullItem,
)
from roundhouse.base.units import format_bytes
from roundhouse.gui.call import Call, Failure
from roundhouse.gui.calls.models import ModelsCalls
from roundhouse.gui.calls.op import Ops
from roundhouse.gui.daemon_bridge import DaemonBridge

REPAINT_MS = 250
BAR_STEPS = 1000
ACTIVE = frozenset({DownloadState.QUEUED, DownloadState.DOWNLOADING, DownloadState.VERIFYING})


def bytes_in_words(done: int, total: int) -> str:
    """'4.1 MiB of 8.0 MiB (51%)', or 'done, 8.0 MiB'."""
    if done >= total:
        return f"done, {format_bytes(total)}"
    return f"{format_bytes(done)} of {format_bytes(total)} ({done / total:.0%})"


def pull_in_words(item: OllamaPullItem) -> str:
    """The status line of a pull, by its state."""
    model = item.model
    match item.state:
        case DownloadState.DONE:
            return f"Pulled {model}."
        case DownloadState.FAILED:
            return f"The pull of {model} failed: {item.error or 'Ollama did not say why.'}"
        case DownloadState.PAUSED:
            return (
                f"Paused the pull of {model}; Ollama keeps what it has. Pull it again, or "
                "resume it under Models → Downloads, to go on."
            )
        case DownloadState.CANCELLED:
            return f"Cancelled the pull of {model}. {item.note or ''}".strip()
        case DownloadState.QUEUED:
            return f"{model}: waiting in the download queue"
        case _:
            stalled = " (stalled: no bytes for a while)" if item.stalled else ""
            return f"{model}: {item.status or 'starting'}{stalled}"


class OllamaPullView(QGroupBox):
    """One pull at a time, followed through the download queue in the change feed."""

    pulled = Signal(str)  # the model, once Ollama has it

    def __init__(
        self,
        bridge: DaemonBridge,
        instance: Callable[[], str | None],
        parent: QWidget | None = None,
    ) -> None:
        super().__init__("Pull a model", parent)
        self._ops = Ops(self)
        self._bridge = bridge
        self._calls = ModelsCalls(bridge)
        self._instance = instance
        self._adding: Call | None = None
        self._pausing: Call | None = None
        self.job_id: str | None = None
        self.item: OllamaPullItem | None = None  # the job as last painted
        self._latest: OllamaPullItem | None = None
        self.name_edit = QLineEdit()
        self.name_edit.setPlaceholderText("a model tag, such as qwen2.5:0.5b or llama3.2")
        self.name_edit.returnPressed.connect(lambda: self.pull())
        self.name_edit.textChanged.connect(self._update_actions)
        self.pull_button = QPushButton("Pull")
        self.pull_button.setToolTip("Queue the pull; it shows under Models → Downloads too")
        self.pull_button.clicked.connect(lambda: self.pull())
        self.stop_button = QPushButton("Stop")
        self.stop_button.setToolTip("Pause the pull; Ollama keeps what it has, and Pull resumes it")
        self.stop_button.clicked.connect(self.stop)
        self.status = QLabel()
        self.status.setWordWrap(True)
        self.status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.bar = QProgressBar()
        row = QHBoxLayout()
        row.addWidget(self.name_edit, 1)
        row.addWidget(self.pull_button)
        row.addWidget(self.stop_button)
        layout = QVBoxLayout(self)
        layout.addLayout(row)
        layout.addWidget(self.status)
        layout.addWidget(self.bar)
        self.status.hide()
        self.bar.hide()
        self._repaint = QTimer(self)
        self._repaint.setSingleShot(True)
        self._repaint.setInterval(REPAINT_MS)
        self._repaint.timeout.connect(self._paint)
        bridge.downloads_changed.connect(self._on_downloads_changed)
        bridge.feed_reset.connect(self._on_feed_reset)
        self._update_actions()

    @property
    def running(self) -> bool:
        """A pull is being queued, waits or runs."""
        if self._adding is not None:
            return True
        return self._latest is not None and self._latest.state in ACTIVE

    def pull(self, name: str | None = None) -> None:
        model = (name or self.name_edit.text()).strip()
        if not model or self.running:
            return
        self.job_id, self.item, self._latest = None, None, None
        self.status.setText(f"Queueing the pull of {model}…")
        self.status.show()
        self.bar.setRange(0, 0)
        self.bar.show()
        request = OllamaDownloadRequest(model=model, instance=self._instance())
        self._adding = call = self._calls.add_ollama_pull(request)
        self._ops.run(call, self._on_add_succeeded, on_failure=self._on_add_failed)
        call.finished.connect(self._on_add_finished)
        self._update_actions()

    def stop(self) -> None:
        """Pause the pull (Ollama keeps its layers); Pull resumes it."""
        job = self.job_id
        if job is None or not self.running or self._pausing is not None:
            return
        self._pausing = call = self._calls.pause(job)
        self._ops.run(
            call,
            self._take,
            on_failure=lambda failure: self.status.setText(f"Not paused: {failure}"),
        )
        call.finished.connect(self._on_pause_finished)
        self._update_actions()

    def set_enabled(self, enabled: bool) -> None:
        self.name_edit.setEnabled(enabled)
        self._update_actions()

    # -- progress -----------------------------------------------------------------------

    def _on_add_succeeded(self, item: OllamaPullItem) -> None:
        self.job_id = item.id
        self._take(item)
        if self._bridge.downloads is not None:
            # The feed may have told how it went before this answer came.
            self._on_downloads_changed(self._bridge.downloads)

    def _on_add_failed(self, failure: Failure) -> None:
        self.bar.hide()
        self.status.setText(f"The pull was not queued: {failure}")

    def _on_add_finished(self) -> None:
        self._adding = None
        self._update_actions()

    def _on_pause_finished(self) -> None:
        self._pausing = None
        self._update_actions()

    def _on_downloads_changed(self, view: DownloadQueueView) -> None:
        found = next((item for item in view.ollama if item.id == self.job_id), None)
        if found is not None:
            self._take(found)

    def _on_feed_reset(self) -> None:
        """Changes may have been missed (the daemon restarted): read the queue once."""
        latest = self._latest
        if latest is not None and latest.state != DownloadState.DONE:
            self._ops.run(self._calls.downloads(), self._on_downloads_changed)

    def _take(self, item: OllamaPullItem) -> None:
        if item.id != self.job_id:
            return
        self._latest = item
        if item.state in ACTIVE:
            if not self._repaint.isActive():
                self._repaint.start()
        else:
            self._repaint.stop()
            self._paint()

    def _paint(self) -> None:
        item, before = self._latest, self.item
        if item is None:
            return
        self.item = item
        self.status.setText(pull_in_words(item))
        if item.state in ACTIVE:
            self.bar.show()
            if item.size and item.state == DownloadState.DOWNLOADING:
                self.bar.setRange(0, BAR_STEPS)
                self.bar.setValue(int(min(1.0, item.bytes_done / item.size) * BAR_STEPS))
                self.bar.setFormat(bytes_in_words(item.bytes_done, item.size))
            else:
                self.bar.setRange(0, 0)
        else:
            self.bar.hide()
        if item.state == DownloadState.DONE and (before is None or before.state != item.state):
            self.pulled.emit(item.model)
        self._update_actions()

    def _update_actions(self) -> None:
        running = self.running
        self.pull_button.setEnabled(
            self.name_edit.isEnabled() and not running and bool(self.name_edit.text().strip())
        )
        self.stop_button.setVisible(running)
        self.stop_button.setEnabled(self.job_id is not None and self._pausing is None)
