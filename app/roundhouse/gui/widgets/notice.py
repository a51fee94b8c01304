"""A notice inside a page: a sentence (or a heading and lines) in the colours of what it
means, and the buttons that act on it."""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Literal

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

# What a notice says: something to know or do (blue), a warning (amber: a benchmark whose
# requests failed), a problem (red: search with no connection). Colours in app.qss.
Tone = Literal["info", "warning", "problem"]


class Notice(QFrame):
    """Hidden until `show_text` or `show_lines`; `tone` sets its colours."""

    def __init__(self, *, tone: Tone = "info", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("notice")
        self.setProperty("tone", tone)
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.message_label = QLabel()
        self.message_label.setWordWrap(True)
        self.message_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self._buttons = QHBoxLayout()
        self._buttons.setContentsMargins(0, 0, 0, 0)
        self._buttons.addStretch(1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(12, 8, 12, 8)
        layout.addWidget(self.message_label)
        layout.addLayout(self._buttons)
        self.hide()

    def add_action(self, text: str, slot: Callable[[], object]) -> QPushButton:
        """A button under the sentence, in the order added."""
        button = QPushButton(text)
        button.clicked.connect(lambda: slot())
        self._buttons.insertWidget(self._buttons.count() - 1, button)
        return button

    def show_text(self, text: str, tooltip: str = "") -> None:
        self.message_label.setText(text)
        self.message_label.setToolTip(tooltip)
        self.show()

    def show_lines(self, heading: str, lines: list[str]) -> None:
        """A bold heading, then a line each."""
        body = "".join(f"<br>{html.escape(line)}" for line in lines)
        self.message_label.setText(f"<b>{html.escape(heading)}</b>{body}")
        self.message_label.setToolTip("")
        self.show()

    def text(self) -> str:
        return self.message_label.text()
