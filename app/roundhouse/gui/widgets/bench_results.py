"""The kept benchmark results, newest first; several may be selected to compare them."""

from __future__ import annotations

import time

from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableWidget, QTableWidgetItem

from roundhouse.api.bench import BenchList, BenchStatus, BenchSummary, counts_line
from roundhouse.gui.theme.roles import role_colour

COLUMNS = (
    "When",
    "Model or label",
    "Engine",
    "Requests",
    "Output tok/s",
    "TTFT p50 ms",
    "Failures",
    "Id",
)
# Rows of runs with failures: the theme's colour for a problem, as the cell is filled.
FAILED_ROLE = "danger_text"


def _cells(s: BenchSummary) -> tuple[str, ...]:
    failed = s.status is BenchStatus.FAILED
    # A run with failures: its rates count the successful requests only (the asterisk).
    mark = "*" if s.failed else ""
    return (
        time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(s.created_at)),
        s.label or s.model,
        s.engine or "-",
        counts_line(s.completed, s.failed) if s.failed else str(s.num_prompts),
        "-" if failed else f"{s.output_throughput:.1f}{mark}",
        "-" if failed else f"{s.ttft_median_ms:.1f}{mark}",
        ("Failed: " if failed else "") + "; ".join(s.reasons) if s.failed else "",
        s.id,
    )


class BenchResults(QTableWidget):
    """A row per result; its id is kept in the first cell's user data."""

    def __init__(self) -> None:
        super().__init__(0, len(COLUMNS))
        self.setHorizontalHeaderLabels(COLUMNS)
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.verticalHeader().setVisible(False)
        self.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.horizontalHeader().setStretchLastSection(True)
        self.setToolTip("Select one to show or export it; select several to compare them")

    def set_results(self, listing: BenchList) -> None:
        """List them; what was selected and is still there stays selected."""
        kept = set(self.selected_ids())
        self.blockSignals(True)
        self.clearSelection()
        self.setRowCount(len(listing.results))
        for row, summary in enumerate(listing.results):
            for col, text in enumerate(_cells(summary)):
                item = QTableWidgetItem(text)
                if col == 0:
                    item.setData(Qt.ItemDataRole.UserRole, summary.id)
                if 3 <= col <= 5:
                    item.setTextAlignment(
                        Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
                    )
                if summary.failed:
                    item.setForeground(QBrush(role_colour(FAILED_ROLE)))
                    item.setToolTip(
                        f"{counts_line(summary.completed, summary.failed)}; "
                        "throughput and latencies (*) cover the successful requests only"
                    )
                self.setItem(row, col, item)
        self.blockSignals(False)
        for row in range(self.rowCount()):
            if self.id_at(row) in kept:
                self.add_to_selection(row)

    def add_to_selection(self, row: int) -> None:
        model = self.selectionModel()
        index = self.model().index(row, 0)
        model.select(
            index,
            model.SelectionFlag.Select | model.SelectionFlag.Rows,
        )

    def text_at(self, row: int, column: str) -> str:
        """The text of `column` (one of COLUMNS) in `row`."""
        item = self.item(row, COLUMNS.index(column))
        return item.text() if item is not None else ""

    def id_at(self, row: int) -> str:
        item = self.item(row, 0)
        return str(item.data(Qt.ItemDataRole.UserRole)) if item is not None else ""

    def ids(self) -> list[str]:
        return [self.id_at(row) for row in range(self.rowCount())]

    def selected_ids(self) -> list[str]:
        rows = sorted({index.row() for index in self.selectionModel().selectedRows()})
        return [self.id_at(row) for row in rows]

    def select_ids(self, ids: list[str]) -> None:
        self.clearSelection()
        for row in range(self.rowCount()):
            if self.id_at(row) in ids:
                self.add_to_selection(row)
