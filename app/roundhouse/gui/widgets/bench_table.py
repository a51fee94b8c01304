"""vLLM's result table for one run, or several runs side by side (aligned by metric)."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QFont
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableWidget, QTableWidgetItem

from roundhouse.api.bench import BenchResult, BenchStatus, counts_line, table_rows


def run_title(result: BenchResult) -> str:
    """The run's column heading; a run with failures says so in it."""
    req = result.request
    engine = f" on {result.engine}" if result.engine else ""
    m = result.metrics
    if result.status is BenchStatus.FAILED:
        marked = " FAILED"
    elif m.failed:
        marked = f" ⚠ {counts_line(m.completed, m.failed)}"
    else:
        marked = ""
    return f"{req.label or req.model}{engine} ({result.id}){marked}"


class BenchTable(QTableWidget):
    """A metric a row, a run a column; section headings in bold with no values."""

    def __init__(self) -> None:
        super().__init__()
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        self.verticalHeader().setVisible(False)
        self.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.horizontalHeader().setStretchLastSection(True)
        self.results: list[BenchResult] = []

    def show_results(self, results: list[BenchResult]) -> None:
        self.results = list(results)
        columns = [dict(table_rows(r)) for r in results]
        # Goodput is in some results only: every label once, in vLLM's order.
        labels = list(dict.fromkeys(label for r in results for label, _ in table_rows(r)))
        self.clear()
        self.setColumnCount(1 + len(results))
        self.setHorizontalHeaderLabels(["Metric", *(run_title(r) for r in results)])
        self.setRowCount(len(labels))
        bold = QFont(self.font())
        bold.setBold(True)
        for row, label in enumerate(labels):
            values = [column.get(label, "-") for column in columns]
            heading = QTableWidgetItem(label)
            if all(v == "" for v in values):
                heading.setFont(bold)
            self.setItem(row, 0, heading)
            for col, value in enumerate(values, start=1):
                item = QTableWidgetItem(value)
                item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                self.setItem(row, col, item)

    def value(self, label: str, column: int = 0) -> str | None:
        """The text shown for `label` in the `column`-th run (None when not shown)."""
        for row in range(self.rowCount()):
            heading = self.item(row, 0)
            if heading is not None and heading.text() == label:
                item = self.item(row, column + 1)
                return item.text() if item is not None else None
        return None
