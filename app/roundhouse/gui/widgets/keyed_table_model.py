"""A read-only table of rows keyed by a name, updated in place so views keep their selection."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt

AnyIndex = QModelIndex | QPersistentModelIndex
# The row's whole item (an OllamaModel, ...), for views and actions.
ITEM_ROLE = Qt.ItemDataRole.UserRole + 1


@dataclass(frozen=True)
class Row:
    key: str
    texts: tuple[str, ...]
    item: Any = None
    tooltips: tuple[str | None, ...] = field(default=())


class KeyedTableModel(QAbstractTableModel):
    """Rows keep their place; new keys are appended, gone ones removed, the rest changed."""

    def __init__(
        self,
        headers: tuple[str, ...],
        right_aligned: frozenset[int] = frozenset(),
        parent: Any = None,
    ) -> None:
        super().__init__(parent)
        self.headers = headers
        self._right = right_aligned
        self._rows: list[Row] = []

    def set_rows(self, rows: list[Row]) -> None:
        latest = {row.key: row for row in rows}
        for index in reversed(range(len(self._rows))):
            if self._rows[index].key not in latest:
                self.beginRemoveRows(QModelIndex(), index, index)
                del self._rows[index]
                self.endRemoveRows()
        for index, old in enumerate(self._rows):
            new = latest[old.key]
            if new != old:
                self._rows[index] = new
                self.dataChanged.emit(
                    self.index(index, 0), self.index(index, len(self.headers) - 1)
                )
        known = {row.key for row in self._rows}
        fresh = [row for row in rows if row.key not in known]
        if fresh:
            first = len(self._rows)
            last = first + len(fresh) - 1
            self.beginInsertRows(QModelIndex(), first, last)
            self._rows.extend(fresh)
            self.endInsertRows()
            # Views size ResizeToContents columns on dataChanged, not on inserted rows.
            self.dataChanged.emit(self.index(first, 0), self.index(last, len(self.headers) - 1))

    def row(self, index: int) -> Row:
        return self._rows[index]

    def keys(self) -> list[str]:
        return [row.key for row in self._rows]

    def row_of(self, key: str) -> int | None:
        return next((i for i, row in enumerate(self._rows) if row.key == key), None)

    def texts(self) -> list[dict[str, str]]:
        """What each row shows, by header: for tests and the screenshots."""
        return [dict(zip(self.headers, row.texts, strict=True)) for row in self._rows]

    def rowCount(self, parent: AnyIndex = QModelIndex()) -> int:  # noqa: B008 - Qt's signature
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent: AnyIndex = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self.headers)

    def headerData(
        self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole
    ) -> Any:
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return self.headers[section]
        return None

    def data(self, index: AnyIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or index.row() >= len(self._rows):
            return None
        row = self._rows[index.row()]
        column = index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            return row.texts[column]
        if role == Qt.ItemDataRole.ToolTipRole and column < len(row.tooltips):
            return row.tooltips[column]
        if role == Qt.ItemDataRole.TextAlignmentRole and column in self._right:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if role == ITEM_ROLE:
            return row.item
        return None
