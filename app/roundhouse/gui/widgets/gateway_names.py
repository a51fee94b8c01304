"""The gateway's model names in Settings: aliases (another name for a model, e.g. the name
a client asks for by default) and the default model for names nothing lists.

Saved with the page like the other gateway settings; the daemon checks them and the page
shows its refusal in words (an alias of an alias, one named like a served model)."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLineEdit,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from roundhouse.api.settings import GatewaySettings

_HEADERS = ("Alias", "Model it stands for")


class ModelNamesEditor(QWidget):
    """A table of aliases with Add and Remove, and the default model; `changed` when edited."""

    changed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.table = QTableWidget(0, len(_HEADERS))
        self.table.setHorizontalHeaderLabels(_HEADERS)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        self.table.verticalHeader().hide()
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setToolTip(GatewaySettings.model_fields["aliases"].description or "")
        self.table.setMaximumHeight(140)
        self.table.itemChanged.connect(self._on_table_item_changed)
        self.table.itemSelectionChanged.connect(self._update_buttons)
        self.add_button = QPushButton("Add alias")
        self.add_button.clicked.connect(self.add_alias)
        self.remove_button = QPushButton("Remove")
        self.remove_button.clicked.connect(self.remove_selected)
        self.default_model = QLineEdit()
        self.default_model.setPlaceholderText("None: a name nothing lists gets 404")
        self.default_model.setToolTip(
            GatewaySettings.model_fields["default_model"].description or ""
        )
        self.default_model.textChanged.connect(self._on_default_changed)

        buttons = QHBoxLayout()
        buttons.addWidget(self.add_button)
        buttons.addWidget(self.remove_button)
        buttons.addStretch(1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.table)
        layout.addLayout(buttons)
        self._update_buttons()

    def show_names(self, aliases: dict[str, str], default: str | None) -> None:
        self.table.blockSignals(True)
        self.table.setRowCount(0)
        for alias, target in sorted(aliases.items()):
            self._append(alias, target)
        self.table.blockSignals(False)
        self.default_model.blockSignals(True)
        self.default_model.setText(default or "")
        self.default_model.blockSignals(False)
        self._update_buttons()

    def aliases(self) -> dict[str, str]:
        """The rows as typed (the daemon checks them); rows left wholly empty are skipped."""
        out: dict[str, str] = {}
        for row in range(self.table.rowCount()):
            alias, target = (self._text(row, column) for column in range(len(_HEADERS)))
            if alias or target:
                out[alias] = target
        return out

    def default(self) -> str | None:
        return self.default_model.text().strip() or None

    def add_alias(self) -> None:
        self._append("", "")
        row = self.table.rowCount() - 1
        self.table.setCurrentCell(row, 0)
        item = self.table.item(row, 0)
        if item is not None:
            self.table.editItem(item)
        self.changed.emit()

    def remove_selected(self) -> None:
        rows = sorted({index.row() for index in self.table.selectedIndexes()}, reverse=True)
        for row in rows:
            self.table.removeRow(row)
        if rows:
            self.changed.emit()
        self._update_buttons()

    def _append(self, alias: str, target: str) -> None:
        row = self.table.rowCount()
        self.table.insertRow(row)
        self.table.setItem(row, 0, QTableWidgetItem(alias))
        self.table.setItem(row, 1, QTableWidgetItem(target))

    def _text(self, row: int, column: int) -> str:
        item = self.table.item(row, column)
        return item.text().strip() if item is not None else ""

    def _update_buttons(self) -> None:
        self.remove_button.setEnabled(bool(self.table.selectedIndexes()))

    def _on_table_item_changed(self, _: QTableWidgetItem) -> None:
        self.changed.emit()

    def _on_default_changed(self, _: str) -> None:
        self.changed.emit()
