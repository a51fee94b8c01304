"""The Desktop app section of the Settings page: keep serving when windows close, start at
login. Saved with the page; the tray's switches change the same two settings at once."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QCheckBox, QGroupBox, QLabel, QVBoxLayout, QWidget

from roundhouse.api.settings import UiSettings

KEEP_SERVING_HINT = (
    "Closing the last window (or quitting without being asked) leaves the daemon and its "
    "engines serving other apps; off, they stop with the app."
)
START_AT_LOGIN_HINT = (
    "Opens Roundhouse in the tray when you log in, its window closed. The daemon writes the "
    "entry your system reads at login (an autostart file on Linux, a LaunchAgent on macOS, a "
    "Run value in the registry on Windows) and removes it when this is off."
)


def _hint(text: str) -> QLabel:
    label = QLabel(text)
    label.setWordWrap(True)
    label.setObjectName("hint")
    return label


class DesktopSettingsSection(QGroupBox):
    """Two switches of the `ui` settings; `changed()` when the user flips one."""

    changed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Desktop app", parent)
        self.keep_serving = QCheckBox("Keep serving when windows close")
        self.start_at_login = QCheckBox("Start at login")
        layout = QVBoxLayout(self)
        layout.addWidget(self.keep_serving)
        layout.addWidget(_hint(KEEP_SERVING_HINT))
        layout.addWidget(self.start_at_login)
        layout.addWidget(_hint(START_AT_LOGIN_HINT))
        self.keep_serving.toggled.connect(self._on_toggled)
        self.start_at_login.toggled.connect(self._on_toggled)

    def show_settings(self, ui: UiSettings) -> None:
        for box, value in (
            (self.keep_serving, ui.keep_serving_on_close),
            (self.start_at_login, ui.start_at_login),
        ):
            box.blockSignals(True)
            box.setChecked(value)
            box.blockSignals(False)

    def form(self, ui: UiSettings) -> UiSettings:
        """`ui` with the two switches as the form has them."""
        return ui.model_copy(
            update={
                "keep_serving_on_close": self.keep_serving.isChecked(),
                "start_at_login": self.start_at_login.isChecked(),
            }
        )

    def _on_toggled(self, *_: Any) -> None:
        self.changed.emit()
