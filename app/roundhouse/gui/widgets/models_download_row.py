"""One item of the download queue (a Hub file or an Ollama pull): its bar, bytes, speed and
ETA, error, and its three buttons."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QFrame,
    QGridLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QWidget,
)

from roundhouse.api.downloads import (
    RESUMABLE_STATES,
    AnyDownloadItem,
    DownloadState,
    OllamaPullItem,
)
from roundhouse.base.units import format_bytes
from roundhouse.gui.widgets.models_words import STATE_NAMES, item_line

BAR_STEPS = 1000
PAUSABLE = frozenset({DownloadState.QUEUED, DownloadState.DOWNLOADING})
NOT_CANCELLABLE = frozenset({DownloadState.DONE, DownloadState.CANCELLED})
FILE_CANCEL_TIP = "Stop and delete the partial file"
OLLAMA_CANCEL_TIP = "Stop the pull; Ollama keeps its partial layers until it cleans up"


def item_label(item: AnyDownloadItem) -> str:
    """The row's title: the file's path, or 'ollama:<model>' for an Ollama pull."""
    return f"ollama:{item.model}" if isinstance(item, OllamaPullItem) else item.path


class DownloadRow(QFrame):
    """Shows the latest item given; buttons are enabled by its state."""

    action_requested = Signal(str, str)  # the item's id, "pause" | "resume" | "cancel"

    def __init__(self, item: AnyDownloadItem, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.item = item
        self._busy = False
        self.name_label = QLabel()
        self.name_label.setObjectName("sectionTitle")
        self.name_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.repo_label = QLabel()
        self.repo_label.setObjectName("hint")
        self.bar = QProgressBar()
        self.bar.setRange(0, BAR_STEPS)
        self.bar.setTextVisible(False)
        self.bar.setMaximumHeight(10)
        self.line_label = QLabel()
        self.error_label = QLabel()
        self.error_label.setObjectName("formProblem")
        self.error_label.setWordWrap(True)
        self.error_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.pause_button = QPushButton("Pause")
        self.resume_button = QPushButton("Resume")
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setToolTip(FILE_CANCEL_TIP)
        for button, action in (
            (self.pause_button, "pause"),
            (self.resume_button, "resume"),
            (self.cancel_button, "cancel"),
        ):
            button.clicked.connect(lambda _=False, a=action: self._request(a))
        layout = QGridLayout(self)
        layout.setContentsMargins(10, 6, 10, 6)
        layout.setVerticalSpacing(3)
        layout.addWidget(self.name_label, 0, 0)
        layout.addWidget(self.repo_label, 0, 1, Qt.AlignmentFlag.AlignRight)
        layout.addWidget(self.pause_button, 0, 2, 2, 1)
        layout.addWidget(self.resume_button, 0, 3, 2, 1)
        layout.addWidget(self.cancel_button, 0, 4, 2, 1)
        layout.addWidget(self.bar, 1, 0, 1, 2)
        layout.addWidget(self.line_label, 2, 0, 1, 2)
        layout.addWidget(self.error_label, 3, 0, 1, 5)
        layout.setColumnStretch(0, 1)
        self.show_item(item)

    def show_item(self, item: AnyDownloadItem) -> None:
        self.item = item
        self.name_label.setText(item_label(item))
        share = item.bytes_done / item.size if item.size else 0.0
        done = item.state == DownloadState.DONE
        self.bar.setValue(BAR_STEPS if done else int(min(1.0, share) * BAR_STEPS))
        line = item_line(item)
        if isinstance(item, OllamaPullItem):
            self.repo_label.setText(f"Ollama · {item.base_url}")
            self.name_label.setToolTip(f"Pulled through Ollama's API into {item.base_url}")
            self.cancel_button.setToolTip(OLLAMA_CANCEL_TIP)
            if item.status and not done:
                line = f"{line} · {item.status}"
            error = item.error or item.note or ""
        else:
            revision = "" if item.revision == "main" else f" @ {item.revision}"
            self.repo_label.setText(item.repo + revision)
            self.name_label.setToolTip(item.local_path or item.path)
            if done and item.local_path:
                line = f"done · {format_bytes(item.size)} · {item.local_path}"
            error = item.error or ""
            if item.state == DownloadState.QUARANTINED and item.quarantine_path:
                error = f"{error} The file was kept at {item.quarantine_path}.".strip()
        self.line_label.setText(line)
        self.error_label.setText(error)
        self.error_label.setVisible(bool(error))
        self._update_buttons()

    def set_busy(self, busy: bool) -> None:
        """While an action is under way, no second one."""
        self._busy = busy
        self._update_buttons()

    def state_text(self) -> str:
        return STATE_NAMES.get(self.item.state, self.item.state.value)

    def _request(self, action: str) -> None:
        self.action_requested.emit(self.item.id, action)

    def _update_buttons(self) -> None:
        state, idle = self.item.state, not self._busy
        self.pause_button.setEnabled(idle and state in PAUSABLE)
        self.resume_button.setEnabled(idle and state in RESUMABLE_STATES)
        self.cancel_button.setEnabled(idle and state not in NOT_CANCELLABLE)
        self.pause_button.setVisible(state != DownloadState.DONE)
        self.resume_button.setVisible(state != DownloadState.DONE)
        self.cancel_button.setVisible(state != DownloadState.DONE)
