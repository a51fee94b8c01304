"""An empty state: an icon, a sentence that says why there is nothing and what to do, and
the buttons that do it (the same API as a Notice, so either can stand in a page)."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QEvent, Qt
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from roundhouse.gui.icons import ui_icon
from roundhouse.gui.theme.manager import current_scheme
from roundhouse.gui.theme.tokens import SPACE_L, SPACE_XL

ICON_PX = 40


class EmptyState(QFrame):
    """Hidden until `show_text`; `icon` is one of resources/icons/ui (Lucide's names)."""

    def __init__(self, icon: str = "inbox", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("emptyState")
        self._icon = icon
        self.icon_label = QLabel()
        self.icon_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.message_label = QLabel()
        self.message_label.setObjectName("emptyStateText")
        self.message_label.setWordWrap(True)
        self.message_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.message_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self._buttons = QHBoxLayout()
        self._buttons.setContentsMargins(0, 0, 0, 0)
        self._buttons.addStretch(1)
        self._buttons.addStretch(1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(SPACE_XL, SPACE_XL, SPACE_XL, SPACE_XL)
        layout.setSpacing(SPACE_L)
        layout.addWidget(self.icon_label)
        layout.addWidget(self.message_label)
        layout.addLayout(self._buttons)
        self._draw_icon()
        self.hide()

    def add_action(self, text: str, slot: Callable[[], object]) -> QPushButton:
        """A button under the sentence, in the order added, the row centred."""
        button = QPushButton(text)
        button.clicked.connect(lambda: slot())
        self._buttons.insertWidget(self._buttons.count() - 1, button)
        return button

    def show_text(self, text: str, tooltip: str = "") -> None:
        self.message_label.setText(text)
        self.message_label.setToolTip(tooltip)
        self.show()

    def text(self) -> str:
        return self.message_label.text()

    def _draw_icon(self) -> None:
        icon = ui_icon(self._icon, current_scheme())
        # The disabled mode's colour: an illustration, quieter than the sentence.
        self.icon_label.setPixmap(icon.pixmap(ICON_PX, ICON_PX, icon.Mode.Disabled))

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange:
            self._draw_icon()
