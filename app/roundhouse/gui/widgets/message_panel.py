"""A panel that says one thing and offers the buttons that act on it: what a Notice and an
EmptyState share (the two differ in layout, colours and icon)."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QWidget


class MessagePanel(QFrame):
    """Hidden until `show_text`. Subclasses lay out `message_label` and `buttons`."""

    def __init__(self, *, centred_buttons: bool, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.message_label = QLabel()
        self.message_label.setWordWrap(True)
        self.message_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.buttons = QHBoxLayout()
        self.buttons.setContentsMargins(0, 0, 0, 0)
        # Buttons go before the last stretch: after a first one too, the row is centred.
        if centred_buttons:
            self.buttons.addStretch(1)
        self.buttons.addStretch(1)
        self.hide()

    def add_action(self, text: str, slot: Callable[[], object]) -> QPushButton:
        """A button under the sentence, in the order added."""
        button = QPushButton(text)
        button.clicked.connect(lambda: slot())
        self.buttons.insertWidget(self.buttons.count() - 1, button)
        return button

    def show_text(self, text: str, tooltip: str = "") -> None:
        self.message_label.setText(text)
        self.message_label.setToolTip(tooltip)
        self.show()

    def text(self) -> str:
        return self.message_label.text()
