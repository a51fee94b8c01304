"""A notice inside a page, in the banner's style: a sentence and the buttons that act on it."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget


class Notice(QFrame):
    """Hidden until `show_text`; `problem` gives it the colours of a failure."""

    def __init__(self, *, problem: bool = False, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("notice")
        self.setProperty("problem", problem)
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

    def text(self) -> str:
        return self.message_label.text()
