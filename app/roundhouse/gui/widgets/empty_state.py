"""An empty state: an icon, a sentence that says why there is nothing and what to do, and
the buttons that do it (a MessagePanel, as a Notice is, so either can stand in a page)."""

from __future__ import annotations

from PySide6.QtCore import QEvent, Qt
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from roundhouse.gui.icons import ui_icon
from roundhouse.gui.theme.manager import current_scheme
from roundhouse.gui.theme.tokens import SPACE_L, SPACE_XL
from roundhouse.gui.widgets.message_panel import MessagePanel

ICON_PX = 40


class EmptyState(MessagePanel):
    """Hidden until `show_text`; `icon` is one of resources/icons/ui (Lucide's names)."""

    def __init__(self, icon: str = "inbox", parent: QWidget | None = None) -> None:
        super().__init__(centred_buttons=True, parent=parent)
        self.setObjectName("emptyState")
        self._icon = icon
        self.icon_label = QLabel()
        self.icon_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.message_label.setObjectName("emptyStateText")
        self.message_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(SPACE_XL, SPACE_XL, SPACE_XL, SPACE_XL)
        layout.setSpacing(SPACE_L)
        layout.addWidget(self.icon_label)
        layout.addWidget(self.message_label)
        layout.addLayout(self.buttons)
        self._draw_icon()

    def _draw_icon(self) -> None:
        icon = ui_icon(self._icon, current_scheme())
        # The disabled mode's colour: an illustration, quieter than the sentence.
        self.icon_label.setPixmap(icon.pixmap(ICON_PX, ICON_PX, icon.Mode.Disabled))

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange:
            self._draw_icon()
