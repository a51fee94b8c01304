"""The instances table's view: whole rows, one chosen at a time, the status taking the room."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QHeaderView, QTableView

from roundhouse.gui.widgets.instances_model import Column, InstancesModel
from roundhouse.gui.widgets.table_view import table_view


def instances_table(model: InstancesModel) -> QTableView:
    """One row per instance, chosen whole; the status column takes the room left."""
    table = table_view(model, stretch_column=Column.STATUS)
    table.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
    table.setMinimumHeight(110)
    # The model's name may be long (a full repo id): a fixed width, the path in the tooltip.
    header = table.horizontalHeader()
    header.setSectionResizeMode(Column.MODEL, QHeaderView.ResizeMode.Interactive)
    header.resizeSection(Column.MODEL, 200)
    return table
