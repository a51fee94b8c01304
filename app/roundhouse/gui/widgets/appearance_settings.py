"""The Appearance section of the Settings page: the theme, applied and saved at once."""

from __future__ import annotations

from PySide6.QtWidgets import QApplication, QComboBox, QFormLayout, QGroupBox, QLabel, QWidget

from roundhouse.api.settings import ThemeChoice, UiSettings
from roundhouse.gui.calls.settings import patch_settings, with_ui
from roundhouse.gui.daemon_bridge import DaemonBridge
from roundhouse.gui.theme.manager import theme_manager

THEME_LABELS = {
    ThemeChoice.SYSTEM: "Follow the system",
    ThemeChoice.LIGHT: "Light",
    ThemeChoice.DARK: "Dark",
}
THEME_HINT = (
    "Follow the system switches between light and dark as your desktop does. The change "
    "shows at once on every page and is kept for the next start."
)


class AppearanceSection(QGroupBox):
    """Not part of the page's Save: like the tray's switches, a pick is saved as it is made."""

    def __init__(self, bridge: DaemonBridge, parent: QWidget | None = None) -> None:
        super().__init__("Appearance", parent)
        self._bridge = bridge
        self.theme = QComboBox()
        self.theme.setAccessibleName("Theme")
        for choice, label in THEME_LABELS.items():
            self.theme.addItem(label, choice.value)
        hint = QLabel(THEME_HINT)
        hint.setObjectName("hint")
        hint.setWordWrap(True)
        self.error = QLabel()
        self.error.setObjectName("formProblem")
        self.error.setWordWrap(True)
        self.error.hide()
        layout = QFormLayout(self)
        layout.addRow("Theme", self.theme)
        layout.addRow(hint)
        layout.addRow(self.error)
        app = QApplication.instance()
        assert isinstance(app, QApplication)
        self._manager = theme_manager(app)
        self._show(ThemeChoice(self._manager.choice))
        self.theme.activated.connect(self._on_activated)
        bridge.ui_settings_changed.connect(self._on_ui_settings_changed)

    def choose(self, choice: ThemeChoice) -> None:
        """What a pick in the box does: apply now, then save in the daemon's settings."""
        self._show(choice)
        self.error.hide()
        self._manager.set_choice(choice)
        call = patch_settings(self._bridge, "change the theme", with_ui(theme=choice))
        call.failed.connect(self._on_failed)

    def _on_activated(self, index: int) -> None:
        self.choose(ThemeChoice(self.theme.itemData(index)))

    def _on_failed(self, failure: object) -> None:
        self.error.setText(f"The theme is used now but was not saved: {failure}")
        self.error.show()

    def _on_ui_settings_changed(self, ui: UiSettings) -> None:
        self._show(ui.theme)

    def _show(self, choice: ThemeChoice) -> None:
        self.theme.setCurrentIndex(self.theme.findData(choice.value))
