"""Opens the first-run guide: by itself once, on the first launch, and from the menus.

Light on purpose (QtCore only): the app builds it before its first paint, and the wizard's
modules load when the guide first opens.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, QTimer

from roundhouse.api.settings import UiSettings

if TYPE_CHECKING:
    from roundhouse.gui.daemon_bridge import DaemonBridge
    from roundhouse.gui.first_run.wizard import FirstRunWizard
    from roundhouse.gui.main_window import MainWindow


class FirstRunLauncher(QObject):
    def __init__(
        self,
        bridge: DaemonBridge,
        window: MainWindow,
        *,
        automatic: bool,
        ctx_size: int | None = None,
        max_tokens: int = 256,
    ) -> None:
        super().__init__()
        self._bridge = bridge
        self._window = window
        self._ctx_size = ctx_size
        self._max_tokens = max_tokens
        self.wizard: FirstRunWizard | None = None
        # Offered once per run of the app: the settings arrive again after every change.
        self._offered = not automatic
        bridge.ui_settings_changed.connect(self._on_ui_settings_changed)

    def open(self) -> FirstRunWizard:
        """Show the guide (a fresh one when the last was finished or skipped)."""
        from roundhouse.gui.first_run.wizard import FirstRunWizard

        self._offered = True
        if self.wizard is None or self.wizard.finish_call is not None:
            if self.wizard is not None:
                self.wizard.deleteLater()
            self.wizard = FirstRunWizard(
                self._bridge, self._window, ctx_size=self._ctx_size, max_tokens=self._max_tokens
            )
            self.wizard.done_with.connect(self._on_wizard_done)
        # Not exec(): a nested event loop would stop qasync (STYLE.md); the window stays usable.
        self.wizard.show()
        self.wizard.raise_()
        self.wizard.activateWindow()
        return self.wizard

    def _on_ui_settings_changed(self, ui: UiSettings) -> None:
        if self._offered or ui.first_run_done:
            return
        self._offered = True
        # After the connection's own work: the window and its pages paint first.
        QTimer.singleShot(0, self.open)

    def _on_wizard_done(self, finished: bool) -> None:
        if finished:
            self._window.show_chat()
