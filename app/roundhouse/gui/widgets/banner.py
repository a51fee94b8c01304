"""A strip above the pages that says the daemon cannot be reached, with Retry and Start."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QWidget


class Banner(QFrame):
    """Hidden while connected; shows the problem, or a busy line while starting."""

    retry_clicked = Signal()
    start_clicked = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("banner")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.message_label = QLabel()
        self.message_label.setObjectName("bannerMessage")
        self.message_label.setWordWrap(True)
        self.message_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.retry_button = QPushButton("Retry")
        self.retry_button.setToolTip("Look for a running daemon again")
        self.start_button = QPushButton("Start the daemon")
        self.start_button.setToolTip("Start the Roundhouse daemon in the background")
        self.retry_button.clicked.connect(self.retry_clicked)
        self.start_button.clicked.connect(self.start_clicked)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(12, 8, 12, 8)
        layout.addWidget(self.message_label, 1)
        layout.addWidget(self.retry_button)
        layout.addWidget(self.start_button)
        self.hide()

    def show_problem(self, message: str) -> None:
        self.setProperty("busy", False)
        self._restyle()
        self.message_label.setText(
            f"<b>Not connected to the Roundhouse daemon.</b> {_escape(message)}<br>"
            "Retrying in the background; you can also retry now or start the daemon."
        )
        self._set_buttons_enabled(True)
        self.show()

    def show_busy(self, message: str) -> None:
        self.setProperty("busy", True)
        self._restyle()
        self.message_label.setText(_escape(message))
        self._set_buttons_enabled(False)
        self.show()

    def _set_buttons_enabled(self, enabled: bool) -> None:
        self.retry_button.setEnabled(enabled)
        self.start_button.setEnabled(enabled)

    def _restyle(self) -> None:
        # A dynamic property only changes the look after the style is re-applied.
        for widget in (self, self.message_label):
            widget.style().unpolish(widget)
            widget.style().polish(widget)


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
