"""One line naming the active model, with a Model ▾ menu to choose another."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QToolButton, QWidget

from roundhouse.gui.active_model import ActiveModel
from roundhouse.gui.widgets.active_model_menu import ActiveModelMenu

NO_MODEL_TEXT = (
    "No model is active. Choose one with Model ▾, in the tray's Active model menu, "
    'or on the <a href="chat">chat page</a>.'
)


class ActiveModelLine(QWidget):
    """Asks for the chat page (its link) or the Engines page (no model to choose yet)."""

    chat_page_requested = Signal()
    engines_page_requested = Signal()

    def __init__(self, active_model: ActiveModel, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._active = active_model
        self.label = QLabel()
        self.label.setObjectName("hint")
        self.label.setWordWrap(True)
        self.label.linkActivated.connect(lambda _: self.chat_page_requested.emit())
        self.button = QToolButton()
        # The words say "Model ▾"; the style's own indicator would sit in the text's corner.
        self.button.setText("Model ▾")
        self.button.setStyleSheet("QToolButton::menu-indicator { image: none; width: 0px; }")
        self.button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        self.menu = ActiveModelMenu(active_model, self.button)
        self.menu.aboutToShow.connect(self.menu.fill)
        self.menu.chosen.connect(active_model.choose)
        self.menu.engines_requested.connect(self.engines_page_requested)
        self.button.setMenu(self.menu)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.label, 1)
        layout.addWidget(self.button)
        active_model.changed.connect(self.update_text)
        self.update_text()

    def update_text(self) -> None:
        if self._active.active:
            self.label.setText(f"Model: {self._active.describe()}")
        else:
            self.label.setText(NO_MODEL_TEXT if self._active.loaded else "Model: …")
