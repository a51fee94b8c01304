"""A titled box of "label: value" rows, created on first use and hidden when unknown."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFormLayout, QGroupBox, QLabel, QWidget


class FormSection(QGroupBox):
    """Rows keep their order of first use; a value of None hides the row."""

    def __init__(self, title: str, parent: QWidget | None = None) -> None:
        super().__init__(title, parent)
        self._form = QFormLayout(self)
        self._form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        self._values: dict[str, QLabel] = {}
        self._text: QLabel | None = None

    def set_value(
        self, label: str, value: str | None, *, wrap: bool = True, live: str | None = None
    ) -> None:
        """Show a row. `live` is for short values that change often (readings): the widest
        text expected, e.g. "888.8 GiB of 888.8 GiB (100 %)". The row then keeps a fixed
        size, so a new reading repaints the label alone: a label whose size may change asks
        the whole window to lay out again (every page measured), once a second."""
        field = self._values.get(label)
        if field is None:
            field = QLabel()
            field.setWordWrap(wrap and live is None)
            field.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            if live is not None:
                metrics = field.fontMetrics()
                field.setFixedSize(metrics.horizontalAdvance(live) + 4, field.sizeHint().height())
            self._form.addRow(f"{label}:", field)
            self._values[label] = field
        field.setText(value or "")
        self._form.setRowVisible(field, value is not None)

    def value(self, label: str) -> str | None:
        """The shown text of a row; None when the row is absent or hidden."""
        field = self._values.get(label)
        if field is None or not self._form.isRowVisible(field):
            return None
        return field.text()

    def set_text(self, html: str) -> None:
        """A paragraph across the whole box, below the rows (the caller escapes it)."""
        if self._text is None:
            self._text = QLabel()
            self._text.setWordWrap(True)
            self._text.setTextFormat(Qt.TextFormat.RichText)
            self._text.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            self._form.addRow(self._text)
        self._text.setText(html)

    def text(self) -> str:
        return self._text.text() if self._text is not None else ""
