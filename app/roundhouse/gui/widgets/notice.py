"""A notice inside a page: a sentence (or a heading and lines) in the colours of what it
means, and the buttons that act on it."""

from __future__ import annotations

import html
from typing import Literal

from PySide6.QtWidgets import QFrame, QVBoxLayout, QWidget

from roundhouse.gui.widgets.message_panel import MessagePanel

# What a notice says: something to know or do (blue), a warning (amber: a benchmark whose
# requests failed), a problem (red: search with no connection). Colours in app.qss.
Tone = Literal["info", "warning", "problem"]


class Notice(MessagePanel):
    """Hidden until `show_text` or `show_lines`; `tone` sets its colours."""

    def __init__(self, *, tone: Tone = "info", parent: QWidget | None = None) -> None:
        super().__init__(centred_buttons=False, parent=parent)
        self.setObjectName("notice")
        self.setProperty("tone", tone)
        self.setFrameShape(QFrame.Shape.StyledPanel)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(12, 8, 12, 8)
        layout.addWidget(self.message_label)
        layout.addLayout(self.buttons)

    def show_lines(self, heading: str, lines: list[str]) -> None:
        """A bold heading, then a line each."""
        body = "".join(f"<br>{html.escape(line)}" for line in lines)
        self.message_label.setText(f"<b>{html.escape(heading)}</b>{body}")
        self.message_label.setToolTip("")
        self.show()
