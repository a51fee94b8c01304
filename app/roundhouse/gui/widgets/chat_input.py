"""The chat's input box: Enter sends, Shift+Enter starts a new line."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import QPlainTextEdit, QWidget

PLACEHOLDER = "Message the model (Enter sends, Shift+Enter for a new line)"


class ChatInput(QPlainTextEdit):
    """Emits `submitted` on Enter; the text stays until the page takes it."""

    submitted = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setPlaceholderText(PLACEHOLDER)
        self.setTabChangesFocus(True)
        lines = 4
        self.setFixedHeight(self.fontMetrics().lineSpacing() * lines + 14)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        enter = event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter)
        plain = not event.modifiers() & (
            Qt.KeyboardModifier.ShiftModifier | Qt.KeyboardModifier.ControlModifier
        )
        if enter and plain:
            event.accept()
            self.submitted.emit()
            return
        if enter:
            # Shift+Enter (or Ctrl+Enter) is a new line, not a "line separator" character.
            self.insertPlainText("\n")
            event.accept()
            return
        super().keyPressEvent(event)

    def take_text(self) -> str:
        """The text to send (stripped), and the box emptied; '' leaves it as it was."""
        text = self.toPlainText().strip()
        if text:
            self.clear()
        return text
