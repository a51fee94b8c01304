"""The instances table's view: whole rows, one chosen at a time, the status taking the room."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableView

from roundhouse.gui.widgets.instances_model import HEADERS, Column, InstancesModel


def instances_table(model: InstancesModel) -> QTableView:
    """One row per instance, chosen whole; the status column takes the room left."""
    table = QTableView()
    table.setModel(model)
    table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
    table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    table.setAlternatingRowColors(True)
    table.setWordWrap(False)
    table.setTextElideMode(Qt.TextElideMode.ElideMiddle)
    table.verticalHeader().hide()
    table.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
    table.setMinimumHeight(110)
    header = table.horizontalHeader()
    header.setHighlightSections(False)
    for column in HEADERS:
        header.setSectionResizeMode(column, QHeaderView.ResizeMode.ResizeToContents)
    # The model's name may be long (a full repo id): a fixed width, the path in the tooltip.
    header.setSectionResizeMode(Column.MODEL, QHeaderView.ResizeMode.Interactive)
    header.resizeSection(Column.MODEL, 200)
    header.setSectionResizeMode(Column.STATUS, QHeaderView.ResizeMode.Stretch)
    return table
