"""Fit badges in tables: a keyed table whose last column is a badge, and the pill that paints it."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, QRectF, QSize, Qt
from PySide6.QtGui import QColor, QPainter, QPen
from PySide6.QtWidgets import (
    QStyle,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QTableView,
    QWidget,
)

from roundhouse.gui.theme.roles import role_hex
from roundhouse.gui.widgets.keyed_table_model import KeyedTableModel
from roundhouse.gui.widgets.models_words import Badge, Tone

AnyIndex = QModelIndex | QPersistentModelIndex
TONE_ROLE = Qt.ItemDataRole.UserRole + 2
# Each tone's colour roles (fill, border, text), looked up in the theme in force as a pill
# is painted: the badge's words say the same, colour is never alone.
TONE_ROLES: dict[Tone, str] = {
    Tone.GOOD: "success",
    Tone.WARN: "warning",
    Tone.BAD: "danger",
    Tone.UNKNOWN: "neutral",
    Tone.NEUTRAL: "neutral",
}


def tone_colours(tone: Tone) -> tuple[str, str, str]:
    """(fill, border, text) of `tone` in the theme in force."""
    role = TONE_ROLES.get(tone, "neutral")
    return tuple(role_hex(f"{role}_{part}") for part in ("fill", "border", "text"))  # type: ignore[return-value]


class BadgeTableModel(KeyedTableModel):
    """A KeyedTableModel whose `badge_column` shows the badge set for each row's key."""

    def __init__(
        self,
        headers: tuple[str, ...],
        right_aligned: frozenset[int] = frozenset(),
        parent: Any = None,
    ) -> None:
        super().__init__(headers, right_aligned, parent)
        self.badge_column = len(headers) - 1
        self._badges: dict[str, Badge] = {}

    def set_badge(self, key: str, badge: Badge | None) -> None:
        """Show `badge` in the row of `key` (None: an empty cell)."""
        if self._badges.get(key) == badge:
            return
        if badge is None:
            del self._badges[key]
        else:
            self._badges[key] = badge
        row = self.row_of(key)
        if row is not None:
            cell = self.index(row, self.badge_column)
            self.dataChanged.emit(cell, cell)

    def badge(self, key: str) -> Badge | None:
        return self._badges.get(key)

    def badge_texts(self) -> dict[str, str]:
        """Each row's badge as shown: for tests and the screenshots."""
        return {key: badge.text for key in self.keys() if (badge := self._badges.get(key))}

    def clear_badges(self) -> None:
        self._badges.clear()
        if self.rowCount():
            column = self.badge_column
            self.dataChanged.emit(self.index(0, column), self.index(self.rowCount() - 1, column))

    def data(self, index: AnyIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or index.column() != self.badge_column:
            return super().data(index, role)
        if index.row() >= self.rowCount():
            return None
        badge = self._badges.get(self.row(index.row()).key)
        if role == Qt.ItemDataRole.DisplayRole:
            return badge.text if badge else ""
        if role == Qt.ItemDataRole.ToolTipRole:
            return badge.tooltip if badge else None
        if role == TONE_ROLE:
            return badge.tone.value if badge else None
        return super().data(index, role)


class BadgeDelegate(QStyledItemDelegate):
    """Paints the cell's text as a rounded pill in its tone's colours."""

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index: AnyIndex) -> None:
        text = index.data(Qt.ItemDataRole.DisplayRole)
        tone = index.data(TONE_ROLE)
        if not text or tone is None:
            super().paint(painter, option, index)
            return
        widget = option.widget
        style = widget.style() if isinstance(widget, QWidget) else None
        if style is not None:
            # The row's selection and alternate colours, without the text.
            plain = QStyleOptionViewItem(option)
            self.initStyleOption(plain, index)
            plain.text = ""
            style.drawControl(QStyle.ControlElement.CE_ItemViewItem, plain, painter, widget)
        fill, border, ink = tone_colours(Tone(tone))
        metrics = option.fontMetrics
        rect = option.rect
        width = min(metrics.horizontalAdvance(text) + 16, rect.width() - 6)
        height = min(metrics.height() + 4, rect.height() - 4)
        pill = QRectF(rect.x() + 3, rect.y() + (rect.height() - height) / 2, width, height)
        painter.save()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setPen(QPen(QColor(border), 1))
        painter.setBrush(QColor(fill))
        painter.drawRoundedRect(pill, height / 2, height / 2)
        painter.setPen(QColor(ink))
        painter.drawText(pill, Qt.AlignmentFlag.AlignCenter, text)
        painter.restore()

    def sizeHint(self, option: QStyleOptionViewItem, index: AnyIndex) -> QSize:
        hint = super().sizeHint(option, index)
        return QSize(hint.width() + 20, hint.height())


def visible_rows(view: QTableView) -> range:
    """The rows on screen now (none while the view is hidden)."""
    count = view.model().rowCount()
    if not count or not view.isVisible():
        return range(0)
    top = max(0, view.rowAt(0))
    bottom = view.rowAt(view.viewport().height() - 1)
    return range(top, (count - 1 if bottom < 0 else bottom) + 1)
