"""The file dialog that picks a GGUF file to import: one for the Library and the first-run guide."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QFileDialog, QWidget

TITLE = "Import a GGUF file"


def gguf_file_dialog(parent: QWidget) -> QFileDialog:
    """A dialog for one existing .gguf file; the caller connects `fileSelected` and opens it
    with open(), not exec(): a nested event loop would stall qasync's tasks."""
    box = QFileDialog(parent, TITLE, str(Path.home()))
    box.setFileMode(QFileDialog.FileMode.ExistingFile)
    box.setNameFilters(["GGUF models (*.gguf)", "All files (*)"])
    return box
