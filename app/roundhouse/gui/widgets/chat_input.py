"""The chat's input box: Enter sends, Shift+Enter starts a new line; images pasted or dropped
on it are handed to the attachments (ADR 45)."""

from __future__ import annotations

from PySide6.QtCore import QMimeData, Qt, Signal
from PySide6.QtGui import QImage, QKeyEvent
from PySide6.QtWidgets import QPlainTextEdit, QWidget

PLACEHOLDER = "Message the model (Enter sends, Shift+Enter for a new line)"


class ChatInput(QPlainTextEdit):
    """Emits `submitted` on Enter; the text stays until the page takes it."""

    submitted = Signal()
    image_files = Signal(list)  # local image files pasted or dropped (paths)
    image_pixels = Signal(QImage)  # an image pasted from the clipboard (pixels, no file)

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

    # -- images pasted or dropped: attached, not typed as a path ----------------------------

    def canInsertFromMimeData(self, source: QMimeData) -> bool:
        return (
            bool(_image_files(source)) or source.hasImage() or super().canInsertFromMimeData(source)
        )

    def insertFromMimeData(self, source: QMimeData) -> None:
        files = _image_files(source)
        if files:
            self.image_files.emit(files)
            return
        if source.hasImage():
            image = source.imageData()
            if isinstance(image, QImage):
                self.image_pixels.emit(image)
                return
        super().insertFromMimeData(source)


IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".webp", ".gif")


def _image_files(source: QMimeData) -> list[str]:
    """The local image files among what is pasted or dropped."""
    if not source.hasUrls():
        return []
    return [
        url.toLocalFile()
        for url in source.urls()
        if url.isLocalFile() and url.toLocalFile().lower().endswith(IMAGE_SUFFIXES)
    ]
