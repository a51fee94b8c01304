"""A status badge: a rounded label in its tone's colours, with the words and an optional
icon, so a state is never told by colour alone."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QSize, Qt
from PySide6.QtWidgets import QApplication, QFrame, QHBoxLayout, QLabel, QWidget

from roundhouse.gui.icons import tone_icon

# The tones app.qss colours: good (green), warn (amber), bad (red), info (blue), neutral
# and unknown (grey).
TONES = ("good", "warn", "bad", "info", "neutral", "unknown")
ICON_PX = 14


class Badge(QFrame):
    """`set(tone, text)`; the icon is the tone's own unless `icon` names another."""

    def __init__(
        self,
        tone: str = "neutral",
        text: str = "",
        *,
        icon: str | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setObjectName("badge")
        self.icon_label = QLabel()
        self.icon_label.setFixedSize(QSize(ICON_PX, ICON_PX))
        self.text_label = QLabel()
        self.text_label.setTextInteractionFlags(Qt.TextInteractionFlag.NoTextInteraction)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(6, 1, 8, 1)
        layout.setSpacing(4)
        layout.addWidget(self.icon_label)
        layout.addWidget(self.text_label)
        self._icon: str | None = icon
        self.tone = ""
        self.set(tone, text, icon=icon)

    def set(self, tone: str, text: str, *, icon: str | None = None) -> None:
        if tone not in TONES:
            raise ValueError(f"a badge's tone is one of {', '.join(TONES)}, not {tone!r}")
        self.text_label.setText(text)
        self.setAccessibleName(text)
        self._icon = icon
        if tone != self.tone:
            self.tone = tone
            self.setProperty("tone", tone)
            # A dynamic property's new value reaches the stylesheet only when polished again.
            style = self.style()
            for widget in (self, self.text_label):
                style.unpolish(widget)
                style.polish(widget)
        self._draw_icon()

    def text(self) -> str:
        return self.text_label.text()

    def _draw_icon(self) -> None:
        pixmap = tone_icon(self.tone, self.text_label.palette(), self._icon).pixmap(
            ICON_PX, ICON_PX
        )
        self.icon_label.setPixmap(pixmap)
        self.icon_label.setVisible(not pixmap.isNull())

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        # The theme changed: the icon is drawn in the text's colour of the new scheme.
        if event.type() == QEvent.Type.PaletteChange and QApplication.instance() is not None:
            self._draw_icon()
