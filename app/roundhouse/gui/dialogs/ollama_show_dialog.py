"""What Ollama says of one model: its details, GGUF metadata, parameters, template, license."""

from __future__ import annotations

import json
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QHeaderView,
    QLabel,
    QPlainTextEdit,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from roundhouse.api.ollama import OllamaShownModel
from roundhouse.gui.widgets.ollama_tables import modified_in_words
from roundhouse.gui.widgets.table_view import cell_text

# Token lists and merges are huge arrays: their size is what matters, not their content.
MAX_VALUE_CHARS = 200


def info_value_in_words(value: Any) -> str:
    if isinstance(value, list):
        return f"[{len(value):,} items]" if len(value) > 16 else json.dumps(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    text = value if isinstance(value, str) else json.dumps(value)
    return text if len(text) <= MAX_VALUE_CHARS else text[:MAX_VALUE_CHARS] + "…"


def _text_view(text: str | None, empty: str) -> QPlainTextEdit:
    view = QPlainTextEdit(text or "")
    view.setReadOnly(True)
    view.setPlaceholderText(empty)
    view.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
    return view


class OllamaShowDialog(QDialog):
    """Read-only; model info keys are GGUF's ('general.architecture', 'llama.context_length')."""

    def __init__(self, shown: OllamaShownModel, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.shown = shown
        self.setWindowTitle(f"Ollama model {shown.name}")
        self.resize(720, 560)
        details = shown.details
        summary = QFormLayout()
        rows = (
            ("Family:", details.family),
            ("Parameters:", details.parameter_size),
            ("Quantization:", details.quantization_level),
            ("Format:", details.format),
            ("Architecture:", shown.architecture),
            ("Trained context:", f"{shown.context_length:,}" if shown.context_length else None),
            ("Abilities:", ", ".join(shown.capabilities) or None),
            ("Modified:", modified_in_words(shown.modified_at) if shown.modified_at else None),
        )
        for label, value in rows:
            text = QLabel(value or "—")
            text.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            summary.addRow(label, text)

        self.info_table = QTableWidget(len(shown.model_info), 2)
        self.info_table.setHorizontalHeaderLabels(["Key", "Value"])
        self.info_table.verticalHeader().hide()
        self.info_table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.info_table.setAlternatingRowColors(True)
        header = self.info_table.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        for row, key in enumerate(sorted(shown.model_info)):
            self.info_table.setItem(row, 0, QTableWidgetItem(key))
            self.info_table.setItem(
                row, 1, QTableWidgetItem(info_value_in_words(shown.model_info[key]))
            )
        self.tabs = QTabWidget()
        self.tabs.addTab(self.info_table, "Model info")
        self.tabs.addTab(_text_view(shown.parameters, "No parameters set."), "Parameters")
        self.tabs.addTab(_text_view(shown.template, "No template."), "Template")
        self.tabs.addTab(_text_view(shown.license, "No license given."), "License")
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addLayout(summary)
        layout.addWidget(self.tabs, 1)
        layout.addWidget(buttons)

    def info(self) -> dict[str, str]:
        return {
            cell_text(self.info_table, row, 0): cell_text(self.info_table, row, 1)
            for row in range(self.info_table.rowCount())
        }
