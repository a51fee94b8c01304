"""The app's read-only tables: whole rows chosen one at a time, sized to their contents."""

from __future__ import annotations

from PySide6.QtCore import QAbstractItemModel, Qt
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableView, QTableWidget


def cell_text(table: QTableWidget, row: int, column: int) -> str:
    """The text of a cell; '' for one never filled (Qt answers None for it)."""
    item = table.item(row, column)
    return item.text() if item is not None else ""


def table_view(model: QAbstractItemModel, stretch_column: int = 0) -> QTableView:
    """Columns fit their contents; `stretch_column` takes the room left; long texts elide."""
    view = QTableView()
    view.setModel(model)
    view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
    view.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    view.setAlternatingRowColors(True)
    view.setWordWrap(False)
    view.setTextElideMode(Qt.TextElideMode.ElideMiddle)
    view.verticalHeader().hide()
    # Rows told apart by alternating fills (app.qss), not a grid: a calmer table.
    view.setShowGrid(False)
    header = view.horizontalHeader()
    header.setHighlightSections(False)
    header.setDefaultAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
    for column in range(model.columnCount()):
        header.setSectionResizeMode(column, QHeaderView.ResizeMode.ResizeToContents)
    header.setSectionResizeMode(stretch_column, QHeaderView.ResizeMode.Stretch)
    return view
