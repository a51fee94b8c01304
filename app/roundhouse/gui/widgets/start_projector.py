"""The start dialog's Vision projector field: the mmproj GGUF that lets a model read images."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QWidget,
)

HINT = (
    "Lets a vision model read images attached in the chat. Leave it empty to use the "
    "mmproj*.gguf beside the model (a vision repo ships one; Roundhouse downloads it with the "
    "model); type none to start without one."
)


class StartProjector(QGroupBox):
    """One row (a path, Browse...) and its sentence; shown for llama.cpp only."""

    changed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Vision", parent)
        self.edit = QLineEdit()
        self.edit.setObjectName("mmproj")
        self.edit.setPlaceholderText("the mmproj beside the model, if any")
        self.edit.setToolTip(HINT)
        self.edit.setAccessibleName("Vision projector")
        self.browse = QPushButton("Browse...")
        self.browse.setToolTip("Choose the projector's .gguf file")
        self.hint = QLabel(HINT)
        self.hint.setWordWrap(True)
        self.hint.setObjectName("hint")
        self.file_dialog: QFileDialog | None = None
        row = QHBoxLayout()
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.edit, 1)
        row.addWidget(self.browse)
        field = QWidget()
        field.setLayout(row)
        form = QFormLayout(self)
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        form.addRow("Vision projector:", field)
        form.addRow(self.hint)
        self.edit.textChanged.connect(self.changed)
        self.browse.clicked.connect(self._on_browse_clicked)

    def value(self) -> str | None:
        """The projector as typed (~ expanded); None: the one beside the model."""
        text = self.edit.text().strip()
        if not text:
            return None
        return str(Path(text).expanduser()) if text.startswith("~") else text

    def set_value(self, value: str | None) -> None:
        self.edit.setText(value or "")

    def _on_browse_clicked(self) -> None:
        current = self.value()
        start_in = str(Path(current).parent) if current and current != "none" else str(Path.home())
        box = QFileDialog(self, "Choose the vision projector", start_in)
        box.setFileMode(QFileDialog.FileMode.ExistingFile)
        box.setNameFilters(["Vision projectors (*mmproj*.gguf)", "GGUF files (*.gguf)"])
        box.fileSelected.connect(self.edit.setText)
        self.file_dialog = box
        box.open()
