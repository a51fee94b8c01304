"""What the Ollama page shows when no Ollama answers: why, how to start one, Retry."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

HOW_TO_START = (
    "Start it with <code>ollama serve</code> in a terminal or open the Ollama app; or start "
    "it from the Engines page (Start… → Ollama) once it is installed. Roundhouse finds it at "
    "<code>OLLAMA_HOST</code> (127.0.0.1:11434 unless set)."
)


class OllamaAbsentView(QWidget):
    """A panel, never a dialog: the page keeps looking and this stays until one answers."""

    retry_clicked = Signal()
    get_clicked = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.title = QLabel("No Ollama answers.")
        self.title.setObjectName("sectionTitle")
        self.detail = QLabel()
        self.detail.setWordWrap(True)
        self.detail.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        how = QLabel(HOW_TO_START)
        how.setWordWrap(True)
        how.setTextFormat(Qt.TextFormat.RichText)
        self.retry_button = QPushButton("Retry")
        self.retry_button.clicked.connect(self.retry_clicked)
        self.get_button = QPushButton("Get Ollama")
        self.get_button.setToolTip("Open Ollama's installer for this system in the browser")
        self.get_button.clicked.connect(self.get_clicked)
        buttons = QHBoxLayout()
        buttons.addWidget(self.retry_button)
        buttons.addWidget(self.get_button)
        buttons.addStretch(1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(24, 24, 24, 24)
        layout.addWidget(self.title)
        layout.addWidget(self.detail)
        layout.addWidget(how)
        layout.addLayout(buttons)
        layout.addStretch(1)

    def show_reason(self, title: str, detail: str, *, installer: bool) -> None:
        self.title.setText(title)
        self.detail.setText(detail)
        self.get_button.setVisible(installer)
